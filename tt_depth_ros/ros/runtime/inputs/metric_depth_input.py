"""The `metric_depth` side input of scale_source=depth: metric depth images by exact stamp.

Both nodes scale a relative result (DUSt3R pointmaps, DA3 relative depth) by the median ratio to a
metric depth image of the same view - a metric depth node's output or a LiDAR projected into the
camera - that usually arrives a little after the camera image, so the worker may wait for the one
with its stamp (`metric_depth_wait_s`, ros/runtime/inputs/stamp_cache.py). A message that is no
depth image is rejected as [metric_depth] (the node's throttled bad-input report).
"""
from __future__ import annotations

import numpy as np
from sensor_msgs.msg import Image

from tt_depth_ros.ros.msgs.depth import image_msg_to_depth
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.stamp_cache import StampedCache

TOPIC = 'metric_depth'
CAPACITY = 30
"""Images kept (about a second of a 30 Hz stream: enough for the worker's frame to find its own)."""


class MetricDepthInput:
    """The subscription and its cache, for a node with `scale_source`, `metric_depth_wait_s`.

    Args:
        node: The PerceptionLifecycleNode it belongs to.
    """

    def __init__(self, node) -> None:
        self._node = node
        self._cache = StampedCache(CAPACITY)

    def start(self) -> None:
        """Activate: forget earlier images; subscribe when scale_source is 'depth'."""
        self._cache.clear()
        node = self._node
        if node.params['scale_source'] == 'depth':
            node.track_subscription(node.create_subscription(Image, TOPIC, self._on_image,
                                                             node.input_qos()))

    def _on_image(self, msg) -> None:
        try:
            depth = image_msg_to_depth(msg)
        except ValueError as exc:
            self._node.reject('metric_depth', f'{TOPIC}: {exc}')
            return
        self._cache.put(stamp_to_ns(msg.header.stamp), depth)

    def image_for(self, stamp_ns: int, wait: bool = True) -> np.ndarray | None:
        """The metric depth image with exactly this stamp, or None.

        None without scale_source 'depth' or when it did not arrive within metric_depth_wait_s
        (no wait when `wait` is False).
        """
        node = self._node
        if node.params['scale_source'] != 'depth':
            return None
        return self._cache.get(stamp_ns, node.params['metric_depth_wait_s'] if wait else 0.0)
