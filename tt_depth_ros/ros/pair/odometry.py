"""Temporal mode as visual odometry of the ROBOT: odom -> base_link (REP 105), not camera axes.

The keyframe chain gives the camera's motion in the first keyframe's optical frame (z forward).
A robot's tree wants the base's motion in `odom` (REP 105: z up, fixed at the start pose). With
the camera mounting T_base_cam read from /tf_static and /tf (ros/runtime/tf/tf_buffer.py; usually
robot_state_publisher's static chain base_link -> camera_link -> camera_optical_frame), odom is
the base pose at the first keyframe, and at any later frame

    T_odom_base(t) = T_base_cam(t0) · T_cam0_cam(t) · T_base_cam(t)^-1

(a moving mount, e.g. a pan-tilt head, is looked up at each image stamp). Only metric
trajectories are mapped: the mounting is in metres.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from tt_depth_ros.geometry.pose.se3 import invert_T
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer

MAX_HISTORY = 100_000


class RobotOdometry:
    """Maps camera-chain poses to base poses in odom; keeps the base trajectory for `path`."""

    def __init__(self, buffer: TfBuffer, base_frame: str) -> None:
        self.buffer, self.base_frame = buffer, base_frame
        self.mount0: np.ndarray | None = None
        self.history: deque = deque(maxlen=MAX_HISTORY)   # (stamp_ns, T_odom_base)

    def mount(self, camera_frame: str, stamp_ns: int) -> np.ndarray:
        """T_base_cam at the image stamp (TfLookupError with the reason if unknown)."""
        return self.buffer.lookup(self.base_frame, camera_frame, stamp_ns)

    def start(self, T_base_cam: np.ndarray, stamp_ns: int) -> np.ndarray:
        """First keyframe: odom = the base pose now; returns T_odom_base (identity)."""
        self.mount0 = np.array(T_base_cam, dtype=np.float64)
        self.history.clear()
        self.history.append((int(stamp_ns), np.eye(4)))
        return np.eye(4)

    def base_pose(self, T_cam0_cam: np.ndarray, T_base_cam: np.ndarray,
                  stamp_ns: int) -> np.ndarray:
        """T_odom_base for a frame whose camera pose in the first keyframe is T_cam0_cam."""
        T = self.mount0 @ np.asarray(T_cam0_cam, dtype=np.float64) @ invert_T(T_base_cam)
        self.history.append((int(stamp_ns), T.copy()))
        return T

    def reset(self) -> None:
        self.mount0 = None
        self.history.clear()
