"""A node's lifecycle publishers: created at configure with the output QoS, destroyed at cleanup."""
from __future__ import annotations

from typing import Callable

from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.qos import publisher_events


class NodePublishers:
    """The lifecycle publishers of one node (enabled by activate, silent while inactive).

    Args:
        node: the rclpy lifecycle node that creates and destroys them.
        qos: the node's output QoS.
        stats: the node's statistics (incompatible-QoS events are counted as rejects).
    """

    def __init__(self, node, qos: Callable, stats: NodeStats) -> None:
        self._node, self._qos, self._stats = node, qos, stats
        self._pubs: list = []

    def add(self, msg_type, topic: str):
        """Lifecycle publisher with the output QoS and incompatible-QoS logging."""
        pub = self._node.create_lifecycle_publisher(
            msg_type, topic, self._qos(),
            event_callbacks=publisher_events(self._node.get_logger(), topic,
                                             lambda t: self._stats.on_reject('qos', t)))
        return self.track(pub)

    def track(self, pub):
        """Own a lifecycle publisher created elsewhere (e.g. with tf2's QoS)."""
        self._pubs.append(pub)
        return pub

    def destroy_all(self) -> None:
        """Destroy every publisher (cleanup, error, shutdown)."""
        for pub in self._pubs:
            self._node.destroy_lifecycle_publisher(pub)
        self._pubs.clear()
