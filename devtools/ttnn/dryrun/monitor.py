"""What the dry run records around each real ttnn call (runs in the side venv, server.py).

Rejections: any exception the library raises (its TT_FATAL / TT_THROW text, the engine's call
site, the argument specs).

Hazards (accepted by the library, wrong on hardware):
- freeing an op result that is its input itself (a full-range `slice`, a no-op `to_layout`, a
  one-tensor `concat` return the input tensor: same tensor id): the caller's tensor goes too.
- use after free: in ttnn 0.81.1 `reshape` returns a view sharing its input's device buffer,
  a full-range `slice` returns a tensor on its input's buffer, and `deallocate(t)` defaults to
  force=True, which frees the buffer under every other tensor sharing it. Those tensors still
  report is_allocated(); their memory goes to the next allocation. Tensors are tracked by
  (buffer type, address); a forced deallocate marks every other live tensor on that buffer
  freed, and passing one to any op is reported. (force=False leaves the co-owners intact;
  deallocating an already freed tensor is a no-op, as in the library.)
- allocation while a trace exists (DRAM/L1 bytes grew outside a capture with a live trace: the
  replay may overwrite that memory), host I/O inside a capture, a program-cache miss inside a
  capture (the warm-up did not compile that program).

Budgets: real programs per traced forward (tt-metal's graph capture of the trace body, its
'program_execution' nodes), the largest per-core circular-buffer total of one program in the
eager warm-up (where programs are created), and the peak DRAM / L1 buffer bytes the allocator
held (memory views after each call).

Op records (Monitor(op_records=True), the cost estimate's input: benchmarks/ttnn_estimate.py):
inside a trace capture every call runs under its own graph capture, and op_records.py reads the
device operations it ran from that graph, tagged with the engine's call stack; the cores each op
runs on come from the circular buffers of the eager warm-up's graph (program-cache misses).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from devtools.ttnn.dryrun import op_records as op_records_mod

HOST_IO = {'ttnn.from_torch', 'ttnn.to_torch', 'ttnn.to_device', 'ttnn.from_device',
           'ttnn.copy_host_to_device_tensor', 'ttnn.copy_device_to_host_tensor',
           'ttnn.synchronize_device', 'ttnn.as_tensor'}


@dataclass
class Tracked:
    obj: object
    key: tuple                  # (buffer type, address)
    made_by: str
    made_at: str
    refs: int = 1
    freed: tuple | None = None  # (freed at site, via the tensor made at site)
    twin: object = None         # Tracked of the input this op result IS (same tensor id)


@dataclass
class EmulatedTrace:
    """Stands for a MeshTraceId: capture is emulated (the body ran eagerly, see server.py)."""

    number: int
    state: str = 'capturing'    # -> 'live' -> 'released'
    programs: int = 0
    phase: str = ''
    programs_by_op: dict = field(default_factory=dict)   # top-level op -> [calls, programs]
    ops: list = field(default_factory=list)   # op_records.extract records (op_records=True)


@dataclass
class Monitor:
    ttnn: object
    op_records: bool = False    # per-call graphs inside trace captures -> EmulatedTrace.ops
    records: list = field(default_factory=list)
    calls: dict = field(default_factory=dict)     # qualified op name -> calls the library took
    phase: str = 'setup'
    tracked: dict = field(default_factory=dict)     # id(tensor) -> Tracked
    traces: list = field(default_factory=list)
    capturing: EmulatedTrace | None = None
    device: object = None
    peak: dict = field(default_factory=lambda: {'DRAM': 0, 'L1': 0})
    peak_phase: dict = field(default_factory=dict)
    cb_peak: dict = field(default_factory=dict)   # phase -> circular-buffer peak per core
    _seen: set = field(default_factory=set)
    _cache_entries: int = 0
    _warmup_graph: bool = False
    _call_graphs: list = field(default_factory=list)
    _known_cores: dict = field(default_factory=dict)   # op signature -> cores (warm-up CBs)

    # -- bookkeeping --------------------------------------------------------------------------
    def set_phase(self, name: str) -> None:
        """Enter a phase; 'prepare ...' phases record the eager warm-up's graph.

        Program-cache misses allocate circular buffers there; the trace body's cache hits do not.
        """
        self._end_warmup_graph()
        self.phase = name
        if name.startswith('prepare') and self.device is not None:
            self.ttnn._ttnn.graph.begin_graph_capture(self.ttnn._ttnn.graph.RunMode.NORMAL)
            self._warmup_graph = True

    def _end_warmup_graph(self) -> None:
        if self._warmup_graph:
            self._warmup_graph = False
            graph = self.ttnn._ttnn.graph.end_graph_capture()
            self.cb_peak[self.phase] = max(self.cb_peak.get(self.phase, 0),
                                           cb_peak_per_core(graph))
            if self.op_records:     # the trace body hits the program cache: no CBs recorded
                self._known_cores.update(op_records_mod.cores_by_signature(graph))

    def _key(self, t):
        ttnn = self.ttnn
        try:
            if t.storage_type() != ttnn.StorageType.DEVICE or not t.is_allocated():
                return None
            return (str(t.memory_config().buffer_type), t.buffer_address())
        except Exception:
            return None

    def adopt(self, t, made_by: str, made_at: str = '?') -> None:
        tr = self.tracked.get(id(t))
        if tr is not None and tr.obj is t:
            tr.refs += 1
            return
        key = self._key(t)
        if key is not None:
            self.tracked[id(t)] = Tracked(t, key, made_by, made_at)

    def forget(self, t) -> None:
        tr = self.tracked.get(id(t))
        if tr is not None and tr.obj is t:
            tr.refs -= 1
            if tr.refs <= 0:
                del self.tracked[id(t)]

    def _co_owners(self, tr):
        return [o for o in self.tracked.values()
                if o is not tr and o.freed is None and o.key == tr.key]

    def _record(self, kind, op, site, error, args, kwargs, dedupe=None):
        if dedupe is not None:
            if dedupe in self._seen:
                return
            self._seen.add(dedupe)
        self.records.append({'kind': kind, 'phase': self.phase, 'op': op, 'site': site,
                             'error': error, 'args': [self._spec(a) for a in args],
                             'kwargs': {k: self._spec(v) for k, v in kwargs.items()}})

    def _spec(self, v):
        ttnn = self.ttnn
        if isinstance(v, ttnn.Tensor):
            try:
                d = {'shape': list(v.shape), 'padded': list(v.padded_shape),
                     'dtype': v.dtype.name, 'layout': v.layout.name}
                if v.storage_type() == ttnn.StorageType.DEVICE:
                    d['allocated'] = bool(v.is_allocated())
                    if v.is_allocated():
                        d['buffer'] = f'{v.memory_config().buffer_type}@{v.buffer_address()}'
                return d
            except Exception as e:
                return f'<tensor: {e}>'
        if isinstance(v, (list, tuple)):
            return [self._spec(x) for x in v]
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        r = repr(v)
        return r if len(r) < 200 else r[:200] + '...'

    @staticmethod
    def _flat(args, kwargs):
        for v in list(args) + list(kwargs.values()):
            if isinstance(v, (list, tuple)):
                yield from v
            else:
                yield v

    # -- the call -----------------------------------------------------------------------------
    def call(self, qual, fn, args, kwargs, site, stack=None):
        ttnn = self.ttnn
        self.calls[qual] = self.calls.get(qual, 0) + 1
        if self.capturing is not None and qual in HOST_IO and not (
                qual in ('ttnn.from_torch', 'ttnn.as_tensor') and kwargs.get('device') is None):
            self._record('hazard', qual, site, 'host I/O inside a trace capture (the library '
                         'refuses it on a device: no reads/writes while capturing)', args,
                         kwargs, ('capture-io', qual, site))
        if qual == 'ttnn.deallocate':
            self._deallocate(args, kwargs, site)
        else:
            for a in self._flat(args, kwargs):
                tr = self.tracked.get(id(a))
                if tr is not None and tr.obj is a and tr.freed is not None:
                    freed_at, via = tr.freed
                    self._record('hazard', qual, site,
                                 f'use after free: this argument (made by {tr.made_by} at '
                                 f'{tr.made_at}) shares its device buffer with the tensor made '
                                 f'at {via}, which ttnn.deallocate (force=True, the default) '
                                 f'freed at {freed_at}; the buffer may already hold another '
                                 'tensor', args, kwargs, ('uaf', tr.made_at, freed_at, site))
        before = self._allocated() if self._live_traces() and self.capturing is None else None
        try:
            out = self._invoke(qual, fn, args, kwargs, stack or [site])
        except Exception as e:
            self._record('rejected', qual, site, error_text(e), args, kwargs)
            raise
        if qual in ('ttnn.open_device', 'ttnn.open_mesh_device'):
            self.device = out
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o in self._flat(outs, {}):
            if isinstance(o, ttnn.Tensor):
                self._note_output(o, qual, site, args, kwargs)
        now = self._sample()
        if before is not None and now is not None:
            grew = {k: now[k] - before[k] for k in now if now[k] > before[k]}
            if grew:
                self._record('hazard', qual, site, f'device memory allocated while a trace '
                             f'exists ({grew} bytes): a replay may overwrite it', args, kwargs,
                             ('alloc-in-trace', qual, site))
        return out

    def _invoke(self, qual, fn, args, kwargs, stack):
        """fn(*args, **kwargs); inside a capture with op_records, under its own graph capture."""
        trace = self.capturing
        if trace is None or not self.op_records or qual.endswith('_trace_capture'):
            return fn(*args, **kwargs)
        graph_api = self.ttnn._ttnn.graph
        graph_api.begin_graph_capture(graph_api.RunMode.NORMAL)
        try:
            out = fn(*args, **kwargs)
        finally:
            graph = graph_api.end_graph_capture()
            self._call_graphs.append(graph)
        trace.ops.extend(op_records_mod.extract(graph, qual, stack, self._known_cores))
        return out

    def _note_output(self, o, qual, site, args, kwargs):
        key = self._key(o)
        if key is None:
            return
        tr = self.tracked.get(id(o))
        if tr is not None and tr.obj is o:
            return          # the op returned one of its inputs itself
        inputs = [a for a in self._flat(args, kwargs)
                  if isinstance(a, self.ttnn.Tensor) and self._key(a) == key]
        twins = [self.tracked.get(id(a)) for a in inputs if a.tensor_id == o.tensor_id]
        made_by = qual + (' (its input itself)' if twins else
                          ' (a view on its input\'s buffer)' if inputs else '')
        self.tracked[id(o)] = Tracked(o, key, made_by, site, refs=0,
                                      twin=twins[0] if twins else None)

    def _deallocate(self, args, kwargs, site):
        if not args:
            return
        t = args[0]
        force = kwargs.get('force', args[1] if len(args) > 1 else True)
        tr = self.tracked.get(id(t))
        if tr is None or tr.obj is not t or tr.freed is not None:
            return
        if force:
            for o in self._co_owners(tr):
                if o.twin is tr or tr.twin is o:
                    self._record('hazard', 'ttnn.deallocate', site,
                                 f'frees a tensor that is also the tensor made at {o.made_at} '
                                 f'({o.made_by}): an op returned its input itself and this '
                                 'deallocate frees both', args, kwargs,
                                 ('free-twin', site, o.made_at))
                o.freed = (site, tr.made_at)
        tr.key = ('deallocated', id(t))

    # -- traces (emulated) --------------------------------------------------------------------
    def _live_traces(self):
        return [t for t in self.traces if t.state == 'live']

    def begin_trace_capture(self, device, *, cq_id=None):
        if self.capturing is not None:
            raise RuntimeError('dry run: begin_trace_capture while a capture is open')
        self._end_warmup_graph()
        tr = EmulatedTrace(len(self.traces) + 1, phase=self.phase)
        self.traces.append(tr)
        self.capturing = tr
        self._cache_entries = device.num_program_cache_entries()
        if self.op_records:
            self._call_graphs = []      # one graph per call (_invoke) instead of one in all
        else:
            self.ttnn._ttnn.graph.begin_graph_capture(self.ttnn._ttnn.graph.RunMode.NORMAL)
        return tr

    def end_trace_capture(self, device, trace_id, *, cq_id=None):
        if self.op_records:
            graph = [n for g in self._call_graphs for n in g]
            self._call_graphs = []
        else:
            graph = self.ttnn._ttnn.graph.end_graph_capture()
        if trace_id is not self.capturing:
            raise RuntimeError('dry run: end_trace_capture of a trace that is not capturing')
        trace_id.programs = sum(1 for n in graph if n.get('node_type') == 'program_execution')
        trace_id.programs_by_op = programs_by_op(graph)
        misses = device.num_program_cache_entries() - self._cache_entries
        if misses > 0:
            self._record('hazard', 'ttnn.end_trace_capture', trace_id.phase,
                         f'{misses} program(s) compiled inside the capture: the eager warm-up '
                         'did not run them (the library refuses cache misses while capturing)',
                         [], {}, ('capture-miss', trace_id.phase))
        trace_id.state = 'live'
        self.capturing = None

    def execute_trace(self, device, trace_id, *, cq_id=None, blocking=True):
        if not isinstance(trace_id, EmulatedTrace) or trace_id.state != 'live':
            raise RuntimeError(f'TT_FATAL: execute_trace: trace {trace_id} is not a live trace')

    def release_trace(self, device, trace_id):
        if not isinstance(trace_id, EmulatedTrace) or trace_id.state != 'live':
            raise RuntimeError(f'TT_FATAL: release_trace: trace {trace_id} is not a live trace')
        trace_id.state = 'released'

    # -- memory -------------------------------------------------------------------------------
    def _allocated(self):
        if self.device is None:
            return None
        ttnn = self.ttnn
        out = {}
        try:
            for name, bt in (('DRAM', ttnn.BufferType.DRAM), ('L1', ttnn.BufferType.L1)):
                v = ttnn.get_memory_view(self.device, bt)
                out[name] = int(v.total_bytes_allocated_per_bank) * int(v.num_banks)
        except Exception:
            return None   # the device is closed
        return out

    def _sample(self):
        now = self._allocated()
        if now is not None:
            for k, v in now.items():
                self.peak[k] = max(self.peak[k], v)
                p = self.peak_phase.setdefault(self.phase, {'DRAM': 0, 'L1': 0})
                p[k] = max(p[k], v)
        return now

    def report(self) -> dict:
        self._end_warmup_graph()
        return {'records': self.records, 'calls': self.calls, 'peak_bytes': self.peak,
                'cb_peak_per_core_by_phase': self.cb_peak,
                'peak_bytes_by_phase': self.peak_phase,
                'traces': [{'number': t.number, 'phase': t.phase, 'state': t.state,
                            'programs': t.programs, 'programs_by_op': t.programs_by_op,
                            **({'ops': t.ops} if self.op_records else {})}
                           for t in self.traces]}


def cb_peak_per_core(graph) -> int:
    """Largest sum of one program's circular buffers on a core (bytes), from a captured graph.

    tt-metal allocates a program's circular buffers in every core of its range and frees them all
    before the next program ('circular_buffer_deallocate_all').
    """
    peak = cur = 0
    for n in graph:
        kind = n.get('node_type')
        if kind == 'circular_buffer_deallocate_all':
            cur = 0
        elif kind == 'circular_buffer_allocate':
            cur += int(n.get('params', {}).get('size', 0))
            peak = max(peak, cur)
    return peak


def programs_by_op(graph) -> dict:
    """{outermost op name: [calls, programs]} of a captured graph."""
    out: dict = {}
    depth, top = 0, None
    for n in graph:
        kind = n.get('node_type')
        if kind == 'function_start':
            if depth == 0:
                top = n.get('params', {}).get('name', '?')
                out.setdefault(top, [0, 0])[0] += 1
            depth += 1
        elif kind == 'function_end':
            depth -= 1
        elif kind == 'program_execution' and top is not None:
            out.setdefault(top, [0, 0])[1] += 1
    return out


def error_text(e: BaseException) -> str:
    text = '\n'.join(ln for ln in str(e).splitlines() if not ln.startswith(' --- '))
    return text.split('backtrace:')[0].strip()[:2000]
