"""Fused coloured point cloud of a DUSt3R pair: both views' points in camera 1's frame.

Both pointmaps are already in camera 1's frame (docs/dust3r.md §3.7), so fusing is selecting
pixels: finite, not padding (pad mode), and confident — by an absolute confidence threshold
(conf > t, as upstream's masks) or by a per-view percentile (keep the top 100 - p %).
"""
from __future__ import annotations

import numpy as np

DEFAULT_CONF_THRESHOLD = 3.0  # upstream's mask for PnP and display (conf > 3)


def confidence_mask(conf: np.ndarray, threshold: float | None = None,
                    percentile: float | None = None, valid: np.ndarray | None = None) -> np.ndarray:
    """Pixels to keep for one view.

    Args:
        conf: (H, W) confidence (>= 1).
        threshold: keep conf > threshold (absolute). Default 3.0 when percentile is None too.
        percentile: keep conf >= the p-th percentile of this view's valid pixels (0..100).
        valid: (H, W) bool; False pixels (padding) are never kept.

    Returns:
        (H, W) bool mask.

    Raises:
        ValueError: both threshold and percentile given, a percentile outside 0..100, or shapes.
    """
    conf = np.asarray(conf)
    if threshold is not None and percentile is not None:
        raise ValueError('give a confidence threshold or a percentile, not both')
    ok = np.isfinite(conf)
    if valid is not None:
        valid = np.asarray(valid, dtype=bool)
        if valid.shape != conf.shape:
            raise ValueError(f'valid mask {valid.shape} differs from confidence {conf.shape}')
        ok &= valid
    if percentile is not None:
        if not 0.0 <= float(percentile) <= 100.0:
            raise ValueError(f'percentile {percentile} must be within 0..100')
        if not ok.any():
            return ok
        return ok & (conf >= np.percentile(conf[ok], float(percentile)))
    t = DEFAULT_CONF_THRESHOLD if threshold is None else float(threshold)
    return ok & (conf > t)


def fuse_pair_cloud(pts3d_1: np.ndarray, pts3d_2: np.ndarray, rgb_1: np.ndarray,
                    rgb_2: np.ndarray, conf_1: np.ndarray, conf_2: np.ndarray,
                    threshold: float | None = None, percentile: float | None = None,
                    valid_1: np.ndarray | None = None,
                    valid_2: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the kept points of both views with their pixel colours.

    Args:
        pts3d_1: (H, W, 3) view-1 points, camera-1 frame.
        pts3d_2: (H, W, 3) view-2 points, camera-1 frame.
        rgb_1: (H, W, 3) uint8 network image 1 (colours of pts3d_1).
        rgb_2: (H, W, 3) uint8 network image 2.
        conf_1: (H, W) head-1 confidence.
        conf_2: (H, W) head-2 confidence.
        threshold: absolute confidence threshold (see `confidence_mask`).
        percentile: per-view percentile instead of a threshold.
        valid_1: (H, W) bool non-padding pixels of view 1.
        valid_2: (H, W) bool non-padding pixels of view 2.

    Returns:
        xyz (N, 3) float32 and rgb (N, 3) uint8, view 1's points first.
    """
    xyz, rgb = [], []
    for pts, col, conf, valid, name in ((pts3d_1, rgb_1, conf_1, valid_1, '1'),
                                        (pts3d_2, rgb_2, conf_2, valid_2, '2')):
        pts, col = np.asarray(pts), np.asarray(col)
        if pts.ndim != 3 or pts.shape[2] != 3 or col.shape != pts.shape \
                or np.shape(conf) != pts.shape[:2]:
            raise ValueError(f'view {name}: pts3d {pts.shape}, rgb {col.shape} and conf '
                             f'{np.shape(conf)} must be (H, W, 3), (H, W, 3) and (H, W)')
        keep = confidence_mask(conf, threshold, percentile, valid)
        keep &= np.all(np.isfinite(pts), axis=-1)
        xyz.append(pts[keep].astype(np.float32))
        rgb.append(col[keep].astype(np.uint8))
    return np.concatenate(xyz), np.concatenate(rgb)
