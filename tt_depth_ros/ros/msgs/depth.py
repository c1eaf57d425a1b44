"""Depth map -> sensor_msgs/Image (REP 118 32FC1 metres or 16UC1 millimetres) and rgb8 images.

Mirrors depth_image_proc's depth traits: float metres with NaN invalid / +Inf no return, or uint16
millimetres with 0 invalid (NaN, +-Inf, <= 0 and values beyond 65.535 m all map to 0 because the
format cannot express them). The message buffer is filled with one memcpy from the numpy array
(and not copied again on assignment: see `no_copy_kwargs`).
"""
from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import Image

DEPTH_ENCODINGS = ('32FC1', '16UC1')


def no_copy_kwargs(msg_type: type) -> dict:
    """Constructor kwargs under which assigning an array('B') to `msg.data` stores it, uncopied.

    Generated Python messages (rosidl_python, Jazzy and later) copy an assigned array.array
    element buffer unless the message checks its fields (`check_fields=True`, the per-message form
    of ROS_PYTHON_CHECK_FIELDS=1); a checking message keeps the array as is (after asserting its
    typecode). Generators without that argument get none.
    """
    return {'check_fields': True} if '_check_fields' in getattr(msg_type, '__slots__', ()) else {}


def fill_image_data(msg: Image, arr: np.ndarray) -> Image:
    """Copy a numpy array into msg.data with one memcpy; sets is_bigendian; returns msg.

    The memcpy is the only copy when msg was built with `no_copy_kwargs(Image)`.
    """
    arr = np.ascontiguousarray(arr)
    buf = array.array('B')
    buf.frombytes(memoryview(arr).cast('B'))
    msg.data = buf
    msg.is_bigendian = 0 if np.little_endian else 1
    return msg


def depth_to_millimetres(depth_m: np.ndarray) -> np.ndarray:
    """(H, W) metres -> uint16 millimetres, rounded; 0 where invalid or out of range."""
    with np.errstate(invalid='ignore'):
        mm = np.rint(np.asarray(depth_m, dtype=np.float64) * 1000.0)
        ok = np.isfinite(mm) & (mm > 0) & (mm <= 65535)
    return np.where(ok, mm, 0).astype(np.uint16)


def depth_image_msg(depth: np.ndarray, header, encoding: str = '32FC1') -> Image:
    """Build a depth Image with the given header.

    Args:
        depth: (H, W) metres (float).
        header: std_msgs/Header to copy (stamp and frame_id of the input image).
        encoding: '32FC1' (metres, NaN invalid, +Inf no return) or '16UC1' (mm, 0 invalid).

    Returns:
        sensor_msgs/Image.
    """
    if encoding not in DEPTH_ENCODINGS:
        raise ValueError(f'depth encoding must be one of {DEPTH_ENCODINGS}, got {encoding!r}')
    if depth.ndim != 2:
        raise ValueError(f'depth must be (H, W), got shape {depth.shape}')
    if encoding == '32FC1':
        data = depth.astype(np.float32, copy=False)
    else:
        data = depth_to_millimetres(depth)
    msg = Image(header=header, height=int(depth.shape[0]), width=int(depth.shape[1]),
                encoding=encoding, step=int(depth.shape[1] * data.itemsize),
                **no_copy_kwargs(Image))
    return fill_image_data(msg, data)


def rgb_image_msg(rgb: np.ndarray, header) -> Image:
    """(H, W, 3) uint8 RGB -> rgb8 Image with the given header."""
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f'rgb must be (H, W, 3) uint8, got {rgb.shape} {rgb.dtype}')
    msg = Image(header=header, height=int(rgb.shape[0]), width=int(rgb.shape[1]),
                encoding='rgb8', step=int(rgb.shape[1] * 3), **no_copy_kwargs(Image))
    return fill_image_data(msg, rgb)


def image_msg_to_depth(msg: Image) -> np.ndarray:
    """Read a 32FC1 / 16UC1 depth Image back to (H, W) float32 metres (16UC1: 0 -> NaN)."""
    if msg.encoding not in DEPTH_ENCODINGS:
        raise ValueError(f'not a depth encoding: {msg.encoding!r}')
    dt = np.dtype('<f4' if msg.encoding == '32FC1' else '<u2')
    if msg.is_bigendian:
        dt = dt.newbyteorder('>')
    rows = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.step)
    raw = np.ascontiguousarray(rows[:, :msg.width * dt.itemsize]).view(dt).reshape(
        msg.height, msg.width)
    if msg.encoding == '32FC1':
        return raw.astype(np.float32)
    out = raw.astype(np.float32) / 1000.0
    out[raw == 0] = np.nan
    return out
