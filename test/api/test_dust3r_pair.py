"""Dust3rPredictor: real tiny engine through the API (golden parity) and known-geometry pairs.

The known-geometry engine is a test double that renders the pointmaps a perfect DUSt3R would
return for a known scene and motion on the network grid; it checks everything around the network
(preprocessing, intrinsics mapping, padding masks, focal estimation, PnP, scale, files).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from support.dust3r_data import assert_gates, batched, fixture, pair_u8, tiny_state_dict
from tt_depth_ros.api import Dust3rPredictor, PairResult
from tt_depth_ros.engines.base import Engine, EngineInfo, check_views
from tt_depth_ros.geometry.pose.se3 import R_from_quat, angle_deg
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import map_intrinsics, network_size

CAM_W, CAM_H = 640, 480
K_CAM = np.array([[500.0, 0, 321.3], [0, 505.0, 238.9], [0, 0, 1]])


def _rot(axis, deg):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return R_from_quat(np.r_[axis * np.sin(np.radians(deg) / 2), np.cos(np.radians(deg) / 2)])


def scene_depth(u, v):
    """Depth along the optical axis for normalised image coords (u, v): a bumpy wall + step."""
    return 3.0 + 0.7 * np.sin(2.0 * u + 0.4) * np.cos(1.5 * v) + 0.5 * u + 1.2 * (v > 0.1)


def _cam_points(K, hw):
    ys, xs = np.mgrid[0:hw[0], 0:hw[1]].astype(float)
    u, v = (xs - K[0, 2]) / K[0, 0], (ys - K[1, 2]) / K[1, 1]
    z = scene_depth(u, v)
    return np.stack((u * z, v * z, z), axis=-1)


class KnownGeometryEngine(Engine):
    """Returns exact pointmaps for camera 1 = identity, camera 2 -> camera 1 = (R, t)."""

    num_views = 2

    def __init__(self, K1_net, K2_net, R, t):
        self.K1_net, self.K2_net, self.R, self.t = K1_net, K2_net, R, t
        self.calls = []

    def prepare(self, shape):
        pass

    def infer(self, *images):
        hw = check_views(images, 2)
        self.calls.append(images)
        pts1 = _cam_points(self.K1_net, hw)
        pts2 = _cam_points(self.K2_net, hw) @ self.R.T + self.t
        conf = np.full(hw, 10.0, np.float32)
        return {'pts3d_1': pts1.astype(np.float32), 'pts3d_2': pts2.astype(np.float32),
                'conf_1': conf, 'conf_2': conf.copy()}

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo('test-double', 'cpu', 'float32', 'known-geometry')


def _images(w=CAM_W, h=CAM_H):
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
            rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


R_TRUE, T_TRUE = _rot([0.2, 1, 0.1], 7.0), np.array([0.25, -0.05, 0.08])


@pytest.mark.parametrize('mode', ['crop', 'pad'])
def test_pose_and_scale_with_camera_intrinsics(mode, tmp_path):
    plan = network_size(CAM_W, CAM_H, mode=mode)
    Kn = map_intrinsics(K_CAM, plan)
    eng = KnownGeometryEngine(Kn, Kn, R_TRUE, T_TRUE)
    pred = Dust3rPredictor(eng, mode=mode)
    r = pred(*_images(), K1=K_CAM, K2=K_CAM, baseline_m=0.5)
    assert isinstance(r, PairResult) and r.pose.success and r.pose.focal_source == 'intrinsics'
    assert angle_deg(r.pose.R.T @ R_TRUE) <= 0.1
    assert np.linalg.norm(r.pose.t / np.linalg.norm(r.pose.t) - T_TRUE / np.linalg.norm(T_TRUE)) \
        <= 0.01
    assert r.scale_source == 'baseline' and r.metric
    assert np.linalg.norm(r.pose.t) == pytest.approx(0.5, rel=1e-9)
    assert r.scale == pytest.approx(0.5 / np.linalg.norm(T_TRUE), rel=1e-3)
    # padding is masked out of every output
    assert r.valid_1.sum() == 512 * 384
    assert np.isnan(r.pts3d_1[~r.valid_1]).all() and np.isnan(r.depth_1[~r.valid_1]).all()
    # depth_2 is view 2's own z (in camera 2), scaled like everything else
    np.testing.assert_allclose(r.depth_2[r.valid_2],
                               r.scale * _cam_points(Kn, plan.net_hw)[..., 2][r.valid_2],
                               rtol=1e-4)
    # files
    n = r.save_ply(tmp_path / 'pair.ply')
    assert n == 2 * 512 * 384
    r.save_npz(tmp_path / 'pair.npz')
    with np.load(tmp_path / 'pair.npz') as z:
        np.testing.assert_allclose(z['T_cam1_cam2'][:3, 3], r.pose.t)
        assert str(z['scale_source']) == 'baseline'
    r.save_json(tmp_path / 'pair.json')
    js = json.loads((tmp_path / 'pair.json').read_text())
    assert js['pose']['success'] and js['units'] == 'metres' and js['scale_source'] == 'baseline'
    assert js['preprocess'][0]['mode'] == mode


def test_without_intrinsics_focal_is_estimated_and_reported():
    K = np.array([[480.0, 0, 319.5], [0, 480.0, 239.5], [0, 0, 1]])
    plan = network_size(CAM_W, CAM_H)
    Kn = map_intrinsics(K, plan)
    r = Dust3rPredictor(KnownGeometryEngine(Kn, Kn, R_TRUE, T_TRUE))(*_images())
    assert r.pose.success and r.pose.focal_source == 'estimated'
    assert r.K2_net[0, 0] == pytest.approx(Kn[0, 0], rel=1e-3)
    assert angle_deg(r.pose.R.T @ R_TRUE) <= 0.2
    assert r.scale_source == 'none' and not r.metric and r.scale == 1.0


def test_scale_from_metric_depth_and_explicit_scale():
    plan = network_size(CAM_W, CAM_H)
    Kn = map_intrinsics(K_CAM, plan)
    eng = KnownGeometryEngine(Kn, Kn, R_TRUE, T_TRUE)
    metric = 2.5 * _cam_points(K_CAM, (CAM_H, CAM_W))[..., 2]   # "DA3" depth of image 1
    r = Dust3rPredictor(eng)(*_images(), K2=K_CAM, metric_depth_1=metric)
    assert r.scale_source == 'depth' and r.scale == pytest.approx(2.5, rel=1e-2)
    assert np.linalg.norm(r.pose.t) == pytest.approx(2.5 * np.linalg.norm(T_TRUE), rel=2e-2)
    r = Dust3rPredictor(eng)(*_images(), K2=K_CAM, scale=3.0, scale_source='lidar')
    assert (r.scale, r.scale_source) == (3.0, 'lidar')
    with pytest.raises(ValueError, match='at most one'):
        Dust3rPredictor(eng)(*_images(), scale=2.0, baseline_m=0.1)
    with pytest.raises(ValueError, match='positive'):
        Dust3rPredictor(eng)(*_images(), scale=-1.0)


def test_failed_pose_is_reported_and_baseline_scale_not_applied():
    plan = network_size(CAM_W, CAM_H)
    Kn = map_intrinsics(K_CAM, plan)

    class Unconfident(KnownGeometryEngine):
        def infer(self, *images):
            out = super().infer(*images)
            out['conf_2'][:] = 1.5
            return out

    r = Dust3rPredictor(Unconfident(Kn, Kn, R_TRUE, T_TRUE))(*_images(), K2=K_CAM,
                                                              baseline_m=0.3)
    assert not r.pose.success and r.pose.R is None and 'too few' in r.pose.reason
    assert r.scale_source == 'none' and 'pose failed' in r.scale_note and r.depth_2 is None
    assert r.summary()['pose']['success'] is False


def test_bad_inputs():
    plan = network_size(CAM_W, CAM_H)
    Kn = map_intrinsics(K_CAM, plan)
    pred = Dust3rPredictor(KnownGeometryEngine(Kn, Kn, R_TRUE, T_TRUE))
    a, _ = _images()
    b, _ = _images(480, 640)
    with pytest.raises(ValueError, match='different network sizes'):
        pred(a, b)
    r = Dust3rPredictor(KnownGeometryEngine(Kn, Kn, R_TRUE, T_TRUE), mode='pad')(a, b, pose=False)
    assert r.pose is None and r.valid_2[:, :64].sum() == 0   # portrait letterboxed
    with pytest.raises(ValueError, match='too small'):
        pred(a, np.zeros((8, 8, 3), np.uint8))
    K = K_CAM.copy()
    K[1, 2] = np.nan
    with pytest.raises(ValueError, match='NaN'):
        pred(a, a, K1=K)
    with pytest.raises(ValueError, match='uint8'):
        pred(a.astype(np.float32), a)


def test_real_tiny_engine_through_the_api_matches_upstream():
    """384x512 views are already network-sized (Pillow keeps them), so the API must be exact."""
    with Dust3rPredictor.from_pretrained('dust3r-tiny', dtype='float32', backend='torch-cpu',
                                         state_dict=tiny_state_dict()) as pred:
        r = pred(*pair_u8('384x512'), pose=True)
    out = {'pts3d_1': r.pts3d_1, 'pts3d_2': r.pts3d_2, 'conf_1': r.conf_1, 'conf_2': r.conf_2}
    assert_gates(batched(out), fixture('tiny_384x512_grid4'), raw=False)
    assert r.backend == 'torch-cpu' and r.pose is not None   # random weights: success not implied
    assert r.pose.success or r.pose.reason
