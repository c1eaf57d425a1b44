"""Test double for the network ONLY: reads planar depth back from colour-coded test images.

Selected only through `engine_plugin: 'support.fake_engines.depth_code:DepthCodeEngine'`. The
simulator renders a scene whose red channel is planar depth in steps of `z_step` metres (blue 255 =
sky), so the depth this engine returns is the depth of whatever the network image SHOWS: a wrongly
rectified (or unrectified) image gives wrong depth, exactly as a real network would see a wrong
scene. Raw depth = z * 300 / f_net (DA3's metric convention), with f_net the rectified focal (fx, fy
of a `width` x `height` camera) scaled to the network grid.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.engines.base import Engine, EngineInfo, check_views


def encode_depth(depth: np.ndarray, z_step: float) -> np.ndarray:
    """(H, W) planar depth (+Inf sky) -> rgb8 image the engine decodes."""
    sky = ~np.isfinite(depth)
    code = np.clip(np.rint(np.where(sky, 0.0, depth) / z_step), 0, 255).astype(np.uint8)
    return np.stack([code, code, np.where(sky, 255, 0).astype(np.uint8)], -1)


class DepthCodeEngine(Engine):
    def __init__(self, fx: float, fy: float, width: int, height: int, z_step: float = 0.05):
        self.fx, self.fy, self.w, self.h, self.z_step = fx, fy, width, height, z_step
        self._timings = {}

    def prepare(self, shape):
        pass

    def infer(self, *images):
        h, w = check_views(images, 1)
        img = images[0].astype(np.float32)
        f_net = (self.fx * w / self.w + self.fy * h / self.h) / 2.0
        z = img[..., 0] * np.float32(self.z_step)
        sky = (img[..., 2] > 127) | (z <= 0)
        raw = np.where(sky, 1.0, z * 300.0 / f_net).astype(np.float32)
        return {'depth': raw, 'sky': sky.astype(np.float32)}

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model='depth-code')
