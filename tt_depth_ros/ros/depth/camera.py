"""One camera of a depth node: everything a single-camera node keeps for its camera, per camera.

A depth node serves one camera (`cameras` empty: today's topics) or several from one engine
(ros/depth/cameras_param.py). Each `DepthCamera` holds its names (`spec`: image and camera_info
topics, output namespace, CameraInfo key), its subscriptions, the scale's side inputs
(ros/depth/scale_inputs.py) and the scale's memory (pipelines/depth_scale.py `ScaleState`: the
filter, the previous frame), its last-frame figures, its publishers and its statistics, so a
camera's frame is scaled, published and counted exactly as a single-camera node in that namespace
would do it, and no state crosses from one camera to another. The node creates them at configure
(ros/depth/node.py); the worker's items are `CameraFrame`s, which name their camera.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from tt_depth_ros.pipelines.depth_scale import ScaleState
from tt_depth_ros.ros.depth.cameras_param import CameraSpec
from tt_depth_ros.ros.depth.figures import DepthFigures
from tt_depth_ros.ros.depth.scale_inputs import ScaleSideInputs
from tt_depth_ros.ros.msgs.cloud import CloudBuffer
from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.inputs.metric_cloud_input import TOPIC as METRIC_CLOUD
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import TOPIC as METRIC_DEPTH
from tt_depth_ros.ros.runtime.scheduler import SlotPolicy


class DepthCamera:
    """The per-camera state of a depth node (module docstring).

    Args:
        spec: the camera's names, expected size and scheduling policy.
        side_inputs: its scale side inputs (a node shares one TF buffer between cameras).
    """

    def __init__(self, spec: CameraSpec, side_inputs: Optional[ScaleSideInputs] = None) -> None:
        self.spec = spec
        self.key = spec.key
        self.side_inputs = side_inputs if side_inputs is not None else ScaleSideInputs()
        self.scale_state = ScaleState()
        self.figures = DepthFigures()
        self.stats = NodeStats()
        self.pubs: dict = {}
        self.cloud_buffer = CloudBuffer()      # the worker publishes each cloud at once
        self.camera_info_sub = None

    @property
    def label(self) -> str:
        """The input's name in reject messages and stamp-order checks ('image' when single)."""
        return 'image' if self.spec.single else self.key

    @property
    def metric_depth_topic(self) -> str:
        """The scale_source=depth input of this camera."""
        return self.spec.output(METRIC_DEPTH)

    @property
    def metric_cloud_topic(self) -> str:
        """The scale_source=cloud input of this camera."""
        return self.spec.output(METRIC_CLOUD)

    @property
    def policy(self) -> SlotPolicy:
        """Its share of the worker (ros/runtime/scheduler.py)."""
        return SlotPolicy(self.spec.priority, self.spec.max_rate_hz)

    def reset(self) -> None:
        """Configure: no figures, no statistics, no scale."""
        self.figures.reset()
        self.stats.reset()
        self.scale_state = ScaleState()

    def listening(self, topic: str) -> bool:
        """Whether an optional output (node-relative name) has a subscriber."""
        pub = self.pubs.get(topic)
        return pub is not None and pub.get_subscription_count() > 0

    def publish(self, msgs) -> None:
        """Publish (relative topic, message) pairs on this camera's publishers, in order."""
        for topic, out in msgs:
            self.pubs[topic].publish(out)


class CameraFrame(NamedTuple):
    """A worker item: one image message and the camera it came from."""

    camera: DepthCamera
    msg: object


def camera_key(item: CameraFrame) -> str:
    """The scheduler slot of a worker item (ros/runtime/scheduler.py `key_of`)."""
    return item.camera.key
