"""What the depth node's parameters mean for each model kind: the checks and the focal choice.

Pure functions of parameter values and a `ModelKind` (models/kind.py); the node's configure and
tt-depth-batch's parameter check both call them, so both refuse the same combinations.
"""
from __future__ import annotations

from tt_depth_ros.models.kind import ModelKind

NO_INFO_METRIC = 'using the default focal; the metric scale is unreliable'
NO_INFO_ESTIMATES = "using the model's estimated intrinsics"
NO_INFO_RELATIVE = 'using the default focal; the point geometry is approximate'


METRIC_SCALE_SOURCES = ('none', 'depth', 'cloud', 'temporal')
"""What may refine a metric model's metres (camera_height is for relative models)."""
RELATIVE_SCALE_SOURCES = ('none', 'depth', 'camera_height', 'cloud')
"""What may scale a relative model ('temporal' holds a metric scale; it has none to hold)."""


def check_kind_params(p, kind: ModelKind) -> None:
    """Raise ValueError for depth node values `p` that a model of `kind` cannot honour."""
    model = p.model
    allowed = METRIC_SCALE_SOURCES if kind.is_metric else RELATIVE_SCALE_SOURCES
    if p.scale_source not in allowed:
        what = 'predicts metres' if kind.is_metric else 'predicts relative depth'
        raise ValueError(f'scale_source={p.scale_source!r}: {model!r} {what}; use one of '
                         f'{list(allowed)}')
    if p.scale_source == 'temporal' and p.scale_filter != 'kalman':
        raise ValueError("scale_source='temporal' needs scale_filter='kalman' (each frame's "
                         'ratio to the previous one alone would drift)')
    if not kind.estimates_intrinsics and p.focal_source == 'estimated':
        raise ValueError(f"focal_source='estimated': {model!r} does not estimate intrinsics "
                         '(any-view and NESTED models do)')
    if p.scale_source == 'camera_height' and not (p.camera_height_m > 0 or
                                                      p.camera_height_frame):
        raise ValueError('scale_source=camera_height needs camera_height_m > 0 (metres, '
                         'optical centre above the ground) or camera_height_frame (TF)')


def uses_model_intrinsics(kind: ModelKind, focal_source: str, camera_info_known: bool) -> bool:
    """Whether a frame takes the model's estimated intrinsics instead of its CameraInfo.

    `focal_source` 'estimated' always (for a model that estimates), 'auto' while no CameraInfo
    is known for the camera (`camera_info_known`), 'camera_info' never.
    """
    if not kind.estimates_intrinsics:
        return False
    return focal_source == 'estimated' or (focal_source == 'auto' and not camera_info_known)


def no_camera_info_fallback(kind: ModelKind) -> str:
    """What replaces the intrinsics of a frame without CameraInfo (the once-only warning)."""
    if kind.estimates_intrinsics:
        return NO_INFO_ESTIMATES
    return NO_INFO_METRIC if kind is ModelKind.METRIC else NO_INFO_RELATIVE
