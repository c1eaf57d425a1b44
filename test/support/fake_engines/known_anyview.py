"""Test double for the network ONLY: an any-view / NESTED / mono DA3 engine with known geometry.

Selected through `engine_plugin: 'support.fake_engines.known_anyview:KnownAnyviewEngine'`. The scene
seen from a level camera at `height` above a flat floor: floor pixels below the horizon up to a wall
at `wall_z`, the wall elsewhere (a bright input image, mean > 200, shows the wall only: the floor is
not visible). The camera the engine "estimates" has fx = fy = focal_frac * W, centre (W/2, H/2) on
the network grid; the depth it returns is the true planar depth / rel_scale (kind 'anyview' or
'mono') or in metres (kind 'nested'). Confidence is 2 except the first `low_conf_rows` rows (1); sky
(mono/nested) is 1 on the first `sky_rows` rows. The same formulas are used by the tests (`scene`),
so each output has a closed-form expectation.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.engines.base import Engine, EngineInfo, check_views


def scene(h: int, w: int, height: float, wall_z: float, focal_frac: float,
          floor: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(true planar depth (h, w) float32 metres, estimated K (3, 3)) on the network grid."""
    f = focal_frac * w
    K = np.array([[f, 0.0, w / 2.0], [0.0, f, h / 2.0], [0.0, 0.0, 1.0]])
    v = np.arange(h, dtype=np.float64)[:, None] - K[1, 2]
    z = np.full((h, w), wall_z, np.float64)
    if floor:
        with np.errstate(divide='ignore'):
            zf = np.where(v > 0, height * f / np.maximum(v, 1e-9), np.inf)
        z = np.minimum(z, np.broadcast_to(zf, (h, w)))
    return z.astype(np.float32), K


class KnownAnyviewEngine(Engine):
    """Engine double with analytic outputs of one DA3 kind."""

    def __init__(self, kind: str = 'anyview', height: float = 1.5, wall_z: float = 12.0,
                 focal_frac: float = 0.8, rel_scale: float = 4.0, low_conf_rows: int = 0,
                 sky_rows: int = 0) -> None:
        if kind not in ('anyview', 'nested', 'mono'):
            raise ValueError(f'kind={kind!r}')
        self.kind, self.height, self.wall_z = kind, float(height), float(wall_z)
        self.focal_frac, self.rel_scale = float(focal_frac), float(rel_scale)
        self.low_conf_rows, self.sky_rows = int(low_conf_rows), int(sky_rows)
        self._timings = {}

    def prepare(self, shape):
        pass

    def infer(self, *images):
        h, w = check_views(images, 1)
        z, K = scene(h, w, self.height, self.wall_z, self.focal_frac,
                     floor=float(images[0].mean()) <= 200.0)
        out = {'depth': z if self.kind == 'nested' else z / np.float32(self.rel_scale)}
        if self.kind != 'mono':
            conf = np.full((h, w), 2.0, np.float32)
            conf[:self.low_conf_rows] = 1.0
            out.update(conf=conf, intrinsics=K.astype(np.float32),
                       extrinsics=np.eye(3, 4, dtype=np.float32))
        if self.kind != 'anyview':
            sky = np.zeros((h, w), np.float32)
            sky[:self.sky_rows] = 1.0
            out['sky'] = sky
        self._timings = {'forward': 0.0}
        return {k: np.asarray(v, np.float32) for k, v in out.items()}

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model=f'known-{self.kind}',
                          details={'kind': self.kind, 'is_metric': self.kind == 'nested'})
