"""Metric scale of one frame from an image-based source, free of rclpy.

`depth`: a metric depth image of the same view (the depth node of a metric model, a LiDAR
projected into the camera) resampled onto the frame's grid, then a MAD-gated median ratio (or
scale + shift in inverse depth, `fit`) over confident valid pixels (geometry/depth/sparse_fit.py,
the fit of the 'cloud' source too: pipelines/sensor_scale.py).
`camera_height`: the ground plane fitted in the relative cloud (geometry/depth/ground_plane.py).
The settings also carry the temporal filter's options (pipelines/scale_filter.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np

from tt_depth_ros.geometry.depth.depth_cloud import organized_points
from tt_depth_ros.geometry.depth.ground_plane import GroundFit, camera_height_scale
from tt_depth_ros.geometry.depth.metric_depth import resize_depth
from tt_depth_ros.geometry.depth.sparse_fit import affine_inverse_fit, gated_ratio_scale
from tt_depth_ros.geometry.pointmap.scale import ScaleResult, unit_scale
from tt_depth_ros.pipelines.scale_filter import ScaleFilterSettings

GROUND_DECIMATION = 4
"""The ground fit uses every 4th row and column (enough points, 16x less work)."""


@dataclass(frozen=True)
class RelativeScaleSettings:
    """Options of the scale sources (depth-node parameters of the same names).

    `fit`: 'scale' or 'affine_inverse' (sources 'depth' and 'cloud'); `filter`: the temporal
    filter of every source (pipelines/scale_filter.py).
    """

    source: str = 'none'
    min_scale_support: int = 20
    camera_height_m: float = 0.0
    ground_max_tilt_deg: float = 35.0
    ground_tolerance: float = 0.05
    ground_min_inlier_ratio: float = 0.15
    fit: str = 'scale'
    filter: ScaleFilterSettings = field(default_factory=ScaleFilterSettings)


class FrameScale(NamedTuple):
    """The scale of one frame and, for source 'camera_height', the ground fit behind it."""

    scale: ScaleResult
    ground: Optional[GroundFit] = None


def confident(depth: np.ndarray, conf: np.ndarray | None, min_confidence: float) -> np.ndarray:
    """Boolean mask: finite positive depth with confidence >= min_confidence (if a map exists)."""
    mask = np.isfinite(depth) & (depth > 0)
    if conf is not None and min_confidence > 0:
        mask &= conf >= min_confidence
    return mask


def relative_scale(s: RelativeScaleSettings, depth: np.ndarray, mask: np.ndarray, K: np.ndarray,
                   metric_depth: np.ndarray | None = None) -> FrameScale:
    """Scale (metres per model unit) of one frame; value None = no scale (reason given).

    Args:
        s: Source and its options.
        depth: (H, W) relative depth on the published grid.
        mask: (H, W) pixels allowed to vote (`confident`).
        K: 3x3 intrinsics of that grid (the cloud of the ground fit).
        metric_depth: Source 'depth': the metric image with the frame's stamp (any resolution of
            the same aspect), or None when it did not arrive.
    """
    if s.source == 'none':
        return FrameScale(unit_scale())
    if s.source == 'depth':
        if metric_depth is None:
            return FrameScale(ScaleResult('depth', None, "no image on 'metric_depth' with this "
                                          "frame's stamp"))
        h, w = depth.shape
        mh, mw = metric_depth.shape
        if abs(mw / mh - w / h) > 0.01 * (w / h):
            return FrameScale(ScaleResult('depth', None, f'metric depth {mw}x{mh} has another '
                                          f'aspect than the relative depth {w}x{h}'))
        grid = resize_depth(metric_depth, (h, w))
        fit = affine_inverse_fit if s.fit == 'affine_inverse' else gated_ratio_scale
        return FrameScale(fit(grid[mask], depth[mask], min_support=s.min_scale_support,
                              source='depth'))
    if s.source == 'camera_height':
        if not s.camera_height_m > 0:
            return FrameScale(ScaleResult('camera_height', None,
                                          'camera_height_m is not set (> 0 m)'))
        pts = organized_points(np.where(mask, depth, np.nan).astype(np.float32), K,
                               decimation=GROUND_DECIMATION)
        return FrameScale(*camera_height_scale(pts, s.camera_height_m,
                                               max_tilt_deg=s.ground_max_tilt_deg,
                                               tolerance=s.ground_tolerance,
                                               min_inlier_ratio=s.ground_min_inlier_ratio))
    raise ValueError(f'unknown scale source {s.source!r}')
