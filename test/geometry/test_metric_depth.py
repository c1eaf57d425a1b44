"""Metric scale, sky, range and validity-preserving resampling (geometry/depth/metric_depth.py)."""
import cv2
import numpy as np
import pytest

from tt_depth_ros.geometry.depth.metric_depth import (
    DEFAULT_FOCAL_NO_INTRINSICS,
    apply_sky,
    clip_max_depth,
    default_intrinsics,
    metric_depth,
    resize_depth,
    sky_mask,
)
from tt_depth_ros.models.da3.config import SKY_THRESHOLD


@pytest.mark.parametrize('fx,fy,scale', [(300.0, 300.0, 1.0), (393.75, 393.75, 1.3125),
                                         (196.875, 194.4444444, 0.65219907), (600, 0.5, 1.0008333)])
def test_metric_depth_formula(fx, fy, scale):
    raw = np.array([[0.5, 1.0], [2.0, 4.5]], np.float32)
    out = metric_depth(raw, fx, fy)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, raw * scale, rtol=1e-6)


@pytest.mark.parametrize('fx,fy', [(np.nan, 300), (300, -1), (0, 300), (300, np.inf)])
def test_metric_depth_rejects_bad_focal(fx, fy):
    with pytest.raises(ValueError, match='finite positive focal'):
        metric_depth(np.ones((2, 2)), fx, fy)


def test_default_intrinsics_are_canonical():
    K = default_intrinsics(504, 280)
    assert K[0, 0] == K[1, 1] == DEFAULT_FOCAL_NO_INTRINSICS == 300.0
    raw = np.full((2, 2), 1.7, np.float32)
    np.testing.assert_array_equal(metric_depth(raw, K[0, 0], K[1, 1]), raw)


def test_sky_modes_and_threshold():
    depth = np.array([[1.0, 2.0, 3.0]], np.float32)
    sky = np.array([[0.0, 0.3, 0.29999]], np.float32)   # 0.3 is sky (upstream: non-sky < 0.3)
    np.testing.assert_array_equal(sky_mask(sky, SKY_THRESHOLD), [[False, True, False]])
    np.testing.assert_array_equal(apply_sky(depth, sky, SKY_THRESHOLD), [[1.0, np.inf, 3.0]])
    out = apply_sky(depth, sky, SKY_THRESHOLD, mode='nan')
    assert np.isnan(out[0, 1]) and out[0, 0] == 1.0
    np.testing.assert_array_equal(apply_sky(depth, sky, SKY_THRESHOLD, mode='keep'), depth)
    np.testing.assert_array_equal(apply_sky(depth, sky, threshold=0.5), depth)
    assert depth[0, 1] == 2.0                             # input untouched
    with pytest.raises(ValueError, match='sky mode'):
        apply_sky(depth, sky, SKY_THRESHOLD, mode='fill')
    with pytest.raises(ValueError, match='differs'):
        apply_sky(depth, sky[:, :2], SKY_THRESHOLD)


def test_clip_max_depth():
    d = np.array([1.0, 10.0, 10.5, np.nan], np.float32)
    out = clip_max_depth(d, 10.0)
    np.testing.assert_array_equal(out[:3], [1.0, 10.0, np.inf])
    assert np.isnan(out[3])
    np.testing.assert_array_equal(clip_max_depth(d, None)[:3], d[:3])
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match='max_depth_m'):
            clip_max_depth(d, bad)


def test_resize_depth_never_blends_invalid():
    rng = np.random.default_rng(0)
    d = rng.uniform(2.0, 3.0, (28, 42)).astype(np.float32)
    d[:8] = np.inf                       # sky band
    d[20:, 30:] = np.nan                 # invalid block
    d[10:20, :10] = 50.0                 # far object next to near ones
    for out_hw in [(280, 420), (100, 37), (14, 21)]:
        out = resize_depth(d, out_hw)
        assert out.shape == out_hw and out.dtype == np.float32
        fin = out[np.isfinite(out)]
        assert fin.min() >= 2.0 and fin.max() <= 50.0    # convex combos of valid values only
        assert not np.isneginf(out).any()
    up = resize_depth(d, (280, 420))
    assert np.isinf(up[:75]).all() and np.isfinite(up[85:195, 110:290]).all()
    assert np.isnan(up[205:, 305:]).all()
    # valid pixels right next to the sky band are not pulled towards Inf
    assert np.isfinite(up[80:85]).all() and up[80:85].max() <= 3.0


def test_resize_depth_keeps_constant_and_identity():
    d = np.full((28, 42), 4.25, np.float32)
    np.testing.assert_array_equal(resize_depth(d, (720, 1280)), 4.25)
    d[0, 0] = np.nan
    same = resize_depth(d, (28, 42))
    assert same is not d and np.isnan(same[0, 0]) and same[1, 1] == 4.25
    with pytest.raises(ValueError, match=r'\(H, W\)'):
        resize_depth(np.ones((2, 2, 1)), (4, 4))


def _masked_bilinear_reference(d, out_hw):
    """The documented semantics written out plainly (no shortcuts, no caches)."""
    dsize = (out_hw[1], out_hw[0])
    valid = np.isfinite(d)
    num = cv2.resize(np.where(valid, d, 0.0).astype(np.float32), dsize,
                     interpolation=cv2.INTER_LINEAR)
    den = cv2.resize(valid.astype(np.float32), dsize, interpolation=cv2.INTER_LINEAR)
    out = cv2.resize(d, dsize, interpolation=cv2.INTER_NEAREST_EXACT)
    ok = np.isfinite(out) & (den > 1e-6)
    out[ok] = num[ok] / den[ok]
    return out


@pytest.mark.parametrize('in_hw,out_hw', [((378, 504), (480, 640)), ((280, 504), (720, 1280)),
                                          ((28, 42), (100, 37)), ((5, 3), (1, 1))])
def test_resize_depth_bit_exact_to_masked_formula(in_hw, out_hw):
    rng = np.random.default_rng(1)
    d = rng.uniform(0.2, 80.0, in_hw).astype(np.float32)
    for _ in range(2):          # all finite (cached weight sums, 2nd call hits the cache)
        np.testing.assert_array_equal(resize_depth(d, out_hw).view(np.uint32),
                                      _masked_bilinear_reference(d, out_hw).view(np.uint32))
    d[:in_hw[0] // 4] = np.inf
    d[rng.random(in_hw) < 0.1] = np.nan
    np.testing.assert_array_equal(resize_depth(d, out_hw).view(np.uint32),
                                  _masked_bilinear_reference(d, out_hw).view(np.uint32))
