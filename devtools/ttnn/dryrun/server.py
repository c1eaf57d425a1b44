"""Real-library side of the dry run: runs in the side venv (Python 3.12, ttnn 0.81.1, numpy).

Started by bridge.py as `python -m devtools.ttnn.dryrun.server RFD WFD` (two pipe fds); serves
attribute reads and calls on the real `ttnn` module and on the objects it returns, for an engine
running in another interpreter. Environment (environment.side_env): a MOCK p150 cluster
descriptor and a dry-run JIT cache, so `ttnn.open_device` succeeds with the compiler stand-in
and every op runs its real host side (argument binding, TT_FATAL validation, program creation,
the real L1/DRAM allocator).

Besides forwarding, it records what the engine must never do (monitor.Monitor): every call the
library rejects, use of a tensor whose buffer was freed through another tensor, allocation while
a trace exists, host I/O or a program-cache miss inside a trace capture; and what the budgets
need: programs per forward, peak DRAM/L1. With TT_DRYRUN_OP_RECORDS=1 (driver.run(op_records=
True)) each trace also lists the device ops its body ran (monitor.py, op_records.py), the input of
the cost estimate (benchmarks/ttnn_estimate.py).

Torch is not installed here: `from_torch`/`to_torch` (which import torch) are replaced by
numpy-fed versions built on the same `ttnn.Tensor` constructor. Trace capture cannot run on the
mock device (tt-metal 0.81.1 segfaults assembling the trace's commands), so capture is emulated:
the body runs eagerly (same programs, same allocations) and execute_trace is a no-op.
"""
from __future__ import annotations

import os
import sys
import traceback

import numpy as np

from devtools.ttnn.dryrun import wire
from devtools.ttnn.dryrun.monitor import Monitor, error_text


class Server:
    def __init__(self, ttnn):
        self.ttnn = ttnn
        self.objects: dict[int, object] = {0: ttnn}
        self.names: dict[int, str] = {0: 'ttnn'}
        self.next_id = 1
        self.monitor = Monitor(ttnn, op_records=os.environ.get('TT_DRYRUN_OP_RECORDS') == '1')
        self.shims = {'from_torch': self.from_torch, 'to_torch': self.to_torch,
                      'begin_trace_capture': self.monitor.begin_trace_capture,
                      'end_trace_capture': self.monitor.end_trace_capture,
                      'execute_trace': self.monitor.execute_trace,
                      'release_trace': self.monitor.release_trace}
        ttnn.from_torch = self.from_torch          # ttnn.as_tensor calls ttnn.from_torch

    # -- host conversions without torch -------------------------------------------------------
    def from_torch(self, tensor, dtype=None, *, spec=None, tile=None, pad_value=None, layout=None,
                   device=None, memory_config=None, mesh_mapper=None, cq_id=None,
                   preserve_nan_values=False, col_tilize=False, enable_bfloat_opt=False):
        if tensor is None:
            return None
        if spec is not None or mesh_mapper is not None or col_tilize:
            raise RuntimeError('dry run: from_torch(spec=/mesh_mapper=/col_tilize=) not wired')
        return self.ttnn.Tensor(tensor=np.ascontiguousarray(tensor), data_type=dtype,
                                device=device, layout=layout, mem_config=memory_config,
                                tile=tile, cq_id=cq_id, pad_value=pad_value,
                                preserve_nan_values=preserve_nan_values,
                                enable_bfloat_opt=enable_bfloat_opt)

    def to_torch(self, tensor, dtype=None, *, torch_rank=None, mesh_composer=None, device=None,
                 cq_id=None):
        ttnn = self.ttnn
        if dtype is not None or mesh_composer is not None:
            raise RuntimeError('dry run: to_torch(dtype=/mesh_composer=) not wired')
        if ttnn.is_tensor_storage_on_device(tensor):
            tensor = ttnn.from_device(tensor, queue_id=cq_id)
        shape = tuple(tensor.shape)
        torch_dtype = {ttnn.bfloat16: 'bfloat16', ttnn.bfloat8_b: 'float32',
                       ttnn.bfloat4_b: 'float32', ttnn.float32: 'float32'}.get(tensor.dtype)
        if torch_dtype is not None and tensor.dtype != ttnn.float32:
            arr = np.asarray(tensor.to_list(), dtype=np.float32).reshape(shape)
        else:
            arr = np.asarray(tensor.to_numpy()).reshape(shape)
        if torch_rank is not None:
            while arr.ndim > torch_rank:
                if arr.shape[0] != 1:
                    raise RuntimeError('ttnn: Unable to squeeze to desired rank!')
                arr = arr[0]
        return wire.Array(str(arr.dtype), arr.shape, np.ascontiguousarray(arr).tobytes(),
                          torch_dtype)

    # -- wire encoding ------------------------------------------------------------------------
    def encode(self, v, name: str = '?'):
        if v is None or isinstance(v, (bool, int, float, str, bytes, wire.Array)):
            return v
        if isinstance(v, tuple):
            return tuple(self.encode(x, name) for x in v)
        if isinstance(v, list):
            return [self.encode(x, name) for x in v]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: self.encode(x, name) for k, x in v.items()}
        if isinstance(v, np.ndarray):
            return wire.Array(str(v.dtype), v.shape, np.ascontiguousarray(v).tobytes())
        i = self.next_id
        self.next_id += 1
        self.objects[i] = v
        self.names[i] = name
        if isinstance(v, self.ttnn.Tensor):
            self.monitor.adopt(v, name)
        return wire.Ref(i)

    def decode(self, v):
        if isinstance(v, wire.Ref):
            return self.objects[v.id]
        if isinstance(v, wire.Array):
            return np.frombuffer(v.data, dtype=v.dtype).reshape(v.shape).copy()
        if isinstance(v, tuple):
            return tuple(self.decode(x) for x in v)
        if isinstance(v, list):
            return [self.decode(x) for x in v]
        if isinstance(v, dict):
            return {k: self.decode(x) for k, x in v.items()}
        return v

    def drop(self, ids) -> None:
        for i in ids:
            if i == 0:
                continue
            obj = self.objects.pop(i, None)
            self.names.pop(i, None)
            if obj is not None:
                self.monitor.forget(obj)

    # -- requests -----------------------------------------------------------------------------
    def getattr(self, ref, name):
        obj = self.objects[ref.id]
        if ref.id == 0 and name in self.shims:
            return self.encode(self.shims[name], f'ttnn.{name}')
        return self.encode(getattr(obj, name), f'{self.names[ref.id]}.{name}')

    def call(self, ref, args, kwargs, site, stack=None):
        fn = self.objects[ref.id]
        qual = self.names[ref.id]
        args, kwargs = self.decode(args), self.decode(kwargs)
        out = self.monitor.call(qual, fn, args, kwargs, site, stack)
        return self.encode(out, f'result of {qual}')

    def handle(self, msg):
        op = msg[0]
        if op == 'getattr':
            return self.getattr(msg[1], msg[2])
        if op == 'call':
            return self.call(*msg[1:])
        obj = self.objects[msg[1].id]
        if op == 'repr':
            return repr(obj)
        if op == 'str':
            return str(obj)
        if op == 'eq':
            return bool(obj == self.decode(msg[2]))
        if op == 'hash':
            return hash(obj)
        if op == 'len':
            return len(obj)
        if op == 'getitem':
            return self.encode(obj[self.decode(msg[2])], self.names[msg[1].id] + '[]')
        if op == 'list':
            return self.encode(list(obj), self.names[msg[1].id] + '[]')
        if op == 'bool':
            return bool(obj)
        if op == 'int':
            return int(obj)
        if op == 'float':
            return float(obj)
        if op == 'isinstance':
            return isinstance(obj, self.objects[msg[2].id])
        if op == 'report':
            return self.monitor.report()
        if op == 'phase':
            self.monitor.set_phase(msg[2])
            return None
        raise ValueError(f'unknown request {op!r}')


def main() -> int:
    rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
    rf, wf = os.fdopen(rfd, 'rb'), os.fdopen(wfd, 'wb')
    import ttnn
    server = Server(ttnn)
    while True:
        try:
            msg = wire.recv(rf)
        except EOFError:
            return 0
        drops, msg = msg
        server.drop(drops)
        if msg[0] == 'quit':
            wire.send(wf, ('ok', None))
            return 0
        try:
            reply = ('ok', server.handle(msg))
        except Exception as e:   # the engine sees the library's exception, type and text
            reply = ('err', type(e).__name__, error_text(e), traceback.format_exc(limit=4))
        wire.send(wf, reply)


if __name__ == '__main__':
    sys.exit(main())
