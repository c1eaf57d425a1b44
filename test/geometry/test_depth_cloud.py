"""depth_cloud: closed-form back-projection, decimation, range limit, invalid codes, rgb bits."""
import numpy as np
import pytest

from tt_depth_ros.geometry.depth.depth_cloud import (
    decimated_shape,
    organized_points,
    pack_rgb,
)


def _closed_form(depth, K, d):
    pts = []
    for v in range(0, depth.shape[0], d):
        row = []
        for u in range(0, depth.shape[1], d):
            z = float(depth[v, u])
            y = (v - K[1, 2]) * z / K[1, 1]
            x = (u - K[0, 2] - K[0, 1] * y / z) * z / K[0, 0] if z else 0.0
            row.append((x, y, z))
        pts.append(row)
    return np.array(pts)


@pytest.mark.parametrize('d', [1, 2, 3, 7])
@pytest.mark.parametrize('K', [np.array([[500.0, 0, 319.5], [0, 505.0, 239.5], [0, 0, 1]]),
                               np.array([[120.0, 2.0, 40.0], [0, 90.0, 17.0], [0, 0, 1]])])
def test_matches_pixel_loop(d, K):
    rng = np.random.default_rng(d)
    depth = rng.uniform(0.5, 20.0, (23, 31)).astype(np.float32)
    pts = organized_points(depth, K, d)
    assert pts.shape == decimated_shape(23, 31, d) + (3,) and pts.dtype == np.float32
    np.testing.assert_allclose(pts, _closed_form(depth, K, d), rtol=2e-6, atol=1e-6)


def test_invalid_and_range():
    K = np.array([[100.0, 0, 2], [0, 100.0, 1], [0, 0, 1]])
    depth = np.array([[1.0, np.nan, np.inf, -np.inf, 0.0, -2.0, 50.0]], np.float32)
    pts = organized_points(depth, K)
    assert np.all(np.isfinite(pts[0, 0]))
    assert np.all(np.isnan(pts[0, 1:6]))
    assert np.all(np.isfinite(pts[0, 6]))
    pts = organized_points(depth, K, max_range_m=10.0)
    assert np.all(np.isnan(pts[0, 6])) and np.all(np.isfinite(pts[0, 0]))


def test_bad_arguments():
    with pytest.raises(ValueError):
        organized_points(np.ones((2, 2, 1)), np.eye(3))
    with pytest.raises(ValueError):
        organized_points(np.ones((2, 2)), np.eye(3), decimation=0)
    with pytest.raises(ValueError):
        organized_points(np.ones((2, 2)), np.zeros((3, 3)))


def test_pack_rgb_bits():
    rgb = np.array([[[255, 0, 0], [1, 2, 3]]], np.uint8)
    bits = pack_rgb(rgb).view(np.uint32)
    assert bits.tolist() == [[0xFF0000, 0x010203]]
