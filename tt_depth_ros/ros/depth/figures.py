"""The depth node's own /diagnostics figures: the last frame's focal and scale, scale failures.

Written by the worker (one `record` per frame) and read by the diagnostics timer, so every change
is one locked step. A frame's figures replace the previous frame's as a whole: a TF height is never
shown next to another frame's scale.
"""
from __future__ import annotations

import threading

from tt_depth_ros.pipelines.depth_scale import ScaledDepth

OPTIONAL = ('scale_reason', 'scale_sigma', 'scale_shift', 'cloud_pixels', 'cloud_points_in_view',
            'camera_height_m')
"""Figures only some frames have: never shown beside a later frame's scale."""


class DepthFigures:
    """Thread-safe last-frame figures and the scale failure count of one configured node."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict = {}

    def reset(self) -> None:
        """Configure: no failures, no last values."""
        with self._lock:
            self._values = {'scale_failures': 0}

    def record(self, scaled: ScaledDepth) -> None:
        """This frame's figures (pipelines/depth_scale.py) and, without a scale, the failure.

        A frame's optional figures (a scale's reason, a ground fit) leave with it.
        """
        with self._lock:
            for key in OPTIONAL:
                self._values.pop(key, None)
            self._values.update(scaled.figures)
            if scaled.unscaled:
                self._values['scale_failures'] += 1
                self._values['last_scale_failure'] = scaled.scale.reason

    def snapshot(self) -> dict:
        """A copy of every figure, for /diagnostics."""
        with self._lock:
            return dict(self._values)
