"""Fused DUSt3R pair cloud: confidence threshold/percentile and padding masks."""
from __future__ import annotations

import numpy as np
import pytest

from tt_depth_ros.geometry.pointmap.pair_cloud import confidence_mask, fuse_pair_cloud


def _view(seed, h=6, w=8):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((h, w, 3)).astype(np.float32),
            rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
            (1 + 10 * rng.random((h, w))).astype(np.float32))


def test_threshold_percentile_and_padding():
    p1, c1, f1 = _view(0)
    p2, c2, f2 = _view(1)
    p2[0, 0] = np.nan
    valid = np.ones((6, 8), bool)
    valid[:, :2] = False
    xyz, rgb = fuse_pair_cloud(p1, p2, c1, c2, f1, f2, threshold=3.0, valid_1=valid)
    k1 = (f1 > 3) & valid
    k2 = (f2 > 3) & np.isfinite(p2).all(-1)
    assert len(xyz) == k1.sum() + k2.sum() and xyz.dtype == np.float32
    np.testing.assert_array_equal(xyz[:k1.sum()], p1[k1])
    np.testing.assert_array_equal(rgb[k1.sum():], c2[k2])
    m = confidence_mask(f1, percentile=75, valid=valid)
    assert m.sum() == int(np.ceil(0.25 * valid.sum())) and not m[:, :2].any()
    assert confidence_mask(f1).sum() == (f1 > 3).sum()   # default: upstream's conf > 3


def test_bad_arguments():
    p, c, f = _view(0)
    with pytest.raises(ValueError, match='not both'):
        confidence_mask(f, threshold=2, percentile=50)
    with pytest.raises(ValueError, match='0..100'):
        confidence_mask(f, percentile=150)
    with pytest.raises(ValueError, match='view 2'):
        fuse_pair_cloud(p, p[:3], c, c, f, f)
