"""TtnnEngine: the traced ttnn backend behind the Engine interface (docs/ttnn.md §6).

prepare(shape): per-shape constants -> persistent uint8 input -> eager warm-up (compiles every
program, prepares conv weights) -> one trace per prepared shape. A shape arriving after a capture
releases all traces (nothing may be allocated while one exists), evicts the least recently used
shapes beyond `max_traced_shapes` (their constants, inputs and per-shape conv weights; the trace
region is sized for that many traces) and then clears the library's program cache (it holds the
convs' tables in L1_SMALL for every shape ever run), warms the new shape and the kept ones
again, and re-captures every kept shape.
infer: host uint8 -> copy into the persistent input -> non-blocking execute_trace -> one
blocking readback of the packed outputs. close: traces, tensors, device.

Two command queues (`command_queues=2`, tt-metal's trace + 2 CQ pattern): `submit` uploads the
frame on CQ1 into a per-shape staging buffer once CQ0 has consumed the previous one (event), CQ0
waits for that upload (event), copies staging -> the trace's input, records "consumed", replays
the trace and queues a non-blocking readback; `collect` waits for the readback's event. So the
upload of frame N+1 overlaps frame N's trace, and the host's unpacking overlaps the device.
Re-preparing and close synchronize first: a frame in flight completes and stays collectable.

A one-view (DA3) engine `resizes_on_device`: `prepare_camera(resize)` / `infer_camera` key a
trace by (network size, camera size); its persistent input has the camera size and the trace
starts with the upstream resize as matmuls (layers/camera_resize.py, the matrices of
geometry/preprocess/resize_map.py), so the host uploads the camera frame as it came.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from tt_depth_ros.engines.base import Engine, EngineInfo, Ticket, check_views
from tt_depth_ros.engines.ttnn.config import shape_config
from tt_depth_ros.engines.ttnn.context import close_device
from tt_depth_ros.engines.ttnn.layers.camera_resize import TtCameraResize
from tt_depth_ros.geometry.preprocess.resize_map import ResizeMap

Key = tuple[tuple[int, int], Optional[tuple[int, int]]]
"""A prepared trace: (network (H, W), camera (H, W) resized on the device, or None)."""


@dataclass
class _Shape:
    config: Any
    state: dict
    inputs: list
    camera: Optional[TtCameraResize] = None       # camera keys: the resize on the device
    trace: Any = None
    output: Any = None
    staging: list = field(default_factory=list)   # 2 CQs: CQ1 uploads here, CQ0 copies on


class _InFlight(Ticket):
    """A frame whose readback is queued (2 CQs): `done` is the CQ0 event recorded after it.

    `uploads` keeps the frame's host tensors alive until then: CQ1 may still be reading them.
    """

    def __init__(self, config, host, done, submitted: float, uploads: list):
        super().__init__()
        self.config, self.host, self.done, self.submitted = config, host, done, submitted
        self.uploads = uploads


def _label(key: Key) -> str:
    (h, w), src = key
    return f'{h}x{w}' + (f' (camera {src[0]}x{src[1]} resized on the device)' if src else '')


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
        self.max_prepared = self.max_traced_shapes
        self._shapes: OrderedDict[Key, _Shape] = OrderedDict()   # LRU first
        self.resizes_on_device = self.num_views == 1
        self._timings: dict[str, float] = {}
        self._closed = False
        self.command_queues = int(getattr(ctx, 'command_queues', 1))
        self.pipelines = self.command_queues == 2
        self._consumed = None          # CQ0 event: the last staging buffer has been copied on
        self._in_flight: list[_InFlight] = []

    @property
    def info(self) -> EngineInfo:
        return EngineInfo(backend='ttnn', device=f'p150:{self.device_id}',
                          dtype=self.ctx.precision.name,
                          model=self.model_name,
                          details={**self.model_details,
                                   'dispatch': self.ctx.dispatch,
                                   'grid': f'{self.ctx.grid[0]}x{self.ctx.grid[1]}',
                                   'precision': self.ctx.precision.name,
                                   'resize_on_device': self.resizes_on_device,
                                   'command_queues': self.command_queues,
                                   'shapes': [list(net) for net, _ in self._shapes],
                                   'camera_sizes': [list(src) if src else None
                                                    for _, src in self._shapes]})

    def _log(self, msg: str) -> None:
        if self.logger is not None:
            self.logger.info(msg)

    def prepare(self, shape: tuple[int, int]) -> None:
        self._prepare(((int(shape[0]), int(shape[1])), None), None)

    def prepare_camera(self, resize: ResizeMap) -> None:
        """Warm and trace the camera -> network resize and the network for one camera size."""
        if not self.resizes_on_device:
            super().prepare_camera(resize)
            return
        self._prepare((tuple(resize.net_hw), tuple(resize.src_hw)), resize)

    def _prepare(self, key: Key, resize: Optional[ResizeMap]) -> None:
        if self._closed:
            raise RuntimeError('ttnn engine is closed')
        if key in self._shapes:
            self._shapes.move_to_end(key)
            return
        ttnn = self.ctx.ttnn
        shape, src = key
        sc = shape_config(shape[0], shape[1], self.net.patch, self.net.prefix_tokens,
                          self.ctx.grid, logical=self.ctx.precision.mask_free_sdpa)
        self._release_traces()            # allocation below is unsafe while a trace exists
        evicted = False
        while len(self._shapes) >= self.max_traced_shapes:
            self._evict(next(iter(self._shapes)))
            evicted = True
        if evicted:
            # the library's program cache keeps every shape's programs and what they hold: the
            # convs' sliding-window tables live in L1_SMALL (32 KB a core), so DA3-Large's third
            # shape ran out of it though the first was evicted; kept shapes are warmed again
            self.ctx.device.clear_program_cache()
        self.ctx.active_shape = key
        t0 = time.perf_counter()
        state = self.net.build_shape(sc)
        in_h, in_w = src or shape
        inputs, camera = [], None
        try:
            if resize is not None:
                camera = TtCameraResize(self.ctx, resize)
            staging = []
            for buffers in [inputs] + ([staging] if self.command_queues == 2 else []):
                for _ in range(self.num_views):
                    buffers.append(ttnn.allocate_tensor_on_device(
                        ttnn.Shape([1, 1, in_h * in_w, 3]), ttnn.uint8,
                        ttnn.ROW_MAJOR_LAYOUT, self.ctx.device))
            zero = ttnn.from_torch(torch.zeros(1, 1, in_h * in_w, 3, dtype=torch.uint8),
                                   dtype=ttnn.uint8)
            for x in inputs + staging:
                ttnn.copy_host_to_device_tensor(zero, x)
            entry = _Shape(sc, state, inputs, camera, staging=staging)
            self._warm(entry)             # eager: compile + conv prep
        except BaseException:
            for x in inputs + staging:
                ttnn.deallocate(x)
            if camera is not None:
                camera.release()
            self.net.release_shape(state)
            self._release_conv_weights(key)
            raise
        self._shapes[key] = entry
        self._log(f'ttnn: warmed {_label(key)} in {time.perf_counter() - t0:.1f} s '
                  f'({sc.tokens} tokens -> {sc.seq})')
        if evicted:
            self._warm_kept(key)
        self._capture_all()

    def _warm(self, e: _Shape) -> None:
        """Compile a key's programs, the staging copy and the forward, before any capture.

        No kernel binary may be allocated while a trace exists.
        """
        ttnn = self.ctx.ttnn
        for src, dst in zip(e.staging, e.inputs):
            ttnn.copy(src, dst)
        ttnn.deallocate(self._forward(e))
        ttnn.synchronize_device(self.ctx.device)

    def _warm_kept(self, new: Key) -> None:
        """Compile every kept key's programs again after the program cache was cleared."""
        for key, e in self._shapes.items():
            if key == new:
                continue
            self.ctx.active_shape = key
            t0 = time.perf_counter()
            self._warm(e)
            self._log(f'ttnn: warmed {_label(key)} again in {time.perf_counter() - t0:.1f} s '
                      '(program cache cleared)')

    def _forward(self, e: _Shape):
        if e.camera is not None:
            return self.net.forward(e.config, e.state, e.inputs, camera=e.camera)
        return self.net.forward(e.config, e.state, e.inputs)

    def _capture_all(self) -> None:
        ttnn = self.ctx.ttnn
        for key, e in self._shapes.items():
            self.ctx.active_shape = key
            t0 = time.perf_counter()
            tid = ttnn.begin_trace_capture(self.ctx.device, cq_id=0)
            try:
                e.output = self._forward(e)
            except BaseException:
                ttnn.end_trace_capture(self.ctx.device, tid, cq_id=0)
                ttnn.release_trace(self.ctx.device, tid)
                raise
            ttnn.end_trace_capture(self.ctx.device, tid, cq_id=0)
            ttnn.synchronize_device(self.ctx.device)
            e.trace = tid
            self._log(f'ttnn: captured trace for {_label(key)} in '
                      f'{time.perf_counter() - t0:.2f} s')

    def _evict(self, key: Key) -> None:
        """Drop a prepared key (trace already released): inputs, constants, conv weights."""
        e = self._shapes.pop(key)
        self._release_entry(e)
        self._release_conv_weights(key)
        self._log(f'ttnn: evicted {_label(key)} (least recently used; '
                  f'max_traced_shapes={self.max_traced_shapes})')

    def _release_entry(self, e: _Shape) -> None:
        for x in e.inputs + e.staging:
            self.ctx.ttnn.deallocate(x)
        if e.camera is not None:
            e.camera.release()
        self.net.release_shape(e.state)

    def _release_conv_weights(self, key: Key) -> None:
        """Per-shape conv weights used by `key` and by no kept key."""
        used = self.ctx.shape_uses.pop(key, set())
        kept = set().union(*self.ctx.shape_uses.values()) if self.ctx.shape_uses else set()
        for conv, hw in used - kept:
            conv.release_hw(hw)

    def _synchronize(self) -> None:
        """Finish every queued frame; their readbacks are then complete and collectable."""
        self.ctx.ttnn.synchronize_device(self.ctx.device)
        for t in self._in_flight:
            t.done, t.uploads = None, []
        self._in_flight.clear()

    def _release_traces(self) -> None:
        ttnn = self.ctx.ttnn
        self._synchronize()                  # no trace is released with a replay queued
        for e in self._shapes.values():
            if e.trace is not None:
                ttnn.release_trace(self.ctx.device, e.trace)
                e.trace = None
            if e.output is not None:
                ttnn.deallocate(e.output)
                e.output = None

    def _ready_key(self, images, resize: Optional[ResizeMap]) -> Key:
        """The prepared key of these images (camera size with `resize`), preparing it if new."""
        if self._closed:
            raise RuntimeError('ttnn engine is closed')
        if resize is None:
            shape = check_views(images, self.num_views)
            key = (shape, None)
            if key not in self._shapes:
                self._log(f'ttnn: unprepared input shape {shape}; preparing it now')
                self.prepare(shape)
            return key
        if check_views(images, 1) != tuple(resize.src_hw):
            raise ValueError(f'image {images[0].shape[:2]} is not the resize\'s camera size '
                             f'{resize.src_hw}')
        key = (tuple(resize.net_hw), tuple(resize.src_hw))
        if key not in self._shapes:
            self._log(f'ttnn: unprepared camera size {key[1]}; preparing it now')
            self.prepare_camera(resize)
        return key

    def infer(self, *images: np.ndarray) -> dict[str, np.ndarray]:
        return self._run(self._ready_key(images, None), images)

    def infer_camera(self, image: np.ndarray, resize: ResizeMap) -> dict[str, np.ndarray]:
        """`infer` of a camera-size image; the trace resizes it on the device (base.Engine)."""
        if not self.resizes_on_device:
            return super().infer_camera(image, resize)
        return self._run(self._ready_key((image,), resize), (image,))

    def submit(self, *images: np.ndarray, resize: Optional[ResizeMap] = None) -> Ticket:
        """Hand over a frame (base.Engine); with 2 CQs it overlaps the frame in flight."""
        if resize is not None and not self.resizes_on_device:
            return super().submit(*images, resize=resize)
        key = self._ready_key(images, resize)
        if self.command_queues == 1:
            return Ticket(self._run(key, images))
        return self._enqueue(key, images)

    def collect(self, ticket: Ticket) -> dict[str, np.ndarray]:
        """Wait for a submitted frame's readback (2 CQs) and unpack it."""
        if not isinstance(ticket, _InFlight) or ticket.result is not None:
            return ticket.take()
        ttnn = self.ctx.ttnn
        t0 = time.perf_counter()
        if ticket.done is not None:
            ttnn.event_synchronize(ticket.done)
            self._in_flight.remove(ticket)
        ticket.uploads = []                  # the trace has consumed them
        t1 = time.perf_counter()
        out = ttnn.to_torch(ticket.host).to(torch.float32).numpy()
        ticket.result = self.net.unpack(out, ticket.config)
        self._timings.update({'wait': t1 - t0, 'readback_and_unpack': time.perf_counter() - t1,
                              'submit_to_collect': t1 - ticket.submitted})
        return ticket.take()

    def _host_frames(self, key: Key, images) -> list:
        in_h, in_w = key[1] or key[0]
        # copy: the caller's array may be read-only (torch.from_numpy would warn)
        return [self.ctx.ttnn.from_torch(torch.from_numpy(np.array(img, order='C')).reshape(
            1, 1, in_h * in_w, 3), dtype=self.ctx.ttnn.uint8) for img in images]

    def _enqueue(self, key: Key, images) -> _InFlight:
        """The 2-CQ submit: events order CQ1's upload against CQ0's copy and trace (docstring)."""
        ttnn, dev = self.ctx.ttnn, self.ctx.device
        e = self._shapes[key]
        self._shapes.move_to_end(key)
        t0 = time.perf_counter()
        hosts = self._host_frames(key, images)
        if self._consumed is not None:
            ttnn.wait_for_event(1, self._consumed)        # CQ0 has copied the last staging on
        for host, dst in zip(hosts, e.staging):
            ttnn.copy_host_to_device_tensor(host, dst, cq_id=1)
        written = ttnn.record_event(dev, 1)
        ttnn.wait_for_event(0, written)                   # CQ0 sees this frame, not the last
        for src, dst in zip(e.staging, e.inputs):
            ttnn.copy(src, dst)
        self._consumed = ttnn.record_event(dev, 0)
        ttnn.execute_trace(dev, e.trace, cq_id=0, blocking=False)
        host_out = ttnn.from_device(e.output, blocking=False, queue_id=0)
        ticket = _InFlight(e.config, host_out, ttnn.record_event(dev, 0), t0, hosts)
        self._in_flight.append(ticket)
        self._timings = {'submit': time.perf_counter() - t0}
        return ticket

    def _run(self, key: Key, images) -> dict[str, np.ndarray]:
        """Upload into the key's persistent inputs, replay its trace, read back, unpack."""
        if self.command_queues == 2:
            return self.collect(self._enqueue(key, images))
        ttnn = self.ctx.ttnn
        e = self._shapes[key]
        self._shapes.move_to_end(key)
        t0 = time.perf_counter()
        for host, dst in zip(self._host_frames(key, images), e.inputs):
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
            self._release_entry(e)
        self._shapes.clear()
        self.net.release()
        close_device(ttnn, self.ctx.device, self.command_queues)
        self._closed = True
