"""The metric-scale stage of the DA3 frame path: one DepthFrame to the depth a node publishes.

After `DA3FramePath` (pipelines/depth.py) a frame's depth is in metres (DA3METRIC, NESTED) or in
the model's own unit (any-view, mono). `scale_depth_frame` decides, for every kind, what goes out:
the relative depth as predicted, the metric depth, the pixels allowed into clouds and scale fits
(confidence), and the figures /diagnostics shows for this frame.

A scale source measures the frame's scale: a metric image ('depth') or the ground
('camera_height': pipelines/relative_scale.py), a LiDAR scan ('cloud') or, for a metric model,
the previous frame moved with the camera ('temporal': pipelines/sensor_scale.py). The camera's
`ScaleState` filters it over time (pipelines/scale_filter.py) and the filtered scale is applied:
a relative frame gets metric depth only with a scale; a metric frame's metres are refined by it
(none: published as the network predicts them). ROS-free: the depth node and `tt-depth-batch`
call it with the side inputs they gathered (a metric image by stamp, a scan and its transform,
camera poses and heights from TF) and one `ScaleState` per camera, and turn the result into
messages (ros/msgs/depth_outputs.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from tt_depth_ros.geometry.depth import metric_depth as md
from tt_depth_ros.geometry.depth.ground_plane import GroundFit
from tt_depth_ros.geometry.depth.sparse_fit import apply_fit
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth import DepthFrame
from tt_depth_ros.pipelines.relative_scale import (
    RelativeScaleSettings,
    confident,
    relative_scale,
)
from tt_depth_ros.pipelines.scale_filter import (
    STATE_CODES,
    UNSCALED,
    FilteredScale,
    ScaleFilter,
)
from tt_depth_ros.pipelines.sensor_scale import (
    PreviousFrame,
    cloud_scale,
    previous_frame,
    temporal_scale,
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
        stamp_ns: The frame's stamp: the scale filter's clock.
        cloud: scale_source 'cloud': (N, 3) points of the scan nearest the stamp, in its frame;
            None when there is none (`cloud_missing` says why).
        cloud_to_camera: 4x4 from the scan's frame to the frame's optical frame (TF).
        cloud_missing: Why there is no scan or no transform for this frame.
        camera_pose: scale_source 'temporal': 4x4 T_fixed_optical at the stamp (identity for
            a static camera); None when TF has none (`camera_pose_missing` says why).
        camera_pose_missing: Why there is no pose.
    """

    metric_depth: Optional[np.ndarray] = None
    camera_height_m: Optional[float] = None
    camera_height_missing: str = ''
    stamp_ns: int = 0
    cloud: Optional[np.ndarray] = None
    cloud_to_camera: Optional[np.ndarray] = None
    cloud_missing: str = ''
    camera_pose: Optional[np.ndarray] = None
    camera_pose_missing: str = ''


class ScaleState:
    """The scale's memory of one camera: its filter and, for 'temporal', its last frame.

    Frames of one camera go through it in order; a node keeps one per camera, tt-depth-batch
    one per camera of a bag.
    """

    def __init__(self) -> None:
        self.filter = ScaleFilter()
        self.previous: Optional[PreviousFrame] = None

    def clear(self) -> None:
        """A new stream (activate, a new bag): no scale, no previous frame; counters stay."""
        self.filter.clear()
        self.previous = None


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
        scale: The scale applied (value None: none this frame, its reason given); None for a
            metric model without a scale source.
        ground: The ground fit behind a 'camera_height' scale, else None.
        figures: This frame's /diagnostics figures (focal used and estimated, scale).
        filtered: The scale source's verdict for this frame (scale, sigma, state), None without
            a source.
    """

    kind: ModelKind
    frame: DepthFrame
    relative: Optional[np.ndarray]
    metric: Optional[np.ndarray]
    mask: Optional[np.ndarray]
    scale: Optional[ScaleResult]
    ground: Optional[GroundFit]
    figures: dict = field(default_factory=dict)
    filtered: Optional[FilteredScale] = None

    @property
    def unscaled(self) -> bool:
        """A frame whose scale source gave no scale (the metric kinds publish their metres)."""
        return self.scale is not None and not self.scale.ok

    @property
    def scale_failed(self) -> bool:
        """A relative frame whose scale source gave no scale (nothing goes on `depth`)."""
        return self.unscaled and not self.kind.is_metric

    @property
    def failure_message(self) -> str:
        """Why a frame has no scale (a relative frame's [scale] reject), else ''."""
        if not self.unscaled:
            return ''
        what = ("the network's metres published" if self.kind.is_metric else
                'depth_relative published, nothing on depth')
        return f'no {self.scale.source} scale for this frame ({what}): {self.scale.reason}'

    def scale_message_values(self) -> Optional[tuple[float, float, float]]:
        """(scale, 1-sigma of its log, state code) for the depth/scale topic; None: no source.

        Unscaled: (NaN, NaN, 0); the codes are pipelines/scale_filter.py STATE_CODES.
        """
        f = self.filtered
        if f is None:
            return None
        value = f.value if f.value is not None else float('nan')
        return value, f.sigma, float(STATE_CODES[f.state])


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
                      inputs: ScaleInputs = ScaleInputs(),
                      state: Optional[ScaleState] = None) -> ScaledDepth:
    """The depth products of one frame (module docstring).

    Args:
        kind: The model's kind (DA3 kinds only).
        frame: The frame path's result.
        settings: The scale source, its fit and filter options.
        min_confidence: Pixels below this confidence leave clouds and scale fits.
        max_depth_m: Scaled depth beyond this becomes +Inf; 0 = no limit (the frame path
            already applied it to the metric kinds' own metres).
        inputs: The scale's side inputs for this frame.
        state: The camera's scale state (filter, previous frame); None = a fresh one (no
            memory: only right for scale_filter 'none').
    """
    source = settings.source
    if kind is ModelKind.METRIC and source == 'none':
        return ScaledDepth(kind, frame, None, frame.depth, None, None, None)
    depth = frame.depth
    # DA3METRIC keeps every pixel (no confidence; the fits skip invalid depth themselves)
    mask = None if kind is ModelKind.METRIC else confident(depth, frame.conf, min_confidence)
    figures = dict(focal_figures(frame), depth_kind='metric' if kind.is_metric else 'relative')
    if kind.is_metric and source == 'none':
        figures.update(scale_source=NESTED_SCALE_SOURCE, scale=1.0, units='metres')
        return ScaledDepth(kind, frame, None, depth, mask, None, None, figures)
    if source == 'none':
        scale = relative_scale(settings, depth, mask, frame.K).scale
        figures.update(scale_source='none', scale=scale.value, scale_support=scale.support,
                       scale_spread=round(scale.spread, 5), units='model units (relative)')
        return ScaledDepth(kind, frame, depth, None, mask, scale, None, figures)
    if source == 'temporal' and settings.filter.filter != 'kalman':
        raise ValueError("scale_source 'temporal' needs scale_filter 'kalman' (each frame's "
                         'ratio to the previous one alone would drift)')
    state = state if state is not None else ScaleState()
    measured, ground = _measure(settings, depth, mask, frame.K, inputs, state, figures)
    if source == 'temporal':
        applied = state.filter.step_temporal(settings.filter, inputs.stamp_ns, measured)
    else:
        applied = state.filter.step(settings.filter, inputs.stamp_ns, measured)
    scale = ScaleResult(source, applied.value, applied.reason or measured.reason,
                        measured.support, measured.spread, applied.shift, measured.outliers)
    metric = depth if kind.is_metric else None
    if applied.value is not None:
        metric = apply_fit(depth, applied.value, applied.shift)
        if max_depth_m:
            metric = md.clip_max_depth(metric, max_depth_m)
    if source == 'temporal':
        state.previous = (previous_frame(metric, mask, frame.K, inputs.camera_pose,
                                         inputs.stamp_ns)
                          if inputs.camera_pose is not None else None)
    figures.update(_scale_figures(kind, scale, measured, applied, state))
    if ground is not None:
        figures.update(ground_inlier_ratio=round(ground.inlier_ratio, 4),
                       ground_tilt_deg=round(ground.tilt_deg, 2))
    return ScaledDepth(kind, frame, depth if kind.is_relative_depth else None, metric, mask,
                       scale, ground, figures, applied)


def _scale_figures(kind: ModelKind, scale: ScaleResult, measured: ScaleResult,
                   applied: FilteredScale, state: ScaleState) -> dict:
    """/diagnostics: the scale applied, its sigma and state, this frame's fit, the counters."""
    metric = applied.value is not None or kind.is_metric
    figures = {'scale_source': scale.source, 'scale': scale.value,
               'scale_state': applied.state, 'scale_measured': measured.value,
               'scale_support': measured.support, 'scale_spread': round(measured.spread, 5),
               'scale_outliers': measured.outliers,
               'scale_rejections': state.filter.rejections,
               'scale_resets': state.filter.resets,
               'units': 'metres' if metric else 'model units (relative)'}
    if applied.state != UNSCALED:
        figures['scale_sigma'] = round(applied.sigma, 5)
    if applied.shift:
        figures['scale_shift'] = applied.shift
    if applied.reason:
        figures['scale_reason'] = applied.reason
    return figures


def _measure(settings: RelativeScaleSettings, depth: np.ndarray, mask: np.ndarray,
             K: np.ndarray, inputs: ScaleInputs, state: ScaleState,
             figures: dict) -> tuple[ScaleResult, Optional[GroundFit]]:
    """This frame's measurement of its source; a TF height goes into the figures beside it."""
    source = settings.source
    if source == 'cloud':
        if inputs.cloud is None or inputs.cloud_to_camera is None:
            return ScaleResult('cloud', None, inputs.cloud_missing or 'no scan'), None
        fit, sparse = cloud_scale(inputs.cloud, inputs.cloud_to_camera, depth, mask, K,
                                  settings.fit, settings.min_scale_support)
        figures.update(cloud_pixels=int(sparse.index.size), cloud_points_in_view=sparse.in_view)
        return fit, None
    if source == 'temporal':
        if inputs.camera_pose is None:
            return ScaleResult('temporal', None, inputs.camera_pose_missing or 'no pose'), None
        return temporal_scale(state.previous, depth, mask, K, inputs.camera_pose,
                              settings.min_scale_support), None
    if source == 'camera_height' and inputs.camera_height_missing:
        return ScaleResult('camera_height', None, inputs.camera_height_missing), None
    if source == 'camera_height' and inputs.camera_height_m is not None:
        figures['camera_height_m'] = round(inputs.camera_height_m, 4)
        settings = replace(settings, camera_height_m=inputs.camera_height_m)
    return relative_scale(settings, depth, mask, K, inputs.metric_depth)
