"""Turning the demo's recorded node outputs into files people can look at.

Serialized messages (as received by raw subscriptions) are decoded with rclpy and numpy only:
RGB input images, PointCloud2 clouds (depth_image_proc layout: x, y, z at 0/4/8, packed rgb at
16) and PoseStamped poses. A depth "panel" puts input, prediction and ground truth side by side
with one colour scale, so a wrong metric scale is visible at a glance.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.geometry.colorize import colorize_depth


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


def decode_cloud(raw: bytes) -> tuple[np.ndarray, np.ndarray | None]:
    """Serialized PointCloud2 -> ((N, 3) float32 xyz, (N, 3) uint8 rgb or None); NaNs kept."""
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
    return xyz, rgb


def decode_pose(raw: bytes) -> tuple[np.ndarray, str]:
    """Serialized geometry_msgs/PoseStamped -> (4x4 T, header frame_id)."""
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import deserialize_message

    from tt_depth_ros.geometry.se3 import R_from_quat

    msg = deserialize_message(raw, PoseStamped)
    p, q = msg.pose.position, msg.pose.orientation
    T = np.eye(4)
    T[:3, :3] = R_from_quat((q.x, q.y, q.z, q.w))
    T[:3, 3] = (p.x, p.y, p.z)
    return T, msg.header.frame_id


def depth_panel(rgb: np.ndarray, pred: np.ndarray, gt: np.ndarray | None = None) -> np.ndarray:
    """[input | predicted depth | ground truth] with one colour scale (from the ground truth).

    Args:
        rgb: (H, W, 3) uint8 input.
        pred: (h, w) predicted metres (resized to H x W by nearest neighbour if needed).
        gt: (H, W) true metres, or None.
    """
    from tt_depth_ros.tools.eval.accuracy import resize_nearest

    h, w = rgb.shape[:2]
    if pred.shape != (h, w):
        pred = resize_nearest(pred, (h, w))
    ref = gt if gt is not None else pred
    finite = ref[np.isfinite(ref) & (ref > 0)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    tiles = [rgb, colorize_depth(pred, lo, hi)]
    if gt is not None:
        tiles.append(colorize_depth(gt, lo, hi))
    gap = np.full((h, 4, 3), 255, np.uint8)
    out = []
    for t in tiles:
        out += [t, gap]
    return np.concatenate(out[:-1], axis=1)
