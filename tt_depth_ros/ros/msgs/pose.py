"""Pose messages from 4x4 transforms: PoseStamped, TFMessage (/tf) and nav_msgs/Path.

No tf2_ros wheel exists (docs/ros.md §5): transforms are built here from numpy and published as
tf2_msgs/TFMessage on /tf. A transform T_parent_child (4x4, child-frame points to parent frame)
becomes a TransformStamped with header.frame_id = parent, child_frame_id = child, stamped with the
image stamp. Quaternions are (x, y, z, w), normalised, with w >= 0.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Point as PointMsg
from geometry_msgs.msg import Pose, PoseStamped, Quaternion, TransformStamped, Vector3
from nav_msgs.msg import Path
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from tt_depth_ros.geometry.pose.se3 import R_from_quat, make_T, quat_from_R


def frame_id_problem(frame_id: str) -> str | None:
    """Why `frame_id` cannot name a TF frame (tf2 rules), or None when it can.

    tf2 rejects empty names and names with a leading '/'; whitespace never survives tools.
    """
    if not frame_id:
        return 'empty frame_id'
    if frame_id.startswith('/'):
        return f'frame_id {frame_id!r} starts with "/" (tf2 rejects it)'
    if any(c.isspace() for c in frame_id):
        return f'frame_id {frame_id!r} contains whitespace'
    return None


def _check_T(T: np.ndarray) -> np.ndarray:
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError(f'pose must be a finite 4x4 matrix, got shape {T.shape}')
    return T


def quaternion_msg(R: np.ndarray) -> Quaternion:
    """Rotation matrix -> geometry_msgs/Quaternion (w >= 0)."""
    x, y, z, w = quat_from_R(np.asarray(R, dtype=np.float64))
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    return Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))


def pose_msg(T: np.ndarray) -> Pose:
    """4x4 transform -> geometry_msgs/Pose."""
    T = _check_T(T)
    t = T[:3, 3]
    return Pose(position=PointMsg(x=float(t[0]), y=float(t[1]), z=float(t[2])),
                orientation=quaternion_msg(T[:3, :3]))


def pose_stamped_msg(T_parent_child: np.ndarray, stamp, parent_frame: str) -> PoseStamped:
    """Pose of `child` expressed in `parent_frame` at `stamp`."""
    return PoseStamped(header=Header(stamp=stamp, frame_id=parent_frame),
                       pose=pose_msg(T_parent_child))


def transform_stamped_msg(T_parent_child: np.ndarray, stamp, parent_frame: str,
                          child_frame: str) -> TransformStamped:
    """One /tf edge parent -> child."""
    if not parent_frame or not child_frame or parent_frame == child_frame:
        raise ValueError(f'TF needs two different non-empty frame names, got parent '
                         f'{parent_frame!r}, child {child_frame!r}')
    T = _check_T(T_parent_child)
    msg = TransformStamped(header=Header(stamp=stamp, frame_id=parent_frame),
                           child_frame_id=child_frame)
    msg.transform.translation = Vector3(x=float(T[0, 3]), y=float(T[1, 3]), z=float(T[2, 3]))
    msg.transform.rotation = quaternion_msg(T[:3, :3])
    return msg


def tf_message(T_parent_child: np.ndarray, stamp, parent_frame: str,
               child_frame: str) -> TFMessage:
    """TFMessage with one transform (publish on /tf)."""
    return TFMessage(transforms=[transform_stamped_msg(T_parent_child, stamp, parent_frame,
                                                       child_frame)])


def path_msg(poses: list[tuple[object, np.ndarray]], frame: str, stamp=None) -> Path:
    """nav_msgs/Path in `frame` from (stamp, T_frame_camera) pairs; header stamp = last pose's."""
    msgs = [pose_stamped_msg(T, s, frame) for s, T in poses]
    if stamp is None and msgs:
        stamp = msgs[-1].header.stamp
    header = Header(frame_id=frame)
    if stamp is not None:
        header.stamp = stamp
    return Path(header=header, poses=msgs)


def T_from_pose_msg(pose: Pose) -> np.ndarray:
    """geometry_msgs/Pose -> 4x4 (for tests and tools)."""
    q, p = pose.orientation, pose.position
    return make_T(R_from_quat([q.x, q.y, q.z, q.w]), [p.x, p.y, p.z])


def T_from_transform_msg(tf: TransformStamped) -> np.ndarray:
    """TransformStamped -> 4x4 T_parent_child."""
    tr, q = tf.transform.translation, tf.transform.rotation
    pose = Pose(position=PointMsg(x=tr.x, y=tr.y, z=tr.z), orientation=q)
    return T_from_pose_msg(pose)
