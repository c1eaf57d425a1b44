"""Engines for the pair-node tests, selected only via the documented `engine_plugin` parameter.

`SceneDust3rEngine` is a test double for the NETWORK ONLY: for two network images it returns the
exact DUSt3R outputs of a known scene seen from known poses (both pointmaps in camera 1, divided by
an arbitrary per-pair scale as DUSt3R's normalisation would), so poses, TF, scale and clouds can be
checked against ground truth through the real ROS path. Which pose an image shows is read from a
frame id the simulator stamps into pixel (0, 0): R + 256 * G, with B = ID_MARK.

`tiny_dust3r_engine` is the real path: the DUSt3R engine with the tiny config and rule-v1 weights.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from tt_depth_ros.engines.base import Engine, EngineInfo, check_views
from tt_depth_ros.tools.eval.scene_render import (
    R_WORLD_OPTICAL_LEVEL,
    camera_pose,
    default_scene,
    default_trajectory,
    intrinsics,
    render,
)

ID_MARK = 0xA5
DATA = Path(__file__).resolve().parents[2] / 'data' / 'dust3r'


def make_T(R, t):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


def rot_y(deg):
    a = np.radians(deg)
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


# Ground truth shared by the simulator (test process) and the engine (node process).
STEREO_T_1_2 = make_T(rot_y(-3.0), [0.12, 0.004, -0.01])   # camera 2 in camera 1, metres


def stereo_poses(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(T_world_cam1, T_world_cam2) per stereo frame id: the rig walking along the corridor."""
    return [(T, T @ STEREO_T_1_2) for T in default_trajectory(n, step_m=0.15)]


def temporal_poses(n: int) -> list[np.ndarray]:
    """T_world_cam per temporal frame id (forward walk with yaw sway)."""
    return default_trajectory(n, step_m=0.08)


def rot_y_rad(a):
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def rot_z_rad(a):
    return np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])


# A robot (REP 103 base_link: x forward, z up) with a camera mounted offset and pitched down
# 0.15 rad: base_link -> camera_link (URDF-style) -> camera_optical_frame (z forward).
MOUNT_BASE_LINK = make_T(rot_y_rad(0.15), [0.25, -0.05, 0.9])
LINK_OPTICAL = make_T(R_WORLD_OPTICAL_LEVEL, [0.0, 0.0, 0.0])


def robot_base_poses(n: int) -> list[np.ndarray]:
    """T_world_base per frame id: driving forward on flat ground while turning gently."""
    return [make_T(rot_z_rad(0.1 * np.sin(0.6 * i)), [0.3 + 0.12 * i, 0.15 * np.sin(0.4 * i), 0])
            for i in range(n)]


def pose_of(mode: str, frame_id: int, view: int, n: int = 64) -> np.ndarray:
    """World pose of `view` (0 or 1) for a frame id; temporal and robot ignore `view`."""
    if mode == 'stereo':
        return stereo_poses(n)[frame_id][view]
    if mode == 'robot':    # the robot's camera (temporal mode of the node)
        return robot_base_poses(n)[frame_id] @ MOUNT_BASE_LINK @ LINK_OPTICAL
    return temporal_poses(n)[frame_id]


def stamp_id(rgb: np.ndarray, frame_id: int) -> np.ndarray:
    out = rgb.copy()
    out[0, 0] = (frame_id % 256, frame_id // 256, ID_MARK)
    return out


def read_id(rgb: np.ndarray) -> int:
    r, g, b = (int(x) for x in rgb[0, 0])
    if b != ID_MARK:
        raise ValueError(f'image carries no frame id (pixel (0,0) = {(r, g, b)})')
    return r + 256 * g


CAM_MARK = 0x5A
ID_BLOCK = 16   # side of the id mark block for views that are resized or rectified


def stamp_camera(rgb: np.ndarray, camera: int) -> np.ndarray:
    """Mark which rig camera (0 or 1) took the image, in pixel (0, 1): (camera, 0, CAM_MARK)."""
    out = rgb.copy()
    out[0, 1] = (camera, 0, CAM_MARK)
    return out


def read_camera(rgb: np.ndarray, default: int) -> int:
    """The rig camera marked by `stamp_camera`, else `default` (the view position)."""
    return int(rgb[0, 1, 0]) if int(rgb[0, 1, 2]) == CAM_MARK else default


def render_view(mode: str, frame_id: int, view: int, width: int, height: int,
                hfov_deg: float = 70.0):
    """(rgb with id, depth) of one camera image for the simulator."""
    K = intrinsics(width, height, hfov_deg)
    rgb, depth = render(default_scene(), K, width, height, pose_of(mode, frame_id, view))
    return stamp_id(rgb, frame_id), depth, K


class SceneDust3rEngine(Engine):
    """Exact synthetic DUSt3R outputs for the known scene and poses (see module docstring).

    Args:
        mode: 'stereo' (id -> rig pose, view 2 = camera 2) or 'temporal' (id -> trajectory pose).
        hfov_deg: the simulator's horizontal field of view (K on the network grid follows from
            it because the tests choose camera sizes the preprocessing maps 1:1).
        scale_seed: per-pair DUSt3R scale = median view-1 depth * U(0.5, 2) from this seed and ids.
        delay_s: sleep per infer (engine rate for overload tests).
        fail_prepare: raise in prepare() this many times in this process.
        garbage_ids: frame ids of view 2 for which the pointmap is random (PnP must fail).
        hfov2_deg: field of view of rig camera 2 when it differs; images marked with
            `stamp_camera` are then rendered by their own camera whatever the view order.
        depth_code_step: when set, the pointmaps come from what the images SHOW: planar depth
            read from the red channel in steps of this many metres (blue 255 = sky; the
            simulator's `encode_depth`), back-projected with the pinhole K of the network grid.
            A wrongly rectified image then gives a wrong pointmap, as it would for the network.
    """

    num_views = 2
    _prepare_failures = 0

    def __init__(self, mode: str = 'stereo', hfov_deg: float = 70.0, scale_seed: int = 7,
                 delay_s: float = 0.0, fail_prepare: int = 0, garbage_ids=(),
                 hfov2_deg: float | None = None, depth_code_step: float | None = None):
        self.depth_code_step = depth_code_step
        self.mode, self.hfov, self.seed = mode, float(hfov_deg), int(scale_seed)
        self.hfovs = (self.hfov, self.hfov if hfov2_deg is None else float(hfov2_deg))
        self.delay_s, self.fail_prepare = float(delay_s), int(fail_prepare)
        self.garbage_ids = set(int(i) for i in garbage_ids)
        self._timings = {}

    def prepare(self, shape):
        if SceneDust3rEngine._prepare_failures < self.fail_prepare:
            SceneDust3rEngine._prepare_failures += 1
            raise RuntimeError('injected prepare failure')

    def _points(self, K, h, w, T_world_cam, image=None):
        if self.depth_code_step is None:
            _, depth = render(default_scene(), K, w, h, T_world_cam)
        else:   # what the image shows (the id block in the corner carries no depth)
            img = image.astype(np.float64)
            depth = np.where(img[..., 2] > 127, np.inf, img[..., 0] * self.depth_code_step)
            depth[:ID_BLOCK, :ID_BLOCK] = np.inf
            depth[depth <= 0] = np.inf
        v, u = np.mgrid[0:h, 0:w].astype(np.float64)
        sky = ~np.isfinite(depth)
        d = np.where(sky, 1e3, depth)
        pts = np.stack([(u - K[0, 2]) / K[0, 0] * d, (v - K[1, 2]) / K[1, 1] * d, d], -1)
        return pts, sky

    def infer(self, *images):
        h, w = check_views(images, 2)
        t0 = time.perf_counter()
        if self.delay_s:
            time.sleep(self.delay_s)
        id1, id2 = read_id(images[0]), read_id(images[1])
        cam1, cam2 = read_camera(images[0], 0), read_camera(images[1], 1)
        T_w1 = pose_of(self.mode, id1, cam1)
        T_w2 = pose_of(self.mode, id2, cam2)
        p1, sky1 = self._points(intrinsics(w, h, self.hfovs[cam1]), h, w, T_w1, images[0])
        p2, sky2 = self._points(intrinsics(w, h, self.hfovs[cam2]), h, w, T_w2, images[1])
        T_12 = np.linalg.inv(T_w1) @ T_w2
        p2 = p2 @ T_12[:3, :3].T + T_12[:3, 3]
        rng = np.random.default_rng([self.seed, id1, id2])
        s = float(np.median(p1[~sky1][:, 2])) * rng.uniform(0.5, 2.0)
        conf1 = np.where(sky1, 1.0, 10.0).astype(np.float32)
        conf2 = np.where(sky2, 1.0, 10.0).astype(np.float32)
        if id2 in self.garbage_ids:
            p2 = rng.normal(size=p2.shape) * 5.0
        self._timings = {'forward': time.perf_counter() - t0}
        return {'pts3d_1': (p1 / s).astype(np.float32), 'pts3d_2': (p2 / s).astype(np.float32),
                'conf_1': conf1, 'conf_2': conf2}

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model='scene-dust3r', details={'kind': 'pointmap'})


def tiny_dust3r_engine(backend: str = 'torch-cpu'):
    """The real DUSt3R engine, tiny config, rule-v1 weights (bit-exact with the golden tiny)."""
    import torch

    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.models.weight_rule import rule_v1_state_dict

    keys = json.loads((DATA / 'tiny_config.json').read_text())['state_dict_keys']
    sd = rule_v1_state_dict({k: tuple(s) for k, s in keys})
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}
    return build_engine('dust3r-tiny', state_dict=sd, backend=backend, dtype='float32')


__all__ = ['SceneDust3rEngine', 'tiny_dust3r_engine', 'render_view', 'pose_of', 'camera_pose',
           'STEREO_T_1_2', 'read_id', 'stamp_id', 'stamp_camera', 'read_camera']
