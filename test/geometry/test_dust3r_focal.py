"""Weiszfeld focal estimation (docs/dust3r.md §7.1) on pointmaps of a known camera."""
from __future__ import annotations

import numpy as np
import pytest

from tt_depth_ros.geometry.pointmap.focal import estimate_focal


def _pointmap(f, h=96, w=128, pp=None, seed=0):
    cx, cy = (w / 2, h / 2) if pp is None else pp
    ys, xs = np.mgrid[0:h, 0:w].astype(float)
    z = 2.0 + np.random.default_rng(seed).random((h, w)) * 3
    return np.stack(((xs - cx) / f * z, (ys - cy) / f * z, z), axis=-1).astype(np.float32)


@pytest.mark.parametrize('f', [80.0, 300.0, 1200.0])
def test_recovers_known_focal(f):
    assert estimate_focal(_pointmap(f)) == pytest.approx(f, rel=1e-5)


def test_robust_to_outliers_and_nan():
    pts = _pointmap(250.0)
    rng = np.random.default_rng(1)
    bad = rng.random(pts.shape[:2]) < 0.15
    pts[bad] = rng.uniform([-1, -1, 1], [1, 1, 6], (bad.sum(), 3))  # wrong but in front
    pts[:3] = np.nan
    pts[5, :, 2] = 0.0     # Z = 0 -> inf rays are zeroed as upstream
    assert estimate_focal(pts) == pytest.approx(250.0, rel=0.02)


def test_custom_principal_point_and_mask():
    pts = _pointmap(400.0, pp=(70.5, 40.0))
    assert estimate_focal(pts, pp=(70.5, 40.0)) == pytest.approx(400.0, rel=1e-5)
    mask = np.zeros(pts.shape[:2], bool)
    mask[10:50, 20:90] = True
    assert estimate_focal(pts, pp=(70.5, 40.0), mask=mask) == pytest.approx(400.0, rel=1e-5)


def test_bad_input_raises():
    with pytest.raises(ValueError, match='pts3d'):
        estimate_focal(np.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match='no finite rays'):
        estimate_focal(np.full((8, 8, 3), np.nan))
