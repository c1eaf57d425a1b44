"""The pair node's host interface offline (ros/pair/host.py `PairHost`), without rclpy.

The pair node's modes, steps and publishing rules run unchanged on `OfflinePairHost`:
subscriptions are recorded (resolved like ROS names: relative ones in the node's namespace, then
`remap`) and the job (tools/batch/pair_bag.py) delivers the bag's messages to them; an `offer`
queues the item for the job instead of a mailbox (every item is processed); a publisher writes
each message to the job's `sink` (the output bag records every topic, so every output is built).
Admission, decoding, CameraInfo by stamp, rectification and reject reports are the node's own
parts (ros/runtime/inputs/, ros/runtime/rejects.py).
"""
from __future__ import annotations

import dataclasses
import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from tf2_msgs.msg import TFMessage

from tt_depth_ros.ros.pair.host import PairHost
from tt_depth_ros.ros.pair.params import PairParams
from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.engine_builder import PreparedShapes
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraViews
from tt_depth_ros.ros.runtime.inputs.subscriptions import NodeInputs
from tt_depth_ros.ros.runtime.rejects import RejectReporter
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer
from tt_depth_ros.tools.batch.offline_log import OfflineLogger


class OfflinePublisher:
    """A publisher whose messages go to `sink(topic, msg_type, msg)`; always subscribed."""

    def __init__(self, topic: str, msg_type, sink: Callable) -> None:
        self.topic_name, self._type, self._sink = topic, msg_type, sink

    def publish(self, msg) -> None:
        self._sink(self.topic_name, self._type, msg)

    def get_subscription_count(self) -> int:
        return 1   # the output bag records every topic


@dataclass
class Subscription:
    """One recorded subscription: the resolved topic, its message type, the callback."""

    topic: str
    msg_type: type
    callback: Callable
    image: bool = False


class OfflinePairHost(PairHost):
    """A pair node's host for one bag (see the module docstring).

    Args:
        p: the node's parameter values (camera_info_wait_s and metric_depth_wait_s are 0:
            the job's look-ahead in bag time replaces the worker's wall-clock waits).
        engine: the built engine (shared by every node of a process).
        ns: the node's namespace ('/rig'): relative topic names resolve in it.
        remap: {resolved name: bag topic}, as `--ros-args -r` would remap the node's inputs.
        sink: where published messages go: `sink(topic, msg_type, msg)`.
        logger: where the node's log lines go.
    """

    def __init__(self, p: PairParams, engine, ns: str, remap: dict[str, str], sink: Callable,
                 logger: OfflineLogger) -> None:
        self._params = dataclasses.replace(p, camera_info_wait_s=0.0, metric_depth_wait_s=0.0)
        self.engine, self.ns, self._remap, self._sink = engine, ns, dict(remap), sink
        self._logger = logger
        self.stats = NodeStats()
        self.skipped: Counter = Counter()
        self.subscriptions: list[Subscription] = []
        self.offered: list = []
        self.prepared = PreparedShapes()
        self._rejects = RejectReporter(logger, self.stats,
                                       lambda: self._params.bad_input_log_period)
        self._inputs = NodeInputs(None, lambda: self._params, None, self.stats, self.reject, None)
        self._views = CameraViews(lambda: self._params, self.reject, logger)

    @property
    def params(self) -> PairParams:
        return self._params

    def resolve(self, name: str) -> str:
        """A node topic name as ROS resolves it: in the namespace, then remapped."""
        full = name if name.startswith('/') else posixpath.join(self.ns, name)
        return self._remap.get(full, full)

    def get_logger(self) -> OfflineLogger:
        return self._logger

    # ---- inputs ---------------------------------------------------------------------------
    def subscribe(self, msg_type, topic: str, callback, image: bool = False) -> Subscription:
        """Record a subscription of `topic` (resolved) for the job to deliver."""
        sub = Subscription(self.resolve(topic), msg_type, callback, image)
        self.subscriptions.append(sub)
        return sub

    def subscribe_image(self, topic: str, callback) -> Subscription:
        if self._params.input_transport == 'compressed':
            return self.subscribe(CompressedImage, f'{topic}/compressed', callback, image=True)
        return self.subscribe(Image, topic, callback, image=True)

    def subscribe_camera_info(self, topic: str, key: str) -> Subscription:
        return self.subscribe(CameraInfo, topic,
                              lambda msg: self._views.on_camera_info(key, topic, msg))

    def subscribe_tf(self, buffer: TfBuffer) -> None:
        self.subscribe(TFMessage, '/tf', lambda m: buffer.add_msg(m, False))
        self.subscribe(TFMessage, '/tf_static', lambda m: buffer.add_msg(m, True))

    def input_history_depth(self) -> int:
        return self._params.input_depth

    def precheck_image(self, msg, key: str) -> bool:
        return self._inputs.precheck(msg, key)

    def offer(self, item) -> None:
        """Queue an item for the job (the node's mailbox would keep only the latest)."""
        self.stats.on_offer(False)
        self.offered.append(item)

    # ---- work -----------------------------------------------------------------------------
    def decode_image(self, msg, key: str):
        return self._inputs.decode(msg, key)

    def camera_view(self, key: str, rgb, stamp, fallback: str):
        return self._views.view(key, rgb, stamp, fallback)

    def ensure_prepared(self, shape: tuple[int, int], resize=None) -> None:
        self.prepared.ensure(self.engine, shape, self._logger, resize)

    def reject(self, reason: str, message: str) -> None:
        self.skipped[reason] += 1
        self._rejects.reject(reason, message)

    def warn_throttled(self, key: str, message: str) -> None:
        self._rejects.warn(key, message)

    # ---- outputs --------------------------------------------------------------------------
    def add_publisher(self, msg_type, topic: str) -> OfflinePublisher:
        return OfflinePublisher(self.resolve(topic), msg_type, self._sink)

    def add_tf_publisher(self, static: bool) -> OfflinePublisher:
        return self.add_publisher(TFMessage, '/tf_static' if static else '/tf')
