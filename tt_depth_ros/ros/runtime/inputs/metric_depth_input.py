"""The `metric_depth` side input of scale_source=depth: metric depth images by exact stamp.

Both nodes scale a relative result (DUSt3R pointmaps, DA3 relative depth) by the median ratio to a
metric depth image of the same view - a metric depth node's output or a LiDAR projected into the
camera - that usually arrives a little after the camera image, so the worker may wait for the one
with its stamp (`metric_depth_wait_s`, ros/runtime/inputs/stamp_cache.py). The node subscribes
`TOPIC` and hands each message to `put`; a message that is no depth image comes back as an error
text, which the node reports as a [metric_depth] reject. tt-depth-batch fills it from the bag.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.ros.msgs.depth import image_msg_to_depth
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.stamp_cache import StampedCache

TOPIC = 'metric_depth'
CAPACITY = 30
"""Images kept (about a second of a 30 Hz stream: enough for the worker's frame to find its own)."""


class MetricDepthImages:
    """Metric depth images by stamp (thread-safe: the executor puts, the worker reads)."""

    def __init__(self) -> None:
        self._cache = StampedCache(CAPACITY)

    def put(self, msg) -> str | None:
        """Cache one sensor_msgs/Image; returns why it is unusable (None when cached)."""
        try:
            depth = image_msg_to_depth(msg)
        except ValueError as exc:
            return f'{TOPIC}: {exc}'
        self._cache.put(stamp_to_ns(msg.header.stamp), depth)
        return None

    def image_for(self, stamp_ns: int, wait_s: float = 0.0) -> np.ndarray | None:
        """The metric depth image with exactly this stamp, waiting up to `wait_s`; else None."""
        return self._cache.get(stamp_ns, wait_s)

    def clear(self) -> None:
        """Activate: forget earlier images."""
        self._cache.clear()
