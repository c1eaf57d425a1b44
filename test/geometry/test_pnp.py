"""PnP-RANSAC relative pose on rendered pointmaps with known motion (docs/dust3r.md §7.2)."""
from __future__ import annotations

import numpy as np
import pytest

from tt_depth_ros.geometry.pose.pnp import solve_relative_pose
from tt_depth_ros.geometry.pose.se3 import R_from_quat, angle_deg, invert_T, make_T, quat_from_R

H, W = 96, 128
K2 = np.array([[110.0, 0, 63.2], [0, 112.0, 47.9], [0, 0, 1]])


def _rot(axis, deg):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    h = np.radians(deg) / 2
    return R_from_quat(np.r_[axis * np.sin(h), np.cos(h)])


def render_view2(R_12, t_12, scene='bumpy', noise=0.0, outliers=0.0, seed=0):
    """Pointmap of camera 2's pixels in camera-1 coordinates: x1 = R_12 x2 + t_12.

    The scene is a depth field seen from camera 2 (bumpy surface or a plane); noise is relative
    Gaussian noise on the points, `outliers` a fraction of pixels replaced by random points that
    still look confident; a low-confidence band carries garbage that must be masked out.
    """
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:H, 0:W].astype(float)
    u, v = (xs - K2[0, 2]) / K2[0, 0], (ys - K2[1, 2]) / K2[1, 1]
    if scene == 'bumpy':
        z = 3.0 + 0.8 * np.sin(2.1 * u + 0.3) * np.cos(1.7 * v) + 0.6 * u + 1.5 * (v > 0.15)
    else:  # a tilted plane n.x = d
        n, d = np.array([0.2, -0.3, 1.0]), 3.0
        z = d / (n[0] * u + n[1] * v + n[2])
    x2 = np.stack((u * z, v * z, z), axis=-1)
    x1 = x2 @ R_12.T + t_12
    x1 *= 1 + noise * rng.standard_normal(x1.shape)
    conf = 1.0 + 20.0 * rng.random((H, W))
    if outliers:
        bad = rng.random((H, W)) < outliers
        x1[bad] = rng.uniform(-5, 5, (bad.sum(), 3)) + [0, 0, 5]
    conf[:, :6] = 1.2                  # low-confidence band with garbage points
    x1[:, :6] = rng.uniform(-50, 50, (H, 6, 3))
    return x1.astype(np.float32), conf.astype(np.float32)


MOTIONS = [
    (_rot([0, 1, 0], 5.0), np.array([0.3, 0.0, 0.05])),        # stereo-like sideways
    (_rot([1, 0.2, 0], -8.0), np.array([-0.1, 0.2, 0.4])),      # forward with tilt
    (_rot([0.3, 1, 0.5], 15.0), np.array([0.5, -0.1, -0.2])),
    (_rot([0, 0, 1], 25.0), np.array([0.05, 0.3, 0.1])),        # strong roll
    (_rot([1, 1, 1], 3.0), np.array([-0.6, 0.02, 0.0])),
]


def _errors(res, R, t):
    rot_err = angle_deg(res.R.T @ R)
    dir_err = np.linalg.norm(res.t / np.linalg.norm(res.t) - t / np.linalg.norm(t))
    return rot_err, dir_err


@pytest.mark.parametrize('i', range(len(MOTIONS)))
@pytest.mark.parametrize('noise,outliers', [(0.0, 0.0), (0.001, 0.2)])
def test_recovers_known_motion(i, noise, outliers):
    R, t = MOTIONS[i]
    pts, conf = render_view2(R, t, noise=noise, outliers=outliers, seed=i)
    res = solve_relative_pose(pts, conf, K2)
    assert res.success, res.reason
    rot_err, dir_err = _errors(res, R, t)
    assert rot_err <= 0.1, rot_err
    assert dir_err <= 0.01, dir_err
    # scale-free but consistent: the magnitude is in pointmap units
    assert np.linalg.norm(res.t) == pytest.approx(np.linalg.norm(t), rel=0.02)
    assert res.num_points == int((conf > 3).sum())
    assert res.inlier_ratio >= (0.75 if outliers else 0.999)
    assert res.reproj_error_px < (2.0 if noise else 1e-3)
    np.testing.assert_allclose(res.T[:3, :3], res.R)
    # deterministic (fixed RANSAC seed)
    again = solve_relative_pose(pts, conf, K2)
    np.testing.assert_array_equal(again.R, res.R)


def test_planar_scene_is_solved_or_fails_explicitly():
    R, t = MOTIONS[1]
    pts, conf = render_view2(R, t, scene='plane', noise=0.0005, outliers=0.1)
    res = solve_relative_pose(pts, conf, K2)
    if res.success:
        rot_err, dir_err = _errors(res, R, t)
        assert rot_err <= 0.1 and dir_err <= 0.01
    else:
        assert res.reason and res.R is None and res.t is None


def test_valid_mask_excludes_pixels():
    R, t = MOTIONS[0]
    pts, conf = render_view2(R, t)
    mask = np.zeros((H, W), bool)
    mask[20:70, 30:100] = True
    res = solve_relative_pose(pts, conf, K2, valid_mask=mask)
    assert res.success and res.num_points == int((mask & (conf > 3)).sum())


def test_degenerate_inputs_fail_explicitly():
    R, t = MOTIONS[0]
    pts, conf = render_view2(R, t)
    low = solve_relative_pose(pts, np.full_like(conf, 2.5), K2)
    assert not low.success and 'too few' in low.reason and low.R is None and low.t is None
    with pytest.raises(ValueError, match='no pose'):
        _ = low.T
    nan = solve_relative_pose(np.full_like(pts, np.nan), conf, K2)
    assert not nan.success and 'too few' in nan.reason
    line = pts.copy()
    line[...] = np.linspace(0, 1, H * W)[:, None].reshape(H, W, 1) * [1.0, 2.0, 3.0] + [0, 0, 2]
    col = solve_relative_pose(line, conf, K2)
    assert not col.success and 'collinear' in col.reason
    few = conf.copy()
    few[:] = 1.0
    few[40, 40:50] = 10.0
    assert 'too few' in solve_relative_pose(pts, few, K2).reason
    junk = np.random.default_rng(1).uniform(-5, 5, pts.shape).astype(np.float32)
    inconsistent = solve_relative_pose(junk, conf, K2)
    assert not inconsistent.success and inconsistent.R is None
    assert 'inlier' in inconsistent.reason or 'no consistent' in inconsistent.reason
    d = solve_relative_pose(pts, conf, K2, conf_threshold=1e9).to_dict()
    assert d['success'] is False and d['R'] is None and d['rotation_deg'] is None


def test_bad_arguments_raise():
    R, t = MOTIONS[0]
    pts, conf = render_view2(R, t)
    K = K2.copy()
    K[0, 0] = np.nan
    with pytest.raises(ValueError, match='K2_net'):
        solve_relative_pose(pts, conf, K)
    with pytest.raises(ValueError, match='conf_2'):
        solve_relative_pose(pts, conf[:-1], K2)
    with pytest.raises(ValueError, match='pts3d_2'):
        solve_relative_pose(pts[..., :2], conf, K2)


def test_se3_helpers_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.standard_normal(4)
        q /= np.linalg.norm(q)
        q = q if q[3] >= 0 else -q
        R = R_from_quat(q)
        np.testing.assert_allclose(quat_from_R(R), q, atol=1e-12)
        T = make_T(R, rng.standard_normal(3))
        np.testing.assert_allclose(invert_T(T) @ T, np.eye(4), atol=1e-12)
    assert angle_deg(_rot([0, 0, 1], 30)) == pytest.approx(30)
    assert angle_deg(_rot([1, 0, 0], 179.9)) == pytest.approx(179.9)
    np.testing.assert_allclose(quat_from_R(_rot([1, 0, 0], 180)), [1, 0, 0, 0], atol=1e-12)
    with pytest.raises(ValueError):
        R_from_quat([0, 0, 0, 0])
