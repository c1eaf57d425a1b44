"""Test double for the network ONLY: an Engine returning a known raw depth (closed-form geometry).

Selected in the node exclusively through the documented test and integration parameter
`engine_plugin: 'support.fake_engines.known_depth:KnownDepthEngine'` (never automatically).
Everything around the network - decoding, intrinsics, resizing, metric scale, clouds, messages - is
the real code path. raw(v, u) = base + gx * u + gy * v on the network grid; rows < sky_rows get sky
score 1.0. `delay_s` sleeps per infer (sets the engine rate for overload tests); `fail_prepare`
makes the first n prepare() calls in this process raise (lifecycle error/recovery tests). Closing it
while an infer is running prints 'known-depth: CLOSED DURING INFER' (what a node must never do).
`close_holds_gil_s` makes close() block that long in C code WITH the GIL held (libc sleep through
ctypes.PyDLL): no Python thread, the shutdown watchdog included, runs meanwhile.
`resize_on_device` makes it an engine that `resizes_on_device`: `infer_camera` checks the camera
image against the ResizeMap and answers at the map's network size (its maps depend only on the
shape, so nothing needs resampling; `camera_calls` counts these calls, the first is printed).
`max_prepared` sets Engine.max_prepared (how many shapes it keeps prepared at once).
"""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

from tt_depth_ros.engines.base import Engine, EngineInfo, check_views

_FAILS = {'prepare': 0}
_LOCK = threading.Lock()


class KnownDepthEngine(Engine):
    """Engine double with analytic output."""

    def __init__(self, base: float = 2.0, gx: float = 0.0, gy: float = 0.0, sky_rows: int = 0,
                 delay_s: float = 0.0, fail_prepare: int = 0,
                 close_holds_gil_s: int = 0, resize_on_device: bool = False,
                 max_prepared: int | None = None) -> None:
        self.base, self.gx, self.gy = float(base), float(gx), float(gy)
        self.sky_rows, self.delay_s = int(sky_rows), float(delay_s)
        self.fail_prepare = int(fail_prepare)
        self.close_holds_gil_s = int(close_holds_gil_s)
        self.prepared: list = []
        self.closed = False
        self.inferring = False
        self._timings = {}
        self.resizes_on_device = bool(resize_on_device)
        self.max_prepared = max_prepared
        self.camera_calls = 0

    def prepare(self, shape):
        with _LOCK:
            if _FAILS['prepare'] < self.fail_prepare:
                _FAILS['prepare'] += 1
                raise RuntimeError(f'injected prepare failure #{_FAILS["prepare"]}')
        self.prepared.append(tuple(shape))

    def infer(self, *images):
        return self._maps(*check_views(images, 1))

    def infer_camera(self, image, resize):
        if not self.resizes_on_device:
            return super().infer_camera(image, resize)
        if check_views((image,), 1) != resize.src_hw:
            raise ValueError(f'image {image.shape[:2]} is not the map\'s {resize.src_hw}')
        self.camera_calls += 1
        if self.camera_calls == 1:   # for node-process tests: the frame path took this road
            print(f'known-depth: resized {resize.src_hw} -> {resize.net_hw} on the device',
                  flush=True)
        return self._maps(*resize.net_hw)

    def _maps(self, h, w):
        t0 = time.perf_counter()
        if self.delay_s:
            self.inferring = True
            time.sleep(self.delay_s)
            self.inferring = False
        v, u = np.mgrid[0:h, 0:w].astype(np.float32)
        depth = np.float32(self.base) + np.float32(self.gx) * u + np.float32(self.gy) * v
        sky = np.zeros((h, w), np.float32)
        sky[:self.sky_rows] = 1.0
        self._timings = {'forward': time.perf_counter() - t0}
        return {'depth': depth.astype(np.float32), 'sky': sky}

    def close(self):
        if self.inferring:
            print('known-depth: CLOSED DURING INFER', flush=True)
        if self.close_holds_gil_s:
            print('known-depth: close holds the GIL', flush=True)
            ctypes.PyDLL(None).sleep(self.close_holds_gil_s)   # PyDLL: the GIL stays held
        self.closed = True

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model='known-depth')
