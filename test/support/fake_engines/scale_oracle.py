"""Test double for the network ONLY: the scale oracle's depth, off by a known per-frame scale.

Selected through `engine_plugin: 'support.fake_engines.scale_oracle:ScaleOracleEngine'`. For an
image of the oracle sequence (support/scale_oracle.py; its frame index is marked in pixel
(0, 0)) it returns the true planar depth of that frame times the oracle's s_i, as a DA3 model
of `kind` would give it: 'metric' raw depth (metres x 300 / focal: the node's focal scale gives
true x s_i), 'nested' metres, 'anyview' / 'mono' in a relative unit (true x s_i). Sky (no return)
is the sky head's (metric, nested, mono), or low confidence with a far depth (any-view). The
node must run at the camera's size (network grid = image), so the image arrives untouched.
"""
from __future__ import annotations

import time

import numpy as np

from support.fake_engines.pair_scene import read_id
from support.scale_oracle import Oracle
from tt_depth_ros.engines.base import Engine, EngineInfo, check_views

KINDS = ('metric', 'nested', 'anyview', 'mono')


class ScaleOracleEngine(Engine):
    """The oracle's depth for frame i, times s_i, as a DA3 `kind` returns it (module docstring).

    Args: as `support.scale_oracle.Oracle`, plus the DA3 `kind`.
    """

    def __init__(self, kind: str = 'metric', width: int = 112, height: int = 84, seed: int = 1,
                 step_at: int = -1, jitter: float = 0.1) -> None:
        if kind not in KINDS:
            raise ValueError(f'kind={kind!r}; allowed: {KINDS}')
        self.kind = kind
        self.oracle = Oracle(int(width), int(height), int(seed), int(step_at), float(jitter))
        self._timings = {}

    def prepare(self, shape):
        pass

    def infer(self, *images):
        h, w = check_views(images, 1)
        if (w, h) != (self.oracle.width, self.oracle.height):
            raise ValueError(f'network grid {w}x{h} != the oracle camera '
                             f'{self.oracle.width}x{self.oracle.height}')
        t0 = time.perf_counter()
        i = read_id(images[0])
        _, true = self.oracle.frame(i)
        s = np.float32(self.oracle.network_scale(i))
        K = self.oracle.K
        sky = ~np.isfinite(true)
        depth = np.where(sky, np.float32(1.0), true) * s
        out = {}
        if self.kind == 'metric':
            out['depth'] = depth * np.float32(300.0 / K[0, 0])
        elif self.kind == 'anyview':
            out['depth'] = np.where(sky, np.float32(1e3) * s, depth)
        else:
            out['depth'] = depth
        if self.kind in ('anyview', 'nested'):
            out.update(conf=np.where(sky, 1.0, 2.0), intrinsics=K,
                       extrinsics=np.eye(3, 4))
        if self.kind != 'anyview':
            out['sky'] = sky.astype(np.float32)
        self._timings = {'forward': time.perf_counter() - t0}
        return {k: np.asarray(v, np.float32) for k, v in out.items()}

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model=f'scale-oracle-{self.kind}',
                          details={'kind': self.kind, 'is_metric': self.kind in
                                   ('metric', 'nested')})
