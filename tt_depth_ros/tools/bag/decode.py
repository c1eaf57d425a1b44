"""Serialized ROS messages (as raw subscriptions and bags give them) -> numpy arrays.

Decoded with rclpy and numpy only: RGB images, depth images (32FC1 metres or 16UC1 millimetres),
PointCloud2 clouds (depth_image_proc layout: x, y, z at 0/4/8, packed rgb at 16) and PoseStamped
poses. The benchmark, its trajectory pass and the demo read node outputs and bag ground truth
through these.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class DecodedCloud(NamedTuple):
    """A PointCloud2's points: (N, 3) float32 xyz (NaNs kept) and (N, 3) uint8 rgb or None."""

    xyz: np.ndarray
    rgb: np.ndarray | None


class DecodedPose(NamedTuple):
    """A PoseStamped: the 4x4 transform and its header frame_id."""

    T: np.ndarray
    frame_id: str


def decode_rgb(raw: bytes) -> np.ndarray:
    """Serialized sensor_msgs/Image (rgb8 or bgr8) -> (H, W, 3) uint8 RGB."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    msg = deserialize_message(raw, Image)
    if msg.encoding not in ('rgb8', 'bgr8'):
        raise ValueError(f'expected rgb8/bgr8 input, got {msg.encoding!r}')
    a = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.step)
    a = a[:, :msg.width * 3].reshape(msg.height, msg.width, 3)
    return a[..., ::-1].copy() if msg.encoding == 'bgr8' else a.copy()


def decode_depth(raw: bytes) -> np.ndarray:
    """Serialized sensor_msgs/Image (32FC1 m or 16UC1 mm, 0 = invalid) -> float32 metres."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    msg = deserialize_message(raw, Image)
    dtypes = {'32FC1': np.dtype('<f4'), '16UC1': np.dtype('<u2')}
    if msg.encoding not in dtypes:
        raise ValueError(f'depth encoding {msg.encoding!r} not supported (32FC1 or 16UC1)')
    dt = dtypes[msg.encoding]
    a = np.frombuffer(bytes(msg.data), dtype=dt if not msg.is_bigendian else dt.newbyteorder())
    a = a.reshape(msg.height, msg.step // dt.itemsize)[:, :msg.width]
    if msg.encoding == '16UC1':
        out = a.astype(np.float32) / 1000.0
        out[a == 0] = np.nan
        return out
    return a.astype(np.float32)


def decode_cloud(raw: bytes) -> DecodedCloud:
    """Serialized PointCloud2 -> its xyz (NaNs kept) and rgb (None without an rgb field)."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2

    msg = deserialize_message(raw, PointCloud2)
    fields = {f.name: f.offset for f in msg.fields}
    if not {'x', 'y', 'z'} <= set(fields):
        raise ValueError(f'cloud has no x/y/z fields: {sorted(fields)}')
    names, formats, offsets = ['x', 'y', 'z'], ['<f4'] * 3, [fields[k] for k in 'xyz']
    if 'rgb' in fields:
        names.append('rgb')
        formats.append('<u4')
        offsets.append(fields['rgb'])
    dt = np.dtype({'names': names, 'formats': formats, 'offsets': offsets,
                   'itemsize': msg.point_step})
    n = msg.width * msg.height
    rec = np.frombuffer(bytes(msg.data), dtype=dt, count=n)
    xyz = np.stack([rec['x'], rec['y'], rec['z']], axis=-1).astype(np.float32)
    rgb = None
    if 'rgb' in fields:
        packed = rec['rgb']
        rgb = np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255],
                       axis=-1).astype(np.uint8)
    return DecodedCloud(xyz, rgb)


def decode_pose(raw: bytes) -> DecodedPose:
    """Serialized geometry_msgs/PoseStamped -> 4x4 T and header frame_id."""
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import deserialize_message

    from tt_depth_ros.geometry.pose.se3 import R_from_quat

    msg = deserialize_message(raw, PoseStamped)
    p, q = msg.pose.position, msg.pose.orientation
    T = np.eye(4)
    T[:3, :3] = R_from_quat((q.x, q.y, q.z, q.w))
    T[:3, 3] = (p.x, p.y, p.z)
    return DecodedPose(T, msg.header.frame_id)
