"""The pair node's own /diagnostics figures: PnP, scale, TF and keyframe outcomes.

Written by the worker (ros/pair/steps.py, ros/pair/outputs.py, ros/pair/temporal.py) and read
by the diagnostics timer, so every change is one locked step.
"""
from __future__ import annotations

import threading

COUNTERS = ('pnp_failures', 'pnp_ok', 'scale_failures', 'tf_published', 'tf_withheld_unscaled',
            'pose_rejected_frame_id')


class PairFigures:
    """Thread-safe counters and last values of one configured pair node (empty before)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict = {}

    def reset(self) -> None:
        """Configure: every counter at 0, no last values."""
        with self._lock:
            self._values = dict.fromkeys(COUNTERS, 0)

    def record(self, counter: str | None = None, **values) -> None:
        """Set `values` and add one to `counter` (one of COUNTERS), in one locked step."""
        with self._lock:
            self._values.update(values)
            if counter is not None:
                self._values[counter] += 1

    def snapshot(self) -> dict:
        """A copy of every figure, for /diagnostics."""
        with self._lock:
            return dict(self._values)
