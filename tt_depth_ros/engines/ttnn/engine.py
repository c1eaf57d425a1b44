"""TtnnEngine: the traced ttnn backend behind the Engine interface (docs/ttnn.md §6).

prepare(shape): per-shape constants -> persistent uint8 input -> eager warm-up (compiles every
program, prepares conv weights) -> one trace per prepared shape. A shape arriving after a capture
releases all traces (nothing may be allocated while one exists), evicts the least recently used
shapes beyond `max_traced_shapes` (their constants, inputs and per-shape conv weights; the trace
region is sized for that many traces), warms the new shape and re-captures every kept shape.
infer: host uint8 -> copy into the persistent input -> non-blocking execute_trace -> one
blocking readback of the packed outputs. close: traces, tensors, device.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from tt_depth_ros.engines.base import Engine, EngineInfo, check_views
from tt_depth_ros.engines.ttnn.config import shape_config


@dataclass
class _Shape:
    config: Any
    state: dict
    inputs: list
    trace: Any = None
    output: Any = None
    extra: dict = field(default_factory=dict)


class TtnnEngine(Engine):
    """The traced engine.

    Args: ctx (context.TtContext), net (TtDA3 / TtDust3r), model name, logger,
    max_traced_shapes (shapes kept prepared; the least recently used beyond it is evicted),
    details (the model's registry facts for `info.details`: 'kind', 'is_metric').
    """

    def __init__(self, ctx, net, *, model_name: str, device_id: int = 0,
                 logger: Optional[Any] = None, max_traced_shapes: int = 2,
                 details: Optional[dict] = None):
        self.ctx, self.net, self.model_name, self.device_id = ctx, net, model_name, device_id
        self.model_details = dict(details or {})
        self.num_views = net.num_views
        self.logger = logger
        self.max_traced_shapes = int(max_traced_shapes)
        self._shapes: OrderedDict[tuple[int, int], _Shape] = OrderedDict()   # LRU first
        self._timings: dict[str, float] = {}
        self._closed = False

    @property
    def info(self) -> EngineInfo:
        return EngineInfo(backend='ttnn', device=f'p150:{self.device_id}',
                          dtype=self.ctx.precision.name,
                          model=self.model_name,
                          details={**self.model_details,
                                   'dispatch': self.ctx.dispatch,
                                   'grid': f'{self.ctx.grid[0]}x{self.ctx.grid[1]}',
                                   'precision': self.ctx.precision.name,
                                   'shapes': [list(s) for s in self._shapes]})

    def _log(self, msg: str) -> None:
        if self.logger is not None:
            self.logger.info(msg)

    def prepare(self, shape: tuple[int, int]) -> None:
        if self._closed:
            raise RuntimeError('ttnn engine is closed')
        shape = (int(shape[0]), int(shape[1]))
        if shape in self._shapes:
            self._shapes.move_to_end(shape)
            return
        ttnn = self.ctx.ttnn
        sc = shape_config(shape[0], shape[1], self.net.patch, self.net.prefix_tokens,
                          self.ctx.grid)
        self._release_traces()            # allocation below is unsafe while a trace exists
        while len(self._shapes) >= self.max_traced_shapes:
            self._evict(next(iter(self._shapes)))
        self.ctx.active_shape = shape
        t0 = time.perf_counter()
        state = self.net.build_shape(sc)
        inputs = []
        try:
            for _ in range(self.num_views):
                inputs.append(ttnn.allocate_tensor_on_device(
                    ttnn.Shape([1, 1, shape[0] * shape[1], 3]), ttnn.uint8,
                    ttnn.ROW_MAJOR_LAYOUT, self.ctx.device))
            zero = ttnn.from_torch(torch.zeros(1, 1, shape[0] * shape[1], 3,
                                               dtype=torch.uint8), dtype=ttnn.uint8)
            for x in inputs:
                ttnn.copy_host_to_device_tensor(zero, x)
            out = self.net.forward(sc, state, inputs)    # eager warm-up: compile + conv prep
            ttnn.synchronize_device(self.ctx.device)
            ttnn.deallocate(out)
        except BaseException:
            for x in inputs:
                ttnn.deallocate(x)
            self.net.release_shape(state)
            self._release_conv_weights(shape)
            raise
        self._shapes[shape] = _Shape(sc, state, inputs)
        self._log(f'ttnn: warmed {shape[0]}x{shape[1]} in {time.perf_counter() - t0:.1f} s '
                  f'({sc.tokens} tokens -> {sc.seq})')
        self._capture_all()

    def _capture_all(self) -> None:
        ttnn = self.ctx.ttnn
        for shape, e in self._shapes.items():
            self.ctx.active_shape = shape
            t0 = time.perf_counter()
            tid = ttnn.begin_trace_capture(self.ctx.device, cq_id=0)
            try:
                e.output = self.net.forward(e.config, e.state, e.inputs)
            except BaseException:
                ttnn.end_trace_capture(self.ctx.device, tid, cq_id=0)
                ttnn.release_trace(self.ctx.device, tid)
                raise
            ttnn.end_trace_capture(self.ctx.device, tid, cq_id=0)
            ttnn.synchronize_device(self.ctx.device)
            e.trace = tid
            self._log(f'ttnn: captured trace for {shape[0]}x{shape[1]} in '
                      f'{time.perf_counter() - t0:.2f} s')

    def _evict(self, shape) -> None:
        """Drop a prepared shape (trace already released): inputs, constants, conv weights."""
        e = self._shapes.pop(shape)
        for x in e.inputs:
            self.ctx.ttnn.deallocate(x)
        self.net.release_shape(e.state)
        self._release_conv_weights(shape)
        self._log(f'ttnn: evicted {shape[0]}x{shape[1]} (least recently used; '
                  f'max_traced_shapes={self.max_traced_shapes})')

    def _release_conv_weights(self, shape) -> None:
        """Per-shape conv weights used by `shape` and by no kept shape."""
        used = self.ctx.shape_uses.pop(shape, set())
        kept = set().union(*self.ctx.shape_uses.values()) if self.ctx.shape_uses else set()
        for conv, hw in used - kept:
            conv.release_hw(hw)

    def _release_traces(self) -> None:
        ttnn = self.ctx.ttnn
        for e in self._shapes.values():
            if e.trace is not None:
                ttnn.release_trace(self.ctx.device, e.trace)
                e.trace = None
            if e.output is not None:
                ttnn.deallocate(e.output)
                e.output = None

    def infer(self, *images: np.ndarray) -> dict[str, np.ndarray]:
        if self._closed:
            raise RuntimeError('ttnn engine is closed')
        shape = check_views(images, self.num_views)
        if shape not in self._shapes:
            self._log(f'ttnn: unprepared input shape {shape}; preparing it now')
            self.prepare(shape)
        ttnn = self.ctx.ttnn
        e = self._shapes[shape]
        self._shapes.move_to_end(shape)
        t0 = time.perf_counter()
        for img, dst in zip(images, e.inputs):
            # copy: the caller's array may be read-only (torch.from_numpy would warn)
            host = ttnn.from_torch(torch.from_numpy(np.array(img, order='C')).reshape(
                1, 1, shape[0] * shape[1], 3), dtype=ttnn.uint8)
            ttnn.copy_host_to_device_tensor(host, dst)
        t1 = time.perf_counter()
        ttnn.execute_trace(self.ctx.device, e.trace, cq_id=0, blocking=False)
        t2 = time.perf_counter()
        out = ttnn.to_torch(e.output).to(torch.float32).numpy()     # waits for the trace
        t3 = time.perf_counter()
        result = self.net.unpack(out, e.config)
        self._timings = {'upload': t1 - t0, 'enqueue': t2 - t1, 'device_and_readback': t3 - t2,
                         'unpack': time.perf_counter() - t3}
        return result

    def close(self) -> None:
        if self._closed:
            return
        ttnn = self.ctx.ttnn
        self._release_traces()
        for e in self._shapes.values():
            for x in e.inputs:
                ttnn.deallocate(x)
            self.net.release_shape(e.state)
        self._shapes.clear()
        self.net.release()
        ttnn.close_device(self.ctx.device)
        self._closed = True
