"""What a model's output means: the one vocabulary of model kinds, and what each kind gives.

Every layer (registry, frame paths, nodes, tools) reads a model's kind from here; nothing else
declares a set of kind names. A `str` enum, so a kind compares equal to its name (parameter
files, JSON reports and `EngineInfo.details` carry the name).
"""
from __future__ import annotations

from enum import Enum


class ModelKind(str, Enum):
    """The kinds of model the package runs (docs/da3.md, docs/dust3r.md)."""

    METRIC = 'metric'
    """DA3METRIC: one view; raw depth x f'/300 = metres (f' the focal at network resolution)."""
    MONO = 'mono'
    """DA3MONO: one view; relative depth with a sky head."""
    ANYVIEW = 'anyview'
    """DA3 any-view: any number of views; relative depth, confidence, camera pose, intrinsics."""
    NESTED = 'nested'
    """DA3 NESTED: any-view plus a metric branch: depth and pose in metres, sky."""
    POINTMAP = 'pointmap'
    """DUSt3R: two views; scale-free pointmaps and confidence in camera 1's frame."""

    def __str__(self) -> str:
        return self.value

    @property
    def is_metric(self) -> bool:
        """Depth comes out in metres (METRIC after the focal scale, NESTED as predicted)."""
        return self in (ModelKind.METRIC, ModelKind.NESTED)

    @property
    def is_relative_depth(self) -> bool:
        """A depth map in the model's own unit: a metric scale must come from elsewhere."""
        return self in (ModelKind.MONO, ModelKind.ANYVIEW)

    @property
    def estimates_intrinsics(self) -> bool:
        """The model predicts the camera's intrinsics (and pose): any-view and NESTED."""
        return self in (ModelKind.ANYVIEW, ModelKind.NESTED)

    @property
    def has_confidence(self) -> bool:
        """The model predicts a per-pixel confidence."""
        return self in (ModelKind.ANYVIEW, ModelKind.NESTED, ModelKind.POINTMAP)

    @property
    def has_sky(self) -> bool:
        """The model predicts a sky score."""
        return self in (ModelKind.METRIC, ModelKind.MONO, ModelKind.NESTED)

    @property
    def multi_view(self) -> bool:
        """One forward over any number of views (engines/base.py ANY_VIEWS)."""
        return self in (ModelKind.ANYVIEW, ModelKind.NESTED)

    @property
    def is_depth_map(self) -> bool:
        """A DA3 kind: the depth node and the DA3 frame path run it."""
        return self is not ModelKind.POINTMAP


DEPTH_KINDS = tuple(k for k in ModelKind if k.is_depth_map)
"""The kinds the DA3 frame path and the depth node take."""
MULTI_VIEW_KINDS = tuple(k for k in ModelKind if k.multi_view)
"""The kinds with one forward over any number of views and camera estimates."""
