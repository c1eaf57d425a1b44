"""Device, dispatch, program cache and trace semantics of the ttnn stand-in (docs/ttnn.md §2, §6).

- Grid: a p150a has 120 Tensix cores; with stock (Tensix) dispatch one column goes to dispatch,
  leaving 11x10; ETH dispatch leaves 12x10 — but only on a tt-metal with the ETH-dispatch patch.
  `set_eth_dispatch_patched(True)` emulates the patched build; by default the ETH open fails as
  the stock wheel does.
- Program cache: every op launch has a key; a miss while capturing raises (nothing may compile
  inside a capture).
- Trace: capture records ops without executing (outputs are NaN placeholders); execute replays
  the record on the current contents of the persistent inputs; host I/O inside a capture
  raises; allocating a device buffer while a trace exists raises (its intermediates are free
  memory to the allocator); closing with live traces or tensors raises.
- Command queues (queues.py): one by default; a device opened with num_command_queues=2 runs
  two, ordered only by events. Replays, uploads, device copies and non-blocking readbacks are
  queued; releasing a trace with a replay still queued raises.
"""
from __future__ import annotations

import gc
import inspect
import weakref

from .queues import CommandQueues, MeshEvent
from .types import CoreCoord, CoreGrid, DispatchCoreConfig, DispatchCoreType, MeshTraceId

# Command bytes per recorded op: the engine's own per-program budget (engines/ttnn/context.py
# TRACE_BYTES_PER_PROGRAM), so the stand-in fills the trace region as fast as the engine assumes
# (it records one op where the real library may run several programs: the real counts are
# checked by test/ttnn_dryrun). All live traces share the region.
TRACE_BYTES_PER_OP = 512 * 1024
_state = {'eth_patched': False}
_open_devices: dict[int, 'MeshDevice'] = {}


def set_eth_dispatch_patched(flag: bool) -> None:
    """Emulate a tt-metal build with patches/tt-metal-eth-dispatch.patch applied (test knob)."""
    _state['eth_patched'] = bool(flag)


class _Trace:
    def __init__(self, tid: int):
        self.tid = tid
        self.records: list = []
        self.done = False
        self._dead: list[list[int]] | None = None

    def dead_after(self, i: int) -> list[int]:
        """Ids of the values record `i` is the last to read or write: a replay drops them there.

        Replays keep only what is still to be read (a full-size forward's intermediates, all
        held, took ~10 GB); kept outputs live on in their tensors.
        """
        if self._dead is None:
            last: dict[int, int] = {}
            for j, (_, inputs, outputs) in enumerate(self.records):
                for t in (*inputs, *outputs):
                    last[t._id] = j
            self._dead = [[] for _ in self.records]
            for tid, j in last.items():
                self._dead[j].append(tid)
        return self._dead[i]


class MeshDevice:
    """A 1x1 mesh holding one emulated Blackhole p150a."""

    def __init__(self, device_id, l1_small_size, trace_region_size, dispatch_core_config,
                 num_command_queues: int = 1):
        self._id = int(device_id)
        self._queues = CommandQueues(num_command_queues)
        self.l1_small_size = int(l1_small_size)
        self.trace_region_size = int(trace_region_size)
        self.dispatch_core_config = dispatch_core_config
        self._is_open = True
        self._live: 'weakref.WeakValueDictionary[int, object]' = weakref.WeakValueDictionary()
        self._program_cache: set = set()
        self._misses_allowed = True
        self._capturing: _Trace | None = None
        self._traces: dict[int, _Trace] = {}
        self._next_tid = 1
        self.ops_launched = 0

    # -- queries ------------------------------------------------------------------------------
    def id(self) -> int:
        return self._id

    def arch(self) -> str:
        return 'Arch.BLACKHOLE'

    def compute_with_storage_grid_size(self) -> CoreCoord:
        eth = self.dispatch_core_config.type == DispatchCoreType.ETH
        return CoreCoord(12 if eth else 11, 10)

    @property
    def core_grid(self) -> CoreGrid:
        g = self.compute_with_storage_grid_size()
        return CoreGrid(x=g.x, y=g.y)

    def enable_program_cache(self) -> None:
        pass

    def num_program_cache_entries(self) -> int:
        return len(self._program_cache)

    def set_program_cache_misses_allowed(self, allowed: bool) -> None:
        self._misses_allowed = bool(allowed)

    def clear_program_cache(self) -> None:
        """Forget every compiled program (and, on the device, what they hold in L1_SMALL)."""
        if self._traces or self._capturing is not None:
            raise RuntimeError('stand-in: clear_program_cache with a live trace: its replay would '
                               'use programs (and their buffers) that are gone')
        self._program_cache.clear()

    # -- buffers ------------------------------------------------------------------------------
    def _register(self, t) -> None:
        if not self._is_open:
            raise RuntimeError('TT_FATAL: device is closed')
        if self._capturing is not None:
            t._trace_owned = True   # allocated inside the capture: an intermediate or output
        elif self._traces:
            raise RuntimeError(
                'Allocating device buffers is unsafe due to the existence of an active trace '
                f'(stand-in raises; {len(self._traces)} trace(s) live). Release traces first.')
        self._live[t._id] = t

    def _unregister(self, t) -> None:
        self._live.pop(t._id, None)

    def live_tensors(self) -> list:
        """Device tensors still allocated (kept trace outputs included)."""
        gc.collect()
        return [t for t in list(self._live.values())
                if t._value is not None and not t._buffer_freed()]

    # -- program cache / trace ------------------------------------------------------------------
    def _launch(self, key) -> None:
        if not self._is_open:
            raise RuntimeError('TT_FATAL: op launched on a closed device')
        self.ops_launched += 1
        if key in self._program_cache:
            return
        if self._capturing is not None:
            raise RuntimeError(f'TT_FATAL: program cache miss during trace capture: {key[0]} '
                               'was not run eagerly with these shapes before capture')
        if not self._misses_allowed:
            raise RuntimeError(f'TT_FATAL: program cache miss not allowed: {key[0]}')
        if self._traces:
            raise RuntimeError(f'stand-in: program cache miss while a trace exists: {key[0]} '
                               'would compile and allocate its kernel binary where a replay '
                               'writes its intermediates; run it once before the capture')
        self._program_cache.add(key)

    def _check_host_io(self, what: str) -> None:
        if self._capturing is not None:
            raise RuntimeError(f'TT_FATAL: {what}: host I/O (reads/writes) is not supported '
                               'during trace capture')


def open_device(*, device_id, l1_small_size=0, trace_region_size=0, dispatch_core_config=None,
                worker_l1_size=None):
    return _open(device_id, l1_small_size, trace_region_size, dispatch_core_config, 1)


def _open(device_id, l1_small_size, trace_region_size, dispatch_core_config, num_command_queues):
    if device_id in _open_devices:
        return _open_devices[device_id]
    if device_id != 0:
        raise RuntimeError(f'TT_FATAL: device_id {device_id} >= num_chips 1')
    cfg = dispatch_core_config if dispatch_core_config is not None else DispatchCoreConfig()
    if cfg.type == DispatchCoreType.ETH and not _state['eth_patched']:
        raise RuntimeError('TT_THROW: No core coordinate found at location: (0, 12, ETH, LOGICAL)')
    dev = MeshDevice(device_id, l1_small_size, trace_region_size, cfg, num_command_queues)
    _open_devices[device_id] = dev
    return dev


def open_mesh_device(mesh_shape=None, l1_small_size=0, trace_region_size=0,
                     num_command_queues=1, dispatch_core_config=None, offset=None,
                     physical_device_ids=[], worker_l1_size=0):  # noqa: B006 (ttnn's default)
    """A 1x1 mesh on physical device `physical_device_ids[0]` (0 when none is named)."""
    if mesh_shape is not None and tuple(mesh_shape) != (1, 1):
        raise RuntimeError(f'TT_FATAL: mesh shape {tuple(mesh_shape)} needs more devices than '
                           'the 1 available')
    if int(num_command_queues) not in (1, 2):
        raise RuntimeError(f'TT_FATAL: num_command_queues {num_command_queues} not in [1, 2]')
    dev_id = physical_device_ids[0] if physical_device_ids else 0
    return _open(dev_id, l1_small_size, trace_region_size, dispatch_core_config,
                 int(num_command_queues))


def close_device(device) -> None:
    if not device._is_open:
        return
    device._queues.drain()            # closing finishes the queued work first
    if device._traces:
        raise RuntimeError(f'stand-in: close_device with {len(device._traces)} live trace(s); '
                           'release_trace first')
    live = device.live_tensors()
    if live:
        raise RuntimeError(f'stand-in: close_device with {len(live)} live device tensor(s) '
                           f'(first: {live[0]!r}); deallocate them first')
    device._is_open = False
    _open_devices.pop(device._id, None)


def GetNumAvailableDevices() -> int:  # noqa: N802 (ttnn name)
    return 1


def close_mesh_device(mesh_device) -> None:
    close_device(mesh_device)


def synchronize_device(device, cq_id=None, sub_device_ids=()):
    device._check_host_io('synchronize_device')
    device._queues.drain(None if cq_id is None else device._queues.check(cq_id))


def begin_trace_capture(mesh_device, *, cq_id=None) -> MeshTraceId:
    if mesh_device._capturing is not None:
        raise RuntimeError('TT_FATAL: a trace capture is already in progress')
    tr = _Trace(mesh_device._next_tid)
    mesh_device._next_tid += 1
    mesh_device._capturing = tr
    return MeshTraceId(tr.tid)


def end_trace_capture(mesh_device, trace_id, *, cq_id=None) -> None:
    tr = mesh_device._capturing
    if tr is None or tr.tid != trace_id.value:
        raise RuntimeError(f'TT_FATAL: trace {trace_id} is not being captured')
    mesh_device._capturing = None
    size = len(tr.records) * TRACE_BYTES_PER_OP
    used = sum(len(t.records) for t in mesh_device._traces.values()) * TRACE_BYTES_PER_OP
    if used + size > mesh_device.trace_region_size:
        raise RuntimeError(f'TT_FATAL: Creating trace buffers of size {size}B on device 0, but '
                           f'only {mesh_device.trace_region_size - used}B is allocated for '
                           'trace region.')
    tr.done = True
    mesh_device._traces[tr.tid] = tr


def execute_trace(mesh_device, trace_id, *, cq_id=None, blocking=True) -> None:
    tr = mesh_device._traces.get(trace_id.value)
    if tr is None:
        raise RuntimeError(f'TT_FATAL: trace {trace_id} does not exist (released or never ended)')
    qs = mesh_device._queues
    cq = qs.check(cq_id)
    qs.issue(cq, ('run', lambda: _replay(tr, trace_id), trace_id.value))
    if blocking:
        qs.drain(cq)


def _replay(tr: _Trace, trace_id) -> None:
    env: dict[int, object] = {}   # values of the trace's own buffers during this replay
    for i, (fn, inputs, outputs) in enumerate(tr.records):
        datas = []
        for t in inputs:
            d = env.get(t._id, t._data)
            if d is None:
                raise RuntimeError(f'TT_FATAL: trace {trace_id} reads tensor {t._id}, which was '
                                   'deallocated after capture')
            datas.append(d)
        for out, value in zip(outputs, fn(datas)):
            env[out._id] = value
            if out._value is not None:     # kept outputs receive the new values
                out._data = value
        for tid in tr.dead_after(i):       # intermediates no later record reads
            env.pop(tid, None)


def release_trace(mesh_device, trace_id) -> None:
    if mesh_device._queues.holds(trace_id.value):
        raise RuntimeError(f'stand-in: release_trace({trace_id}) while a replay of it is still '
                           'queued; synchronize the device (or its event) first')
    tr = mesh_device._traces.pop(trace_id.value, None)
    if tr is None:
        raise RuntimeError(f'TT_FATAL: trace {trace_id} does not exist')
    tr.records.clear()


def record_event(mesh_device, cq_id=None, sub_device_ids=[], device_range=None):  # noqa: B006
    """An event done once every command issued to `cq_id` before it has run."""
    qs = mesh_device._queues
    ev = MeshEvent(qs.check(cq_id))
    ev._queues = qs
    qs.issue(ev.cq, ('record', ev))
    return ev


def wait_for_event(cq_id=None, mesh_event=None) -> None:
    """Queue `cq_id` runs nothing issued after this until `mesh_event` is done."""
    if mesh_event is None:
        raise TypeError('wait_for_event(): mesh_event is required')
    qs = mesh_event._queues
    qs.issue(qs.check(cq_id), ('wait', mesh_event))


# ttnn's own signature: a required mesh_event after a defaulted cq_id (pybind allows it)
wait_for_event.__signature__ = inspect.Signature(
    [inspect.Parameter('cq_id', inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
     inspect.Parameter('mesh_event', inspect.Parameter.POSITIONAL_OR_KEYWORD)],
    __validate_parameters__=False)


def event_synchronize(mesh_event) -> None:
    """Block the host until `mesh_event` is done (runs its queue that far)."""
    mesh_event._queues.run(mesh_event.cq, until=mesh_event)
