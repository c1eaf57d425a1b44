"""A node's host interface without rclpy: what its parts subscribe and publish, offline.

The pair node's per-pair work (ros/pair/stereo.py, temporal.py, steps.py, outputs.py, built by
ros/pair/node.py `pair_work`) and the depth node's relative / NESTED outputs
(ros/depth/relative_outputs.py) talk to their node through a few methods: subscribe, precheck,
decode, camera view, prepare, reject, offer, publish. `OfflineNode` provides them over the
node's own parts (ros/runtime/inputs/subscriptions.py admission and decoding, camera_views.py,
rejects.py, engine_builder.py PreparedShapes) so tt-depth-batch runs that work unchanged:
subscriptions are recorded (resolved like ROS names: relative ones in the node's namespace, then
`remap`), the job (tools/batch/pair_bag.py) delivers the bag's messages to them, an `offer` queues
the item for the job instead of a mailbox (every item is processed), and a publisher writes each
message to the job's `sink` (a bag recorder subscribes to every topic, so every output is built).
"""
from __future__ import annotations

import logging
import posixpath
import sys
import time
from collections import Counter
from typing import Callable

from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.engine_builder import PreparedShapes
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraViews
from tt_depth_ros.ros.runtime.inputs.subscriptions import NodeInputs
from tt_depth_ros.ros.runtime.qos import qos_profile
from tt_depth_ros.ros.runtime.rejects import RejectReporter


class OfflineLogger:
    """An rclpy-logger face over `logging`: `once=True` and `throttle_duration_sec` as rclpy's.

    rclpy throttles per call site; so does this (wall time), so a bag with a bad stream logs
    like the node, not once per frame.
    """

    def __init__(self, prefix: str, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger('tt_depth_batch')
        self._prefix, self._once, self._last = prefix, set(), {}

    def _emit(self, level: int, msg: str, once: bool, throttle_duration_sec) -> None:
        if once:
            if msg in self._once:
                return
            self._once.add(msg)
        if throttle_duration_sec:
            caller = sys._getframe(2)
            site, now = (caller.f_code.co_filename, caller.f_lineno), time.monotonic()
            if now - self._last.get(site, -1e18) < throttle_duration_sec:
                return
            self._last[site] = now
        self._log.log(level, f'{self._prefix}{msg}')

    def info(self, msg: str, once: bool = False, throttle_duration_sec=None) -> None:
        self._emit(logging.INFO, msg, once, throttle_duration_sec)

    def warning(self, msg: str, once: bool = False, throttle_duration_sec=None) -> None:
        self._emit(logging.WARNING, msg, once, throttle_duration_sec)

    def error(self, msg: str, once: bool = False, throttle_duration_sec=None) -> None:
        self._emit(logging.ERROR, msg, once, throttle_duration_sec)


class OfflinePublisher:
    """A publisher whose messages go to `sink(topic, msg_type, msg)`; always subscribed."""

    def __init__(self, topic: str, msg_type, sink: Callable) -> None:
        self.topic_name, self._type, self._sink = topic, msg_type, sink

    def publish(self, msg) -> None:
        self._sink(self.topic_name, self._type, msg)

    def get_subscription_count(self) -> int:
        return 1   # the output bag records every topic


class Subscription:
    """One recorded subscription: the resolved topic, its message type, the callback."""

    def __init__(self, topic: str, msg_type, callback: Callable, image: bool) -> None:
        self.topic, self.msg_type, self.callback, self.image = topic, msg_type, callback, image

    @property
    def topic_name(self) -> str:
        return self.topic


class OfflineNode:
    """The node methods the pair node's modes, steps and outputs call (see the module docstring).

    Args:
        p: the node's parameter values (camera_info_wait_s and metric_depth_wait_s are 0:
            the job's look-ahead in bag time replaces the worker's wall-clock waits).
        engine: the built engine (shared by every node of a process).
        ns: the node's namespace ('/rig'): relative topic names resolve in it.
        remap: {resolved name: bag topic}, as `--ros-args -r` would remap the node's inputs.
        sink: where published messages go: `sink(topic, msg_type, msg)`.
        logger: where the node's log lines go.
        bag_topics: the input bag's topics (`count_publishers`: who would publish them).
    """

    def __init__(self, p: dict, engine, ns: str, remap: dict[str, str], sink: Callable,
                 logger: OfflineLogger, bag_topics=()) -> None:
        self.params = dict(p, camera_info_wait_s=0.0, metric_depth_wait_s=0.0)
        self.engine, self.ns, self._remap, self._sink = engine, ns, dict(remap), sink
        self._logger = logger
        self.stats = NodeStats()
        self.skipped: Counter = Counter()
        self.subscriptions: list[Subscription] = []
        self.offered: list = []
        self.prepared = PreparedShapes()
        self._rejects = RejectReporter(logger, self.stats,
                                       lambda: self.params['bad_input_log_period'])
        self.inputs = NodeInputs(None, self.params, None, self.stats, self.reject, None)
        self.camera_views = CameraViews(self.params, self.reject, logger)
        self._bag_topics = set(bag_topics)
        self.camera_info_sub: Subscription | None = None   # the depth node's (subscribe_...)

    def resolve(self, name: str) -> str:
        """A node topic name as ROS resolves it: in the namespace, then remapped."""
        full = name if name.startswith('/') else posixpath.join(self.ns, name)
        return self._remap.get(full, full)

    def get_logger(self) -> OfflineLogger:
        return self._logger

    # ---- inputs ---------------------------------------------------------------------------
    def create_subscription(self, msg_type, topic: str, callback, qos=None, **_) -> Subscription:
        sub = Subscription(self.resolve(topic), msg_type, callback, image=False)
        self.subscriptions.append(sub)
        return sub

    def subscribe_image(self, topic: str, callback) -> Subscription:
        compressed = self.params['input_transport'] == 'compressed'
        msg_type, name = (CompressedImage, f'{topic}/compressed') if compressed else (Image, topic)
        sub = self.create_subscription(msg_type, name, callback)
        sub.image = True
        return sub

    def subscribe_camera_info(self, topic: str, key: str) -> Subscription:
        self.camera_info_sub = self.create_subscription(
            CameraInfo, topic, lambda msg: self.camera_views.on_camera_info(key, topic, msg))
        return self.camera_info_sub

    @property
    def camera_infos(self):
        """Each camera's CameraInfos by stamp (ros/runtime/inputs/camera_info_sync.py)."""
        return self.camera_views.store

    def count_publishers(self, topic: str) -> int:
        """1 when the input bag has `topic` (its recorder's publisher), else 0."""
        return int(topic in self._bag_topics)

    def track_subscription(self, sub):
        return sub

    def input_qos(self):
        return qos_profile(self.params['input_reliability'], self.params['input_depth'])

    def precheck_image(self, msg, key: str) -> bool:
        return self.inputs.precheck(msg, key)

    def decode_image(self, msg, key: str):
        return self.inputs.decode(msg, key)

    def camera_view(self, key: str, rgb, stamp,
                    fallback: str = 'using the default focal; the metric scale is unreliable'):
        return self.camera_views.view(key, rgb, stamp, fallback)

    def offer(self, item) -> None:
        """Queue an item for the job (the node's mailbox would keep only the latest)."""
        self.stats.on_offer(False)
        self.offered.append(item)

    # ---- work -----------------------------------------------------------------------------
    def ensure_prepared(self, shape: tuple[int, int], resize=None) -> None:
        self.prepared.ensure(self.engine, shape, self._logger, resize)

    def reject(self, reason: str, message: str) -> None:
        self.skipped[reason] += 1
        self._rejects.reject(reason, message)

    # ---- outputs --------------------------------------------------------------------------
    def add_publisher(self, msg_type, topic: str) -> OfflinePublisher:
        return OfflinePublisher(self.resolve(topic), msg_type, self._sink)

    def create_lifecycle_publisher(self, msg_type, topic: str, qos=None) -> OfflinePublisher:
        return self.add_publisher(msg_type, topic)

    def track_publisher(self, pub):
        return pub

    def publish_compressed_depth(self, pub, depth, header) -> None:
        from tt_depth_ros.ros.depth.node import publish_compressed_depth
        publish_compressed_depth(self.params, pub, depth, header)
