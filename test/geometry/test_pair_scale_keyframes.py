"""Metric scale sources (geometry/pointmap/scale.py) and keyframe chaining (geometry/pose/)."""
import numpy as np
import pytest

from tt_depth_ros.geometry.pointmap.scale import (
    baseline_scale,
    median_ratio_scale,
    resample_depth_to_grid,
    unit_scale,
)
from tt_depth_ros.geometry.pose.keyframes import (
    KeyframeChain,
    KeyframePolicy,
    rotation_angle_deg,
)
from tt_depth_ros.geometry.pose.se3 import frame_depth_in_own_camera


def rot(axis, deg):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    a = np.radians(deg)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K


def make_T(R, t):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


# -- scale --------------------------------------------------------------------------------------
def test_baseline_scale_gives_metres():
    s = baseline_scale(np.array([0.3, 0.0, 0.4]), 0.12)
    assert s.ok and s.metric and s.source == 'baseline'
    assert s.value == pytest.approx(0.12 / 0.5)
    assert np.linalg.norm(np.array([0.3, 0, 0.4]) * s.value) == pytest.approx(0.12)


def test_baseline_scale_refuses_degenerate_translation_and_bad_baseline():
    s = baseline_scale(np.zeros(3), 0.1)
    assert not s.ok and not s.metric and 'too small' in s.reason
    for bad in (0.0, -1.0, float('nan'), float('inf')):
        with pytest.raises(ValueError, match='baseline_m'):
            baseline_scale(np.ones(3), bad)


def test_median_ratio_is_robust_to_outliers_invalid_and_masked_pixels():
    rng = np.random.default_rng(0)
    unit = rng.uniform(0.5, 3.0, (40, 50))
    metric = unit * 2.5
    metric[:5] = np.nan            # invalid
    metric[5:8] = np.inf           # sky
    metric[8:10] *= 7.0            # 10 % gross outliers
    unit_noisy = unit.copy()
    mask = np.ones(unit.shape, bool)
    mask[30:] = False
    metric[30:] = 999.0            # masked-out garbage
    s = median_ratio_scale(metric, unit_noisy, mask)
    assert s.ok and s.metric and s.source == 'depth'
    assert s.value == pytest.approx(2.5, rel=1e-9)
    assert s.support == 22 * 50      # outliers count as support; the median ignores them
    assert s.spread == pytest.approx(0.0, abs=1e-12)


def test_median_ratio_without_support_reports_why():
    ref = np.full((4, 4), np.nan)
    s = median_ratio_scale(ref, np.ones((4, 4)))
    assert not s.ok and 'valid pixels' in s.reason and s.support == 0
    with pytest.raises(ValueError, match='same grid'):
        median_ratio_scale(np.ones((3, 3)), np.ones((4, 4)))


def test_unit_scale_is_not_metric():
    assert unit_scale().value == 1.0 and not unit_scale().metric


def test_resample_depth_to_grid_identity_and_halving():
    d = np.arange(48, dtype=np.float32).reshape(6, 8)
    assert np.array_equal(resample_depth_to_grid(d, (8, 6), (0, 0, 8, 6)), d)
    half = resample_depth_to_grid(d, (4, 3), (0, 0, 4, 3))
    assert half.shape == (3, 4)
    # centre (u'+0.5)*2-0.5 = 2u'+0.5 -> rint: 2u' (ties to even) => sources 0,2,4,6
    assert np.array_equal(half, d[np.ix_([0, 2, 4], [0, 2, 4, 6])])
    crop = resample_depth_to_grid(d, (8, 6), (2, 1, 6, 5))
    assert np.array_equal(crop, d[1:5, 2:6])


# -- keyframes ------------------------------------------------------------------------------------
def test_rotation_angle():
    assert rotation_angle_deg(np.eye(3)) == pytest.approx(0.0, abs=1e-12)
    assert rotation_angle_deg(rot([0, 1, 0], 37.0)) == pytest.approx(37.0)
    assert rotation_angle_deg(rot([1, 1, 0], 179.0)) == pytest.approx(179.0)


def test_policy_reasons_and_validation():
    p = KeyframePolicy(every_n=5, max_rotation_deg=10.0, max_translation=0.5)
    small = make_T(rot([0, 1, 0], 2.0), [0.1, 0, 0])
    assert p.reason(1, small) is None
    assert 'every_n' in p.reason(5, small)
    assert 'rotation' in p.reason(1, make_T(rot([0, 1, 0], 11.0), [0, 0, 0]))
    assert 'translation' in p.reason(1, make_T(np.eye(3), [0, 0, 0.6]))
    with pytest.raises(ValueError, match='never promotes'):
        KeyframePolicy(every_n=0, max_rotation_deg=0.0, max_translation=0.0)
    with pytest.raises(ValueError, match='every_n'):
        KeyframePolicy(every_n=-1)
    with pytest.raises(ValueError, match='max_rotation_deg'):
        KeyframePolicy(max_rotation_deg=float('nan'))


def _pair_observation(T_w_key, T_w_frame, depth_key, depth_frame, pair_scale):
    """Exact DUSt3R-like outputs for a pair: z maps in pair units and the pair-unit PnP pose."""
    T_key_frame = np.linalg.inv(T_w_key) @ T_w_frame
    T_units = T_key_frame.copy()
    T_units[:3, 3] /= pair_scale
    return T_units, depth_key / pair_scale, depth_frame / pair_scale


def test_chain_recovers_trajectory_despite_per_pair_scales():
    """Every pair has its own arbitrary scale; chaining by reference depth gives one unit."""
    rng = np.random.default_rng(1)
    n = 12
    traj = [make_T(rot([0.1, 1, 0.05], 2.0 * i), [0.2 * i, 0.02 * i * i, 0.05 * i])
            for i in range(n)]
    # A fronto-parallel wall at z = 4 in the world: depth of each camera at every pixel of a grid.
    H, W = 12, 16
    u, v = np.meshgrid(np.arange(W) - 7.5, np.arange(H) - 5.5)
    rays = np.stack([u / 20.0, v / 20.0, np.ones_like(u)], -1)

    def depth_of(T_w_c):
        # plane z_w = 4: o_z + s * (R d)_z = 4 -> s = planar depth since d_z = 1 in the camera
        dz = rays @ T_w_c[:3, :3][2]
        return ((4.0 - T_w_c[2, 3]) / dz).astype(np.float64)

    chain = KeyframeChain(KeyframePolicy(every_n=3, max_rotation_deg=0.0))
    chain.start('f0', 0)
    mask = np.ones((H, W), bool)
    key_index = 0
    unit = None
    for i in range(1, n):
        kf = chain.keyframe
        s_pair = rng.uniform(0.3, 3.0)
        T_units, z_key, z_frame = _pair_observation(traj[kf.stamp_ns], traj[i],
                                                    depth_of(traj[kf.stamp_ns]), depth_of(traj[i]),
                                                    s_pair)
        scale = chain.pair_scale(z_key, mask)
        assert scale.ok and not scale.metric
        if unit is None:
            unit = s_pair        # the first pair defines the trajectory unit
        assert scale.value == pytest.approx(s_pair / unit, rel=1e-6)  # float32 reference
        # frame depth as the node computes it: z of view-2 points (in key frame) in view 2
        pts_frame_cam = rays * z_frame[..., None]
        R, t = T_units[:3, :3], T_units[:3, 3]
        pts_in_key = pts_frame_cam @ R.T + t
        zf = frame_depth_in_own_camera(pts_in_key, T_units)
        assert np.allclose(zf, z_frame, rtol=1e-5)
        step = chain.track(T_units, scale, f'f{i}', i, frame_depth=zf, frame_mask=mask)
        expect = traj[i].copy()
        expect[:3, 3] /= unit
        assert np.allclose(step.T_odom_frame, expect, atol=1e-5), i
        if step.promoted:
            key_index += 1
            assert chain.keyframe.stamp_ns == i and chain.keyframe.index == key_index
    assert chain.keyframes_made == 1 + (n - 1) // 3
    assert len(chain.history) == n


def test_chain_with_metric_reference_is_metric_and_requires_scale():
    chain = KeyframeChain(KeyframePolicy(every_n=1), min_scale_support=10)
    chain.start('f0', 0, ref_depth=np.full((4, 4), 2.0), ref_metric=True)
    s = chain.pair_scale(np.full((4, 4), 0.5), np.ones((4, 4), bool))
    assert s.metric and s.value == pytest.approx(4.0)
    with pytest.raises(ValueError, match='without a scale'):
        chain.track(np.eye(4), median_ratio_scale(np.full((4, 4), np.nan), np.ones((4, 4))), 'x', 1)
    step = chain.track(make_T(np.eye(3), [0, 0, 0.25]), s, 'f1', 1,
                       frame_depth=np.full((4, 4), 0.25), frame_mask=np.ones((4, 4), bool))
    assert step.T_odom_frame[2, 3] == pytest.approx(1.0) and step.promoted
    assert chain.keyframe.ref_metric and np.allclose(chain.keyframe.ref_depth, 1.0)


def test_chain_needs_start():
    with pytest.raises(RuntimeError, match='start'):
        KeyframeChain(KeyframePolicy()).pair_scale(np.ones((2, 2)), np.ones((2, 2), bool))
