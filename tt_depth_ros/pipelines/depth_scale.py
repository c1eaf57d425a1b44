"""The metric-scale stage of the DA3 frame path: one DepthFrame to the depth a node publishes.

After `DA3FramePath` (pipelines/depth.py) a frame's depth is in metres (DA3METRIC, NESTED) or in
the model's own unit (any-view, mono). `scale_depth_frame` decides, for every kind, what goes out:
the relative depth as predicted, the metric depth (a relative frame's only when its scale source
gives a scale for it: pipelines/relative_scale.py), the pixels allowed into clouds and scale fits
(confidence), and the figures /diagnostics shows for this frame. ROS-free: the depth node and
`tt-depth-batch` call it with the side inputs they gathered (a metric image by stamp, a camera
height from TF) and turn the result into messages (ros/msgs/depth_outputs.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from tt_depth_ros.geometry.depth import metric_depth as md
from tt_depth_ros.geometry.depth.ground_plane import GroundFit
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth import DepthFrame
from tt_depth_ros.pipelines.relative_scale import (
    RelativeScaleSettings,
    confident,
    relative_scale,
)

NESTED_SCALE_SOURCE = 'model (NESTED metric branch)'


@dataclass(frozen=True)
class ScaleInputs:
    """The side inputs of one frame's scale, gathered by the caller.

    Attributes:
        metric_depth: scale_source 'depth': the metric image with the frame's stamp (None: it
            did not arrive).
        camera_height_m: scale_source 'camera_height' with a TF ground frame: the camera's
            height read from TF for this frame; None = the configured camera_height_m.
        camera_height_missing: Why the TF height is not there (non-empty: no scale this frame).
    """

    metric_depth: Optional[np.ndarray] = None
    camera_height_m: Optional[float] = None
    camera_height_missing: str = ''


@dataclass(frozen=True)
class ScaledDepth:
    """One frame's depth products on the output grid.

    Attributes:
        kind: The model's kind.
        frame: The frame path's result (K, tx, image, confidence, estimated K, ...).
        relative: The depth in model units (relative kinds), else None.
        metric: The depth in metres; None when a relative frame got no scale.
        mask: Pixels allowed into clouds: finite positive depth with confidence >=
            min_confidence (None for DA3METRIC: its cloud keeps every pixel as predicted).
        scale: The relative frame's scale (None for the metric kinds).
        ground: The ground fit behind a 'camera_height' scale, else None.
        figures: This frame's /diagnostics figures (focal used and estimated, scale).
    """

    kind: ModelKind
    frame: DepthFrame
    relative: Optional[np.ndarray]
    metric: Optional[np.ndarray]
    mask: Optional[np.ndarray]
    scale: Optional[ScaleResult]
    ground: Optional[GroundFit]
    figures: dict = field(default_factory=dict)

    @property
    def scale_failed(self) -> bool:
        """A relative frame whose scale source gave no scale (nothing goes on `depth`)."""
        return self.scale is not None and not self.scale.ok

    @property
    def failure_message(self) -> str:
        """Why a relative frame has no metric depth (the [scale] reject), else ''."""
        if not self.scale_failed:
            return ''
        return (f'no {self.scale.source} scale for this frame (depth_relative published, '
                f'nothing on depth): {self.scale.reason}')


def focal_figures(frame: DepthFrame) -> dict:
    """/diagnostics: which focal set the geometry and how far the model's estimate is from it."""
    used = frame.focal_used_px
    figures = {'focal_source': frame.intrinsics_source, 'focal_used_px': round(used, 3)}
    if frame.focal_estimated_px is not None:
        est = frame.focal_estimated_px
        figures.update(focal_estimated_px=round(est, 3),
                       focal_difference_pct=round(100.0 * (est / used - 1.0), 3))
    return figures


def scale_depth_frame(kind: ModelKind, frame: DepthFrame, settings: RelativeScaleSettings,
                      min_confidence: float, max_depth_m: float = 0.0,
                      inputs: ScaleInputs = ScaleInputs()) -> ScaledDepth:
    """The depth products of one frame (module docstring).

    Args:
        kind: The model's kind (DA3 kinds only).
        frame: The frame path's result.
        settings: The relative kinds' scale source and its options.
        min_confidence: Pixels below this confidence leave clouds and scale fits.
        max_depth_m: A relative frame's metric depth beyond this becomes +Inf; 0 = no limit
            (the metric kinds apply it in the frame path).
        inputs: The scale's side inputs for this frame.
    """
    if kind is ModelKind.METRIC:
        return ScaledDepth(kind, frame, None, frame.depth, None, None, None)
    depth = frame.depth
    mask = confident(depth, frame.conf, min_confidence)
    figures = dict(focal_figures(frame), depth_kind='metric' if kind.is_metric else 'relative')
    if kind.is_metric:
        figures.update(scale_source=NESTED_SCALE_SOURCE, scale=1.0, units='metres')
        return ScaledDepth(kind, frame, None, depth, mask, None, None, figures)
    scale, ground = _relative_scale(settings, depth, mask, frame.K, inputs, figures)
    figures.update(scale_source=scale.source, scale=scale.value, scale_support=scale.support,
                   scale_spread=round(scale.spread, 5),
                   units='metres' if scale.metric else 'model units (relative)')
    if ground is not None:
        figures.update(ground_inlier_ratio=round(ground.inlier_ratio, 4),
                       ground_tilt_deg=round(ground.tilt_deg, 2))
    metric = None
    if scale.metric:
        metric = depth * np.float32(scale.value)
        if max_depth_m:
            metric = md.clip_max_depth(metric, max_depth_m)
    return ScaledDepth(kind, frame, depth, metric, mask, scale, ground, figures)


def _relative_scale(settings: RelativeScaleSettings, depth: np.ndarray, mask: np.ndarray,
                    K: np.ndarray, inputs: ScaleInputs,
                    figures: dict) -> tuple[ScaleResult, Optional[GroundFit]]:
    """The relative frame's scale; a TF height goes into this frame's figures beside it."""
    if settings.source == 'camera_height' and inputs.camera_height_missing:
        return ScaleResult('camera_height', None, inputs.camera_height_missing), None
    if settings.source == 'camera_height' and inputs.camera_height_m is not None:
        figures['camera_height_m'] = round(inputs.camera_height_m, 4)
        settings = replace(settings, camera_height_m=inputs.camera_height_m)
    scale, ground = relative_scale(settings, depth, mask, K, inputs.metric_depth)
    return scale, ground
