"""Organized sensor_msgs/PointCloud2 in the depth_image_proc layout, built from one numpy array.

Layout (docs/ros.md §7): x, y, z FLOAT32 at offsets 0, 4, 8 and point_step 16; with colour, a
FLOAT32 `rgb` at offset 16 holding 0x00RRGGBB bits and point_step 32. height x width = the depth
grid after decimation, row_step = width * point_step, is_dense false, NaN xyz for invalid points.
The x, y, z (and rgb) planes from geometry.depth.depth_cloud.point_planes are interleaved by one
cv2.merge straight into the message's `array('B')` (the padding written as zeros) - no per-point
Python work, no sensor_msgs_py, no extra copy; a CloudBuffer lets a node reuse that memory.
"""
from __future__ import annotations

import array

import cv2
import numpy as np
from sensor_msgs.msg import PointCloud2, PointField

from tt_depth_ros.geometry.depth.depth_cloud import pack_rgb, point_planes
from tt_depth_ros.ros.msgs.depth import no_copy_kwargs


def _fields(with_rgb: bool) -> list[PointField]:
    names = ['x', 'y', 'z'] + (['rgb'] if with_rgb else [])
    offsets = [0, 4, 8, 16]
    return [PointField(name=n, offset=o, datatype=PointField.FLOAT32, count=1)
            for n, o in zip(names, offsets)]


class CloudBuffer:
    """Reusable PointCloud2 data memory for a node that publishes each cloud as soon as it is built.

    rclpy's `publish` copies `msg.data` into the middleware message before it returns, so the next
    cloud can be written into the same memory: no ~5 MB allocation, page faults or extra copy per
    frame. A message built with a buffer shares its memory and is valid only until the next build
    with that buffer - publish it, do not keep it. One buffer per publishing thread.
    """

    def __init__(self) -> None:
        """Empty; memory is allocated on first use and whenever the cloud layout changes."""
        self._key: tuple | None = None
        self._data = self._planes = self._zeros = None

    def take(self, h: int, w: int, channels: int) -> tuple[array.array, np.ndarray, np.ndarray]:
        """The data array, its (h, w, channels) float32 view and an (h, w) zero plane."""
        if self._key != (h, w, channels):
            self._data = _alloc(h * w * channels * 4)
            self._planes = np.frombuffer(self._data, np.float32).reshape(h, w, channels)
            self._zeros = np.zeros((h, w), np.float32)
            self._key = (h, w, channels)
        return self._data, self._planes, self._zeros


def _alloc(nbytes: int) -> array.array:
    return array.array('B', b'\0') * nbytes


def _interleaved_msg(planes: list[np.ndarray], header, buffer: CloudBuffer | None) -> PointCloud2:
    """Cloud whose points are [x, y, z, (rgb)] planes, interleaved (padding zero) in one pass."""
    h, w = planes[0].shape
    channels = 4 if len(planes) == 3 else 8
    if buffer is None:
        data = _alloc(h * w * channels * 4)
        view, zeros = np.frombuffer(data, np.float32).reshape(h, w, channels), None
    else:
        data, view, zeros = buffer.take(h, w, channels)
    if zeros is None:
        zeros = np.zeros((h, w), np.float32)
    pad = [zeros] if channels == 4 else [zeros, planes[3], zeros, zeros, zeros]
    if h * w:   # an empty cloud (no confident point) is a valid message
        if cv2.merge(planes[:3] + pad, dst=view) is not view:   # written in place, or else:
            raise RuntimeError('cv2.merge did not write into the cloud buffer')
    step = channels * 4
    msg = PointCloud2(header=header, height=h, width=w, fields=_fields(channels == 8),
                      is_bigendian=not np.little_endian, point_step=step, row_step=w * step,
                      is_dense=False, **no_copy_kwargs(PointCloud2))
    msg.data = data   # after construction (the constructor copies); not copied: no_copy_kwargs
    return msg


def pointcloud2_msg(xyz: np.ndarray, rgb: np.ndarray | None, header) -> PointCloud2:
    """Organized cloud from (h, w, 3) float32 xyz (NaN invalid) and optional (h, w, 3) uint8 rgb."""
    if xyz.ndim != 3 or xyz.shape[2] != 3:
        raise ValueError(f'xyz must be (h, w, 3), got {xyz.shape}')
    planes = [np.ascontiguousarray(xyz[..., i], dtype=np.float32) for i in range(3)]
    if rgb is not None:
        if rgb.shape[:2] != xyz.shape[:2]:
            raise ValueError(f'rgb {rgb.shape[:2]} does not match xyz {xyz.shape[:2]}')
        planes.append(pack_rgb(rgb))
    return _interleaved_msg(planes, header, None)


def depth_cloud_msg(depth: np.ndarray, K: np.ndarray, header, rgb: np.ndarray | None = None,
                    decimation: int = 1, max_range_m: float | None = None,
                    buffer: CloudBuffer | None = None) -> PointCloud2:
    """Back-project a metric depth map straight into a cloud message's buffer.

    Args:
        depth: (H, W) planar depth, metres.
        K: 3x3 intrinsics of the depth grid.
        header: header of the input image (stamp, optical frame).
        rgb: optional (H, W, 3) uint8 colour on the same grid (decimated like depth).
        decimation: keep every n-th row/column (the cloud stays organized).
        max_range_m: farther points become NaN.
        buffer: reuse this CloudBuffer's memory (publish the message before the next build);
            None allocates a fresh buffer the message owns.
    """
    if rgb is not None and rgb.shape[:2] != depth.shape:
        raise ValueError(f'rgb {rgb.shape[:2]} does not match depth {depth.shape}')
    planes = list(point_planes(depth, K, decimation, max_range_m))
    if rgb is not None:
        planes.append(pack_rgb(rgb[::decimation, ::decimation]))
    return _interleaved_msg(planes, header, buffer)


_XYZ_TYPES = {PointField.FLOAT32: 'f4', PointField.FLOAT64: 'f8'}


def cloud_xyz(msg: PointCloud2) -> np.ndarray:
    """(N, 3) float32 x, y, z of any PointCloud2 (organized or not), non-finite points dropped.

    Reads the x, y, z fields at their offsets through one view of the data (no per-point
    Python), any point_step and row padding, either byte order; a LiDAR driver's intensity,
    ring or time fields are skipped.

    Raises:
        ValueError: no FLOAT32 / FLOAT64 x, y and z fields, or data shorter than the layout.
    """
    fields = {f.name: f for f in msg.fields}
    missing = [n for n in 'xyz' if n not in fields or fields[n].datatype not in _XYZ_TYPES]
    if missing:
        raise ValueError(f'PointCloud2 needs FLOAT32/FLOAT64 x, y, z fields; {missing} missing or '
                         f'of another type (fields: {[f.name for f in msg.fields]})')
    order = '>' if msg.is_bigendian else '<'
    rows, width, step = msg.height, msg.width, msg.point_step
    data = np.frombuffer(msg.data, np.uint8) if len(msg.data) else np.zeros(0, np.uint8)
    if data.size < rows * msg.row_step or msg.row_step < width * step:
        raise ValueError(f'PointCloud2 data is {data.size} bytes; {rows} rows of row_step '
                         f'{msg.row_step} (width {width} x point_step {step}) need more')
    points = np.ascontiguousarray(
        data[:rows * msg.row_step].reshape(rows, msg.row_step)[:, :width * step]).reshape(-1)
    offsets = [fields[n].offset for n in 'xyz']
    f32 = all(fields[n].datatype == PointField.FLOAT32 for n in 'xyz')
    if f32 and step % 4 == 0 and all(o % 4 == 0 for o in offsets):
        # the usual layout: the points as rows of float32 words, x, y, z one column each
        words = points.view(order + 'f4').reshape(-1, step // 4)
        columns = [words[:, o // 4] for o in offsets]
    else:
        dtype = np.dtype({'names': list('xyz'),
                          'formats': [order + _XYZ_TYPES[fields[n].datatype] for n in 'xyz'],
                          'offsets': offsets, 'itemsize': step})
        pts = points.view(dtype)
        columns = [pts[n] for n in 'xyz']
    # column by column into C order: a fancy gather gives Fortran order (a copy in every
    # projection) and a row-wise `all` is an order of magnitude slower than three column ANDs
    xyz = np.empty((columns[0].size, 3), np.float32)
    for i, column in enumerate(columns):
        xyz[:, i] = column
    finite = np.isfinite(xyz)
    finite = finite[:, 0] & finite[:, 1] & finite[:, 2]
    return xyz if finite.all() else xyz[finite]
