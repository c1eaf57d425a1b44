"""Test double for the NETWORK ONLY: a DA3 any-view / NESTED engine over N views of the known scene.

Selected through `engine_plugin: 'support.fake_engines.scene_anyview:SceneAnyviewEngine'`. For the
views (frame id in pixel (0, 0), as pair_scene reads it) it returns what a perfect any-view network
would: each view's planar depth of the ray-cast scene, confidence (10, sky 1 with depth 1000), the
exact intrinsics on the network grid, and world-to-camera extrinsics in a network world frame that
is NOT camera 1 (a fixed rigid offset G), so the node's conversion to "camera 2 in camera 1" is
exercised, and the ray head's maps of the same cameras (test/support/ray_maps.py, unit-length
directions; confidence as the depth's). Relative kinds divide depth and translations by a per-call
scale (any-view depth is defined up to one factor); 'nested' returns metres, with the ray origins in
an any-view unit and the `scale_factor` that makes them metres, as NESTED does. `decoder_error_deg`
rotates the camera decoder's extrinsics, so a test can tell which of the two pose estimates the node
used.
"""
from __future__ import annotations

import time

import numpy as np

from support.fake_engines.pair_scene import make_T, pose_of, read_id, rot_y
from support.ray_maps import cell_pixel_indices, pinhole_ray_map
from tt_depth_ros.engines.base import Engine, EngineInfo, check_views
from tt_depth_ros.geometry.preprocess.da3_preprocess import scale_intrinsics
from tt_depth_ros.tools.eval.scene_render import default_scene, intrinsics, render

G_NET_WORLD = make_T(rot_y(20.0), [0.4, -0.2, 1.5])   # network world <- simulator world
NESTED_ANYVIEW_UNIT = 0.5     # NESTED's ray origins x this scale_factor = metres


class SceneAnyviewEngine(Engine):
    """Exact any-view outputs for the known scene and poses (module docstring).

    Args:
        mode: 'stereo' (view i = camera i of the rig) or 'temporal' (id -> trajectory pose).
        kind: 'anyview' (relative) or 'nested' (metres).
        camera_wh: the simulator's camera size (its K, mapped to the network grid, is exact).
        hfov_deg: the simulator's horizontal field of view.
        views: views per call.
        scale_seed: seed of the per-call relative scale.
        decoder_error_deg: rotation error put into every decoder extrinsic (about y).
    """

    def __init__(self, mode: str = 'stereo', kind: str = 'anyview', camera_wh=(112, 84),
                 hfov_deg: float = 70.0, views: int = 2, scale_seed: int = 3,
                 decoder_error_deg: float = 0.0):
        self.mode, self.kind, self.hfov = mode, kind, float(hfov_deg)
        self.decoder_error = make_T(rot_y(float(decoder_error_deg)), [0.0, 0.0, 0.0])
        self.camera_wh, self.num_views, self.seed = tuple(camera_wh), int(views), int(scale_seed)
        self._timings = {}

    def prepare(self, shape):
        pass

    def infer(self, *images):
        h, w = check_views(images, self.num_views)
        t0 = time.perf_counter()
        ids = [read_id(im) for im in images]
        if self.num_views > 2:
            print(f'anyview-double views {ids}', flush=True)   # the window test reads this
        K = scale_intrinsics(intrinsics(*self.camera_wh, self.hfov), self.camera_wh, (w, h))
        rng = np.random.default_rng([self.seed, *ids])
        s = 1.0 if self.kind == 'nested' else float(rng.uniform(0.3, 3.0))
        depth, conf, ext, rays, ray_conf = [], [], [], [], []
        ray_unit = s * (NESTED_ANYVIEW_UNIT if self.kind == 'nested' else 1.0)
        rows, cols = cell_pixel_indices((h, w))
        for i, fid in enumerate(ids):
            T_w_c = pose_of(self.mode, fid, i)
            _, d = render(default_scene(), K, w, h, T_w_c)
            sky = ~np.isfinite(d)
            depth.append(np.where(sky, 1e3, d) / s)
            conf.append(np.where(sky, 1.0, 10.0))
            E = np.linalg.inv(G_NET_WORLD @ T_w_c @ self.decoder_error)[:3]
            E[:, 3] /= s
            ext.append(E)
            rays.append(pinhole_ray_map(K, (h, w), G_NET_WORLD @ T_w_c, length='unit',
                                        unit=ray_unit))
            ray_conf.append(conf[-1][rows][:, cols])
        self._timings = {'forward': time.perf_counter() - t0}
        f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
        out = {'depth': f32(depth), 'conf': f32(conf), 'intrinsics': f32([K] * len(ids)),
               'extrinsics': f32(ext), 'ray': f32(rays), 'ray_conf': f32(ray_conf)}
        if self.kind == 'nested':
            out['scale_factor'] = np.float32(NESTED_ANYVIEW_UNIT)
        return out

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model=f'scene-{self.kind}',
                          details={'kind': self.kind, 'is_metric': self.kind == 'nested'})
