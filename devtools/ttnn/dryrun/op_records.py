"""Device-op records from a ttnn 0.81.1 graph capture (pure Python: runs in the side venv).

What the 0.81.1 graph capture records (`ttnn._ttnn.graph.begin_graph_capture(RunMode.NORMAL)` ..
`end_graph_capture()`, the C++ entry points, which leave Python I/O recording off; seen on the
mock p150): a list of nodes {counter, node_type, params, arguments, input_tensors, connections,
stacking_level}.
- A device operation is a `function_start` at stacking level 1 named by its C++ type
  (`MatmulDeviceOperation`, `SDPAOperation`, `LayerNormDeviceOperation`,
  `BinaryNgDeviceOperation`, `TilizeWithValPaddingDeviceOperation`, ...) with params
  `program_factory_type` (`ttnn::prim::MatmulMultiCoreReuseMcast2DProgramFactory`),
  `program_factory_index`, `program_cache_hit`; `input_tensors` are the counters of its input
  `tensor` nodes; its `function_end` connects to its output `tensor` nodes. The Python-level op
  (`ttnn.linear`) has no node of its own (fast runtime mode): one engine call may run several
  device ops (`ttnn.linear(..., activation='gelu')` = a matmul and a separate unary GELU).
- `arguments` are the reflected C++ arguments as text: the operation attributes first
  (`ComputeKernelConfig(math_fidelity=HiFi4,math_approx_mode=0,fp32_dest_acc_en=1,...)`, output
  MemoryConfig and dtype; the matmul program config is not serialized: `<variant>`), then the
  tensor arguments (`TensorSpec(logical_shape=..., dtype=..., memory_config=...)`).
- `tensor` nodes: params shape (logical), dtype, layout, memory_config (text: memory_layout,
  buffer_type, shard_spec with its core grid and shard shape), address, tensor_id; a `buffer`
  node connected to a tensor node gives its allocated bytes (tile padding and bfloat8_b
  exponents included).
- `program_execution` (one per program run): the sub-device's worker core ranges (the whole
  compute grid), not the cores the program uses.
- `circular_buffer_allocate` (params size, address, core_range_set `{[0-0 - 12-9]}`): only on a
  program-cache miss, and not for the Metal-2 ops (matmul, typecast). The trace body hits the
  cache everywhere, so the cores an op runs on come from the eager warm-up's graph, matched by
  the op's argument text (cores_by_signature).
- No math fidelity for ops without a kernel config; matmul defaults (recorded when the engine
  passes none): LoFi for bfloat8_b, HiFi2 for bf16.

extract(graph, call, stack) returns one record per device op that ran a program: {'call',
'stack' (engine call sites, innermost first), 'device_op', 'factory', 'inputs' / 'outputs'
([{'id', 'shape', 'padded', 'dtype', 'layout', 'buffer', 'memory_layout', 'shard_cores',
'shard_shape', 'bytes'}]),
'math_fidelity', 'fp32_acc', 'cores' (from circular buffers; None: unknown), 'grid' (the compute
grid [x, y]), 'chunks' (SDPA q/k chunk sizes), 'programs'}: the input of
devtools/ttnn/cost_model.py.
"""
from __future__ import annotations

import json
import re

_RANGE = re.compile(r'\[(\d+)-(\d+) - (\d+)-(\d+)\]')


def range_cores(text: str) -> int:
    """Cores in a core-range-set text: '{[0-0 - 12-9]}' -> 130."""
    return sum((int(x1) - int(x0) + 1) * (int(y1) - int(y0) + 1)
               for x0, y0, x1, y1 in _RANGE.findall(text or ''))


def _json_cores(text: str) -> int:
    """Cores in core ranges given as JSON text ([{"start": {x, y}, "end": {x, y}}, ...])."""
    try:
        ranges = json.loads(text)
    except (TypeError, ValueError):
        return 0
    return sum((r['end']['x'] - r['start']['x'] + 1) * (r['end']['y'] - r['start']['y'] + 1)
               for r in ranges)


def _json_grid(text: str) -> list[int] | None:
    """[x, y] of a program's worker core ranges (JSON text; one rectangle: the compute grid)."""
    try:
        ranges = json.loads(text)
    except (TypeError, ValueError):
        return None
    if len(ranges) != 1:
        return None
    r = ranges[0]
    return [r['end']['x'] - r['start']['x'] + 1, r['end']['y'] - r['start']['y'] + 1]


def _after(text: str, key: str) -> str | None:
    m = re.search(key + r'=(?:\w+::)?(\w+)', text or '')
    return m.group(1) if m else None


def tensor_info(params: dict, nbytes: int | None) -> dict:
    """A tensor node's params -> the record's tensor fields."""
    shape = [int(v) for v in re.findall(r'-?\d+', params.get('shape', ''))]
    layout = str(params.get('layout', '')).split('::')[-1]
    padded = list(shape)
    if layout == 'TILE' and padded:
        padded[-1] = -(-padded[-1] // 32) * 32
        if len(padded) > 1:
            padded[-2] = -(-padded[-2] // 32) * 32
    mem = params.get('memory_config', '')
    # shard_spec=ShardSpec{grid=[{"start":{"x":0,"y":0},"end":{"x":7,"y":9}}], shape=[32, 32], ..
    shard = re.search(r'shard_spec=ShardSpec\{grid=(\[.*?\]), shape=\[([\d, ]+)\]', mem)
    return {'id': params.get('tensor_id'), 'shape': shape, 'padded': padded,
            'dtype': str(params.get('dtype', '')).split('::')[-1], 'layout': layout,
            'buffer': _after(mem, 'buffer_type'), 'memory_layout': _after(mem, 'memory_layout'),
            'shard_cores': _json_cores(shard.group(1)) if shard else None,
            'shard_shape': [int(v) for v in shard.group(2).split(',')] if shard else None,
            'bytes': nbytes}


def signature(node: dict) -> str:
    """What identifies an op's program: its device-op name and its reflected arguments."""
    return node['params'].get('name', '') + '|' + '|'.join(node.get('arguments') or [])


def _device_ops(graph: list):
    """(start node, [nodes inside its scope]) of every device operation in the graph."""
    open_ops = []
    for n in graph:
        kind = n.get('node_type')
        params = n.get('params') or {}
        if kind == 'function_start':
            if 'program_factory_type' in params or 'program_cache_hit' in params:
                open_ops.append((n, []))
            elif open_ops:
                open_ops[-1][1].append(n)
        elif kind == 'function_end' and open_ops and \
                params.get('name') == open_ops[-1][0]['params'].get('name'):
            start, inner = open_ops.pop()
            inner.append(n)
            yield start, inner
        elif open_ops:
            open_ops[-1][1].append(n)


def cores_by_signature(graph: list) -> dict:
    """{signature: cores} of the device ops that allocated circular buffers (cache misses)."""
    out = {}
    for start, inner in _device_ops(graph):
        cores = max((range_cores(n['params'].get('core_range_set', '')) for n in inner
                     if n.get('node_type') == 'circular_buffer_allocate'), default=0)
        if cores:
            out[signature(start)] = cores
    return out


def extract(graph: list, call: str, stack: list, known_cores: dict | None = None) -> list[dict]:
    """One record per device op of `graph` that ran a program (see module doc)."""
    by_counter = {n['counter']: n for n in graph}
    nbytes = {}
    for n in graph:
        if n.get('node_type') == 'buffer':
            for c in n.get('connections') or []:
                nbytes.setdefault(c, int(n['params'].get('size', 0)))
    out = []
    for start, inner in _device_ops(graph):
        progs = [n for n in inner if n.get('node_type') == 'program_execution']
        if not progs:
            continue
        params = start['params']
        end = inner[-1]
        ins = [tensor_info(by_counter[c]['params'], nbytes.get(c))
               for c in start.get('input_tensors') or [] if c in by_counter]
        outs = [tensor_info(by_counter[c]['params'], nbytes.get(c))
                for c in end.get('connections') or []
                if by_counter.get(c, {}).get('node_type') == 'tensor']
        attrs = (start.get('arguments') or [''])[0]
        cb_cores = max((range_cores(n['params'].get('core_range_set', '')) for n in inner
                        if n.get('node_type') == 'circular_buffer_allocate'), default=0)
        fp32 = _after(attrs, 'fp32_dest_acc_en')
        chunks = re.search(r'SDPAProgramConfig\(<xy_pair>, [^,]+, (\d+), (\d+)', attrs)
        out.append({'call': call, 'stack': list(stack), 'device_op': params.get('name', '?'),
                    'factory': str(params.get('program_factory_type', '')).split('::')[-1],
                    'inputs': ins, 'outputs': outs,
                    'math_fidelity': _after(attrs, 'math_fidelity'),
                    'fp32_acc': None if fp32 is None else fp32 in ('1', 'true'),
                    'cores': cb_cores or (known_cores or {}).get(signature(start)),
                    'grid': _json_grid(progs[0]['params'].get('worker_core_ranges')),
                    'chunks': [int(v) for v in chunks.groups()] if chunks else None,
                    'programs': len(progs)})
    return out
