"""The `metric_cloud` side input of scale_source=cloud: LiDAR scans, the nearest by stamp.

A spinning LiDAR stamps a scan at its start or end, never at the camera's exposure, and
publishes it when the sweep is done: a frame takes the scan nearest its stamp within a
tolerance, waiting (bounded) until a scan stamped after the frame has arrived - the nearest
may be that one. The executor converts each PointCloud2 once (ros/msgs/cloud.py `cloud_xyz`)
and `put`s it; the worker asks `nearest`. tt-depth-batch fills it from the bag with each scan's
bag time as its arrival, and asks for the scans that had arrived by the frame's bag time plus
the wait: the node's wait, in bag time.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import NamedTuple, Optional

import numpy as np

from tt_depth_ros.ros.msgs.cloud import cloud_xyz
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns

TOPIC = 'metric_cloud'
CAPACITY = 20
"""Scans kept (two seconds of a 10 Hz LiDAR: a frame's scan is among them)."""


class Scan(NamedTuple):
    """One LiDAR scan: its stamp, frame and points (N, 3) float32 in that frame."""

    stamp_ns: int
    frame_id: str
    points: np.ndarray
    arrival: int


class MetricClouds:
    """Scans by stamp (thread-safe: the executor puts, the worker reads)."""

    def __init__(self) -> None:
        self._scans: deque[Scan] = deque(maxlen=CAPACITY)
        self._cond = threading.Condition()
        self._count = 0

    def put(self, msg, arrival: Optional[int] = None) -> Optional[str]:
        """Keep one sensor_msgs/PointCloud2; returns why it is unusable (None when kept).

        `arrival`: offline, the message's bag time; live, the order of arrival.
        """
        try:
            points = cloud_xyz(msg)
        except ValueError as exc:
            return f'{TOPIC}: {exc}'
        frame = msg.header.frame_id.lstrip('/')
        if not frame:
            return f'{TOPIC}: a scan without header.frame_id cannot be placed with TF'
        with self._cond:
            self._count += 1
            self._scans.append(Scan(stamp_to_ns(msg.header.stamp), frame, points,
                                    self._count if arrival is None else int(arrival)))
            self._cond.notify_all()
        return None

    def nearest(self, stamp_ns: int, tolerance_ns: int, wait_s: float = 0.0,
                arrived_by: Optional[int] = None) -> tuple[Optional[Scan], str]:
        """(the scan nearest `stamp_ns` within `tolerance_ns`, '') or (None, why not).

        Waits up to `wait_s` for a scan stamped at or after `stamp_ns` (then nothing nearer
        can come from a LiDAR publishing in stamp order). `arrived_by` (offline) limits the
        choice to scans whose arrival (bag time) is at most that.
        """
        stamp_ns = int(stamp_ns)
        with self._cond:
            if wait_s > 0:
                self._cond.wait_for(lambda: any(s.stamp_ns >= stamp_ns for s in self._scans),
                                    wait_s)
            scans = [s for s in self._scans if arrived_by is None or s.arrival <= arrived_by]
        if not scans:
            return None, f"no scan on '{TOPIC}' yet"
        best = min(scans, key=lambda s: (abs(s.stamp_ns - stamp_ns), s.stamp_ns))
        gap = abs(best.stamp_ns - stamp_ns) / 1e9
        if abs(best.stamp_ns - stamp_ns) > tolerance_ns:
            return None, (f"no scan on '{TOPIC}' within {tolerance_ns / 1e9:g} s of the image "
                          f'stamp (nearest {gap:.3f} s away)')
        return best, ''

    def clear(self) -> None:
        """Activate: forget earlier scans."""
        with self._cond:
            self._scans.clear()
