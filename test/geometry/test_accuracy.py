"""Metric-depth and pose accuracy against exactly known ground truth (no scale alignment)."""
import math

import numpy as np
import pytest

from tt_depth_ros.tools.eval import accuracy as acc
from tt_depth_ros.tools.eval.scene_render import (
    default_scene,
    default_trajectory,
    intrinsics,
    render,
)


@pytest.fixture(scope='module')
def gt_depth():
    K = intrinsics(96, 72)
    _, depth = render(default_scene(), K, 96, 72, default_trajectory(1)[0])
    assert np.isposinf(depth).any() and np.isfinite(depth).any()  # sky and geometry both present
    return depth


def test_perfect_depth_scores_zero_error(gt_depth):
    m = acc.depth_metrics(gt_depth.copy(), gt_depth)
    assert m['abs_rel'] == 0.0 and m['rmse_m'] == 0.0 and m['delta1'] == 1.0
    assert m['pred_coverage'] == 1.0 and m['sky_recall'] == 1.0
    assert m['valid_pixels'] == np.isfinite(gt_depth).sum()


@pytest.mark.parametrize('scale', [1.1, 0.85, 0.75, 1.3])
def test_scale_error_shows_up_unaligned(gt_depth, scale):
    m = acc.depth_metrics(gt_depth * scale, gt_depth)
    g = gt_depth[np.isfinite(gt_depth)].astype(np.float64)
    assert m['abs_rel'] == pytest.approx(abs(scale - 1.0), rel=1e-5)
    assert m['rmse_m'] == pytest.approx(abs(scale - 1.0) * math.sqrt(np.mean(g * g)), rel=1e-5)
    ratio = max(scale, 1 / scale)
    assert m['delta1'] == (1.0 if ratio < 1.25 else 0.0)


def test_missing_predictions_lower_coverage_not_error(gt_depth):
    pred = gt_depth.copy()
    finite = np.argwhere(np.isfinite(gt_depth))
    hole = finite[: len(finite) // 4]
    pred[hole[:, 0], hole[:, 1]] = np.nan
    pred[np.isposinf(gt_depth)] = 50.0   # sky predicted as a far wall
    m = acc.depth_metrics(pred, gt_depth)
    assert m['abs_rel'] == 0.0
    assert m['pred_coverage'] == pytest.approx(1 - len(hole) / len(finite))
    assert m['sky_recall'] == 0.0


def test_shape_mismatch_is_an_error(gt_depth):
    with pytest.raises(ValueError, match='resize'):
        acc.depth_metrics(gt_depth[:-1], gt_depth)
    small = acc.resize_nearest(gt_depth, (36, 48))
    assert small.shape == (36, 48)
    assert set(np.unique(small[np.isfinite(small)])) <= set(np.unique(gt_depth))


def test_mean_metrics_skips_nan():
    m = acc.mean_metrics([{'abs_rel': 0.1}, {'abs_rel': math.nan}, {'abs_rel': 0.3}])
    assert m == {'frames': 3, 'abs_rel': pytest.approx(0.2)}


def _rot_z(deg):
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def test_pose_errors_known_values():
    poses = default_trajectory(5)
    T_gt = acc.relative_pose(poses[0], poses[4])
    exact = acc.pose_errors(T_gt, T_gt)
    assert exact['rot_err_deg'] == pytest.approx(0, abs=1e-6)
    assert exact['trans_dir_err_deg'] == pytest.approx(0, abs=1e-6)
    T_est = T_gt.copy()
    T_est[:3, :3] = T_gt[:3, :3] @ _rot_z(7.0)
    T_est[:3, 3] = 2.5 * T_gt[:3, 3]          # two-view scale is free: no direction error
    e = acc.pose_errors(T_est, T_gt)
    assert e['rot_err_deg'] == pytest.approx(7.0, abs=1e-6)
    assert e['trans_dir_err_deg'] == pytest.approx(0, abs=1e-5)
    assert e['trans_norm_ratio'] == pytest.approx(2.5)
    assert acc.translation_direction_error_deg([1, 0, 0], [0, 1, 0]) == pytest.approx(90.0)
    with pytest.raises(ValueError, match='direction'):
        acc.translation_direction_error_deg([0, 0, 0], [1, 0, 0])


def test_relative_pose_composes():
    a, b = default_trajectory(3)[0], default_trajectory(3)[2]
    np.testing.assert_allclose(a @ acc.relative_pose(a, b), b, atol=1e-12)
