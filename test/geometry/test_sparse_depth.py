"""Points onto a depth grid (projection + z-buffer) and the robust sparse fits of the scale."""
import numpy as np
import pytest

from tt_depth_ros.geometry.depth.sparse_depth import (
    grid_points,
    project_points,
)
from tt_depth_ros.geometry.depth.sparse_fit import (
    affine_inverse_fit,
    apply_fit,
    gated_ratio_scale,
)
from tt_depth_ros.geometry.pose.se3 import make_T

K = np.array([[50.0, 0.0, 31.5], [0.0, 50.0, 23.5], [0.0, 0.0, 1.0]])
H, W = 48, 64


def _on_pixel(u, v, z):
    """The optical-frame point that projects onto pixel (u, v) at depth z."""
    return [(u - K[0, 2]) * z / K[0, 0], (v - K[1, 2]) * z / K[1, 1], z]


def test_zbuffer_keeps_the_nearest_and_drops_behind_and_outside():
    box = [_on_pixel(u, v, 2.0) for u in range(20, 30) for v in range(10, 20)]
    wall = [_on_pixel(u, v, 5.0) for u in range(10, 40) for v in range(5, 25)]
    behind = [[0.1, 0.1, -3.0], [0.0, 0.0, 0.0]]               # behind / on the camera plane
    outside = [_on_pixel(-3, 10, 4.0), _on_pixel(70, 10, 4.0), _on_pixel(5, 60, 4.0)]
    pts = np.array(wall + box + behind + outside + [[np.nan, 0.0, 3.0]])
    rng = np.random.default_rng(0)
    for order in (np.arange(len(pts)), rng.permutation(len(pts))):   # any order: same winner
        sparse = project_points(pts[order], K, (H, W))
        dense = sparse.dense()
        assert len(np.unique(sparse.index)) == len(sparse.index)      # each pixel once
        np.testing.assert_array_equal(dense[10:20, 20:30], 2.0)     # the box hides the wall
        wall_only = np.zeros((H, W), bool)
        wall_only[5:25, 10:40] = True
        wall_only[10:20, 20:30] = False
        np.testing.assert_array_equal(dense[wall_only], 5.0)
        assert np.isfinite(dense).sum() == 30 * 20                  # nothing else landed


def test_a_lattice_bounds_the_pixels_and_keeps_occlusion_exact():
    rng = np.random.default_rng(5)
    box = [_on_pixel(u, v, 2.0) for u in range(20, 30) for v in range(10, 20)]
    wall = [_on_pixel(u, v, 5.0 + 0.01 * v) for u in range(0, 64) for v in range(0, 48)]
    jitter = [_on_pixel(u + 0.3, v - 0.3, 4.0) for u, v in zip(rng.integers(0, 63, 400),
                                                              rng.integers(1, 48, 400))]
    pts = np.array(wall + box + jitter + [[0.0, 0.0, -1.0]])[rng.permutation(len(wall) + 501)]
    full = project_points(pts, K, (H, W))
    sparse = project_points(pts, K, (H, W), max_pixels=300)
    assert full.in_view == sparse.in_view == len(pts) - 1
    k = 16                                   # 3572 points in view: 1/16 leaves <= 300
    u, v = sparse.index % W, sparse.index // W
    assert np.all((u + v) % k == 0) and len(np.unique(sparse.index)) == sparse.index.size
    # every lattice pixel a point landed on is there, with the nearest point's depth
    on_lattice = full.index[(full.index % W + full.index // W) % k == 0]
    np.testing.assert_array_equal(np.sort(sparse.index), np.sort(on_lattice))
    np.testing.assert_array_equal(sparse.dense()[np.isfinite(sparse.dense())],
                                  full.dense()[np.isfinite(sparse.dense())])
    assert 150 < sparse.index.size <= 300
    assert np.all(sparse.dense()[10:20, 20:30][np.isfinite(sparse.dense()[10:20, 20:30])] == 2.0)


def test_projection_rounds_to_pixel_centres_with_skew():
    Ks = K.copy()
    Ks[0, 1] = 0.5
    # u = (fx x + s y) / z + cx: these land 0.49 px off the centres of (12, 7) and (40, 30)
    pts = []
    for u, v, z in ((12.49, 7.0, 2.0), (39.51, 30.0, 3.0)):
        y = (v - Ks[1, 2]) * z / Ks[1, 1]
        pts.append([(u - Ks[0, 2] - Ks[0, 1] * y / z) * z / Ks[0, 0], y, z])
    sparse = project_points(pts, Ks, (H, W))
    np.testing.assert_array_equal(np.sort(sparse.index), [7 * W + 12, 30 * W + 40])
    # grid_points inverts the projection exactly (pixel centres, skew)
    depth = np.full((H, W), np.nan, np.float32)
    depth[7, 12], depth[30, 40] = 2.0, 3.0
    back = grid_points(depth, Ks)
    again = project_points(back, Ks, (H, W))
    np.testing.assert_array_equal(again.dense()[[7, 30], [12, 40]], [2.0, 3.0])
    assert np.isfinite(again.dense()).sum() == 2


def test_projection_moves_the_points_with_T_first():
    # a LiDAR frame rotated 90 deg about the optical axis and shifted: its points, moved by
    # T_optical_lidar, land where the same points given in the optical frame land
    T = make_T(np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), [0.2, -0.1, 0.5])
    optical = np.array([_on_pixel(u, v, z) for u, v, z in ((5, 7, 2.0), (40, 30, 6.5),
                                                              (40, 30, 7.0), (63, 47, 1.2))])
    lidar = (optical - T[:3, 3]) @ T[:3, :3]            # T^-1 applied to the optical points
    moved = project_points(lidar, K, (H, W), T)
    direct = project_points(optical, K, (H, W))
    np.testing.assert_array_equal(np.sort(moved.index), [7 * W + 5, 30 * W + 40, 47 * W + 63])
    np.testing.assert_allclose(moved.dense(), direct.dense(), rtol=1e-6)
    assert moved.dense()[30, 40] == pytest.approx(6.5)     # the nearer of the two wins
    with pytest.raises(ValueError, match=r'\(N, 3\)'):
        project_points(np.zeros((4, 2)), K, (H, W), T)
    with pytest.raises(ValueError, match='4x4'):
        project_points(lidar, K, (H, W), T[:3])


def test_gated_ratio_ignores_gross_outliers():
    rng = np.random.default_rng(3)
    true = rng.uniform(1.0, 20.0, 400)
    net = true / 2.5
    ref = true * (1 + 0.02 * rng.standard_normal(400))
    clean = gated_ratio_scale(ref, net)
    bad = ref.copy()
    gross = rng.random(400) < 0.05
    bad[gross] *= rng.uniform(0.3, 3.0, gross.sum())
    fit = gated_ratio_scale(bad, net)
    assert fit.ok and fit.value == pytest.approx(2.5, rel=5e-3)
    assert abs(fit.value / clean.value - 1) < 2e-3          # the outliers do not move it
    assert fit.outliers >= 0.8 * gross.sum() and fit.support + fit.outliers == 400
    assert fit.spread == pytest.approx(0.6745 * 0.02, rel=0.3)   # MAD of 2 % noise
    few = gated_ratio_scale(ref[:10], net[:10], min_support=20)
    assert not few.ok and 'only 10' in few.reason


def test_affine_inverse_fit_recovers_scale_and_shift():
    rng = np.random.default_rng(4)
    true = rng.uniform(1.0, 30.0, 500)
    a, b = 0.4, 0.05                                  # 1 / true = a / net + b
    net = a / (1.0 / true - b)
    ok = net > 0
    true, net = true[ok], net[ok]
    ref = true.copy()
    ref[:20] *= 3.0                                   # gross outliers
    fit = affine_inverse_fit(ref, net)
    assert fit.ok and fit.outliers >= 20
    assert fit.value == pytest.approx(1 / a, rel=1e-6)
    assert fit.shift == pytest.approx(b / a, rel=1e-6)
    np.testing.assert_allclose(apply_fit(net.astype(np.float32), fit.value, fit.shift)[20:],
                               true[20:], rtol=1e-5)


def test_apply_fit_keeps_sky_and_refuses_behind_camera():
    d = np.array([1.0, np.inf, np.nan, 100.0], np.float32)
    out = apply_fit(d, 2.0, -0.02)                    # 1 - 0.02 * 100 < 0: behind the camera
    assert out[0] == pytest.approx(2.0 / 0.98) and np.isposinf(out[1])
    assert np.isnan(out[2]) and np.isnan(out[3])
    np.testing.assert_array_equal(apply_fit(d, 2.0)[[0, 3]], [2.0, 200.0])


def test_equal_depths_on_one_pixel_count_once():
    p = _on_pixel(10, 10, 3.0)
    sparse = project_points(np.array([p, p, p, _on_pixel(11, 10, 3.0)]), K, (H, W))
    assert sorted(sparse.index.tolist()) == [10 * W + 10, 10 * W + 11]
