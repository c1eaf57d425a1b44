"""Temporal mode of the pair node: one moving camera, each frame against the current keyframe.

Inputs image + camera_info of one camera. Poses chain keyframe to keyframe
(geometry/pose/keyframes.py) in an odom-like frame whose origin is the first keyframe; DA3 any-view
models may add earlier keyframes to each forward (`window_size`). A frame without a pose cannot be
placed and is skipped. With `robot_base_frame` the chain is mapped to odom -> base_link with the
camera mounting from the robot's TF tree (ros/pair/odometry.py, ros/runtime/tf/tf_buffer.py).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tt_depth_ros.geometry.pose.keyframes import KeyframeChain, KeyframePolicy
from tt_depth_ros.geometry.pose.se3 import invert_T
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.pair.mode import PairMode, Published
from tt_depth_ros.ros.pair.odometry import RobotOdometry
from tt_depth_ros.ros.pair.outputs import PairPublishers
from tt_depth_ros.ros.pair.steps import PairSteps
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer, TfLookupError

ROBOT_FRAMES = ('odom', 'map', 'base_link', 'base_footprint', 'world')   # REP 105 names


@dataclass(frozen=True)
class TemporalFrame:
    """A frame as a keyframe keeps it: its message (header) and its camera view."""

    msg: Any
    view: CameraView


class TemporalMode(PairMode):
    """Keyframe chain, inputs and per-frame work of one moving camera (arguments: PairMode)."""

    def __init__(self, node, steps: PairSteps, outputs: PairPublishers,
                 metric_for: Callable) -> None:
        super().__init__(node, steps, outputs, metric_for)
        node, p = self._node, self._node.params
        self.tf_buffer = TfBuffer()
        self.robot = (RobotOdometry(self.tf_buffer, p.robot_base_frame)
                      if p.robot_base_frame else None)
        if self.robot is None and p.tf_parent_frame in ROBOT_FRAMES:
            node.get_logger().warning(
                f"tf_parent_frame={p.tf_parent_frame!r} only renames the parent: the "
                "transform is still the camera's optical-axis motion from the first keyframe, "
                "not a robot pose; use robot_base_frame:=base_link for odom -> base_link")
        self.chain = KeyframeChain(KeyframePolicy(p.keyframe_every_n,
                                                  p.keyframe_max_rotation_deg,
                                                  p.keyframe_max_translation))
        self._window: deque = deque()    # earlier keyframes (rgb) of the temporal window

    def create_inputs(self) -> None:
        """The camera's image and camera_info, and the robot's TF when mapping to a base."""
        node = self._node
        self.chain.reset()
        self._window = deque(maxlen=max(node.params.window_size - 2, 0))
        node.subscribe_camera_info('camera_info', 'camera')
        node.subscribe_image('image', self._on_image)
        if self.robot is not None:   # the camera mounting, from the robot's TF tree
            self.robot.reset()
            self.tf_buffer.clear()
            node.subscribe_tf(self.tf_buffer)

    def _on_image(self, msg) -> None:
        node = self._node
        node.stats.on_input()
        if node.precheck_image(msg, 'camera'):
            node.offer(msg)

    def _history(self):
        """The published trajectory, (stamp_ns, T) oldest first (for `path`)."""
        return self.robot.history if self.robot is not None else self.chain.history

    def process(self, msg) -> Published | None:
        """Worker: one frame against the keyframe to cloud, depth, confidence and pose."""
        node, steps, out, p = self._node, self._steps, self._out, self._node.params
        view = steps.view(msg, 'camera')
        if view is None:
            return None
        stamp_ns = stamp_to_ns(msg.header.stamp)
        parent = p.tf_parent_frame or 'dust3r_odom'
        child = p.tf_child_frame or f'{msg.header.frame_id or "camera"}_dust3r'
        mount = None
        if self.robot is not None:   # odom -> base_link instead of the camera chain
            parent, child = p.odom_frame, self.robot.base_frame
            try:
                mount = self.robot.mount(msg.header.frame_id, stamp_ns)
            except TfLookupError as exc:
                node.reject('tf_mount', f'camera mounting {child} <- '
                            f'{msg.header.frame_id!r} unknown: {exc}')
                return None
        frame = TemporalFrame(msg, view)
        if self.chain.keyframe is None:
            return self._start_chain(frame, stamp_ns, parent, child, mount)
        key: TemporalFrame = self.chain.keyframe.data
        result = steps.run(key.view, view, tuple(reversed(self._window)))
        if result is None:
            return None
        if not steps.pose_ok(result, skips_frame=True):
            return None
        z_key = result.pts1[..., 2]
        scale = steps.pipeline.chain_scale(self.chain.pair_scale(z_key, result.mask1))
        if not steps.scale_ok(scale):
            return None
        z_frame = result.depth2(1.0)
        # a fresh metric reference if one is already there; else the propagated one is used
        metric = self._metric_for(stamp_ns, wait=False)
        metric_grid = None if metric is None else steps.pipeline.metric_on_grid(result.plan2,
                                                                                metric)
        step = self.chain.track(result.T_units, scale, frame, stamp_ns,
                                frame_depth=np.nan_to_num(z_frame, nan=0.0),
                                frame_mask=result.mask2, frame_metric_depth=metric_grid)
        if step.promoted and self._window.maxlen:
            self._window.append(key.view.rgb)     # the old keyframe joins the window
        steps.figures.record(keyframes=self.chain.keyframes_made,
                             **({'last_keyframe_reason': step.promoted} if step.promoted else {}))
        if out.wants_points():   # cloud in the current camera
            xyz, colors = result.fused_points(scale.value, invert_T(step.T_key_frame))
            out.publish_points(xyz, colors, msg.header)
        out.publish_depth('depth', result.depth2(scale.value), result.K2_net, msg.header, scale,
                          result.plan2)
        out.publish_confidence(result.conf2, result.plan2, msg.header)
        T_pub = step.T_odom_frame if mount is None else self.robot.base_pose(
            step.T_odom_frame, mount, stamp_ns)
        out.publish_pose(T_pub, msg.header.stamp, parent, child, scale.metric,
                         history=self._history())
        return Published(msg.header, dict(result.timings))

    def _start_chain(self, frame: TemporalFrame, stamp_ns: int, parent: str, child: str,
                     mount) -> Published | None:
        """The first keyframe: the odom origin (metric reference when scale_source='depth')."""
        node, steps, msg = self._node, self._steps, frame.msg
        ref, metric = None, False
        if node.params.scale_source == 'depth':
            depth = self._metric_for(stamp_ns)
            if depth is None:
                node.reject('scale', 'no metric depth with the stamp of the first keyframe; '
                            'waiting for one')
                return None
            rgb = frame.view.rgb
            plan = steps.pipeline.plan_for(rgb.shape[1], rgb.shape[0])
            ref, metric = steps.pipeline.metric_on_grid(plan, depth), True
        self.chain.start(frame, stamp_ns, ref, metric)
        if mount is not None:
            self.robot.start(mount, stamp_ns)
        steps.figures.record(keyframes=1, last_keyframe_reason='first frame (odom origin)')
        # The first keyframe IS the odom origin: its identity pose is exact, not a placeholder.
        self._out.publish_pose(np.eye(4), msg.header.stamp, parent, child, metric,
                               history=self._history())
        return Published(msg.header, {})
