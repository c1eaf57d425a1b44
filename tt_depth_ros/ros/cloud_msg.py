"""Organized sensor_msgs/PointCloud2 in the depth_image_proc layout, built from one numpy array.

Layout (spec/ros.md §7): x, y, z FLOAT32 at offsets 0, 4, 8 and point_step 16; with colour, a
FLOAT32 `rgb` at offset 16 holding 0x00RRGGBB bits and point_step 32. height x width = the depth
grid after decimation, row_step = width * point_step, is_dense false, NaN xyz for invalid points.
The structured array's fields are written in place by geometry.depth_cloud.fill_points and its
bytes copied into the message once — no per-point Python work, no sensor_msgs_py.
"""
from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import PointCloud2, PointField

from tt_depth_ros.geometry.depth_cloud import decimated_shape, fill_points, pack_rgb

XYZ_DTYPE = np.dtype({'names': ['x', 'y', 'z'], 'formats': ['<f4'] * 3,
                      'offsets': [0, 4, 8], 'itemsize': 16})
XYZRGB_DTYPE = np.dtype({'names': ['x', 'y', 'z', 'rgb'], 'formats': ['<f4'] * 4,
                         'offsets': [0, 4, 8, 16], 'itemsize': 32})


def _fields(with_rgb: bool) -> list[PointField]:
    names = ['x', 'y', 'z'] + (['rgb'] if with_rgb else [])
    offsets = [0, 4, 8, 16]
    return [PointField(name=n, offset=o, datatype=PointField.FLOAT32, count=1)
            for n, o in zip(names, offsets)]


def cloud_from_struct(points: np.ndarray, header) -> PointCloud2:
    """Wrap an (h, w) XYZ_DTYPE / XYZRGB_DTYPE structured array as an organized PointCloud2."""
    if points.dtype not in (XYZ_DTYPE, XYZRGB_DTYPE) or points.ndim != 2:
        raise ValueError(f'points must be an (h, w) array of XYZ_DTYPE or XYZRGB_DTYPE, '
                         f'got {points.shape} {points.dtype}')
    h, w = points.shape
    step = points.dtype.itemsize
    buf = array.array('B')
    buf.frombytes(memoryview(np.ascontiguousarray(points)).cast('B'))
    msg = PointCloud2(header=header, height=h, width=w,
                      fields=_fields(points.dtype == XYZRGB_DTYPE), is_bigendian=False,
                      point_step=step, row_step=w * step, is_dense=False)
    msg.data = buf   # assigned after construction: the constructor's data path is ~15x slower
    return msg


def pointcloud2_msg(xyz: np.ndarray, rgb: np.ndarray | None, header) -> PointCloud2:
    """Organized cloud from (h, w, 3) float32 xyz (NaN invalid) and optional (h, w, 3) uint8 rgb."""
    if xyz.ndim != 3 or xyz.shape[2] != 3:
        raise ValueError(f'xyz must be (h, w, 3), got {xyz.shape}')
    pts = np.zeros(xyz.shape[:2], dtype=XYZ_DTYPE if rgb is None else XYZRGB_DTYPE)
    pts['x'], pts['y'], pts['z'] = xyz[..., 0], xyz[..., 1], xyz[..., 2]
    if rgb is not None:
        if rgb.shape[:2] != xyz.shape[:2]:
            raise ValueError(f'rgb {rgb.shape[:2]} does not match xyz {xyz.shape[:2]}')
        pts['rgb'] = pack_rgb(rgb)
    return cloud_from_struct(pts, header)


def depth_cloud_msg(depth: np.ndarray, K: np.ndarray, header, rgb: np.ndarray | None = None,
                    decimation: int = 1, max_range_m: float | None = None) -> PointCloud2:
    """Back-project a metric depth map straight into a cloud message's structured buffer.

    Args:
        depth: (H, W) planar depth, metres.
        K: 3x3 intrinsics of the depth grid.
        header: header of the input image (stamp, optical frame).
        rgb: optional (H, W, 3) uint8 colour on the same grid (decimated like depth).
        decimation: keep every n-th row/column (the cloud stays organized).
        max_range_m: farther points become NaN.
    """
    h, w = decimated_shape(depth.shape[0], depth.shape[1], max(int(decimation), 1))
    pts = np.zeros((h, w), dtype=XYZ_DTYPE if rgb is None else XYZRGB_DTYPE)  # padding zeroed
    fill_points(depth, K, pts['x'], pts['y'], pts['z'], decimation, max_range_m)
    if rgb is not None:
        if rgb.shape[:2] != depth.shape:
            raise ValueError(f'rgb {rgb.shape[:2]} does not match depth {depth.shape}')
        pts['rgb'] = pack_rgb(rgb[::decimation, ::decimation])
    return cloud_from_struct(pts, header)
