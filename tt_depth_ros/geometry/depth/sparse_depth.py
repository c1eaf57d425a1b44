"""3-D points onto a depth grid: rigid transform, pinhole projection and a z-buffer.

A LiDAR scan (scale_source 'cloud') and the previous frame's depth moved with the camera
(scale_source 'temporal') become sparse depth on the published grid here. Pixel centres are at
integer coordinates (the convention of geometry/depth/depth_cloud.py and image_geometry), so a
point lands on pixel (round(u), round(v)). Points at or behind the camera (z <= `min_z_m`),
non-finite ones and those outside the image are dropped; where several points land on one pixel
the nearest wins (a z-buffer: a wall behind a box never shows through it). The result is sparse -
the flat indices of the pixels hit, each once, and their depth - so the fits that follow touch
only those pixels (the per-frame cost: benchmarks/bench_scale_stability.py).
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import cv2
import numpy as np

MIN_Z_M = 1e-3
"""Points nearer than 1 mm to the camera plane are behind it for the projection."""


class SparseDepth(NamedTuple):
    """Depth on some pixels of an (h, w) grid, each pixel once.

    Attributes:
        index: (M,) int64 flat pixel indices (v * w + u), in no particular order.
        depth: (M,) float32 planar depth of the nearest point on each of those pixels.
        shape: (h, w) of the grid.
    """

    index: np.ndarray
    depth: np.ndarray
    shape: tuple[int, int]

    def dense(self) -> np.ndarray:
        """(h, w) float32 image: the depth where a point landed, NaN elsewhere."""
        out = np.full(self.shape[0] * self.shape[1], np.nan, np.float32)
        out[self.index] = self.depth
        return out.reshape(self.shape)


def transform_points(points: np.ndarray, T: np.ndarray) -> np.ndarray:
    """(N, 3) float32 points of frame b in frame a, for T = T_a_b (4x4).

    cv2.transform: one vectorised pass (numpy's matmul is slow with an inner size of 3).
    """
    points = np.ascontiguousarray(points, dtype=np.float32)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f'points must be (N, 3), got {points.shape}')
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4):
        raise ValueError(f'T must be 4x4, got {T.shape}')
    if not len(points):
        return points.copy()
    return cv2.transform(points.reshape(-1, 1, 3), T[:3]).reshape(-1, 3)


def project_points(points_cam: np.ndarray, K: np.ndarray, shape: tuple[int, int],
                   min_z_m: float = MIN_Z_M) -> SparseDepth:
    """Nearest planar depth per pixel of the points in the camera's optical frame.

    The z-buffer is one `np.minimum.at` into a grid kept per thread; the winners are read back
    at the points' own pixels (never a scan of the whole grid), one per pixel.

    Args:
        points_cam: (N, 3) points in the optical frame (z forward), metres.
        K: 3x3 intrinsics of the grid (skew honoured).
        shape: (h, w) of the grid.
        min_z_m: points with z at or below this are behind the camera and dropped.
    """
    pts = np.asarray(points_cam, dtype=np.float32)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f'points must be (N, 3), got {pts.shape}')
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3) or not (K[0, 0] > 0 and K[1, 1] > 0):
        raise ValueError(f'K must be 3x3 with positive fx, fy; got {K.tolist()}')
    h, w = int(shape[0]), int(shape[1])
    x, y, z = np.ascontiguousarray(pts.T)   # contiguous planes: strided columns are slow
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        inv_z = np.float32(1.0) / z
        u = (np.float32(K[0, 0]) * x + np.float32(K[0, 1]) * y) * inv_z
        u += np.float32(K[0, 2] + 0.5)
        v = np.float32(K[1, 1]) * y * inv_z
        v += np.float32(K[1, 2] + 0.5)
        # floor(x + 0.5) rounds to the nearest pixel centre; NaN fails every comparison
        ok = (z > np.float32(min_z_m)) & (u >= 0) & (u < w) & (v >= 0) & (v < h)
        flat = v.astype(np.int64)
        flat *= w
        flat += u.astype(np.int64)          # garbage where not ok (NaN, outside): dropped next
    kept = np.flatnonzero(ok)               # index + take: 3x a boolean mask on two arrays
    flat, z = flat.take(kept), z.take(kept)
    # z-buffer on a key unique per point: a positive float32's bits order like the float, the
    # point's position breaks ties, so each pixel has exactly one winner
    key = z.view(np.int32).astype(np.int64) << 32
    key |= np.arange(z.size, dtype=np.int64)
    zbuf = _zbuffer(h * w)
    try:
        np.minimum.at(zbuf, flat, key)
        win = zbuf[flat] == key
    finally:
        zbuf[flat] = _EMPTY                    # only the touched pixels: the grid is reused
    win = np.flatnonzero(win)
    return SparseDepth(flat.take(win), z.take(win), (h, w))


_EMPTY = np.iinfo(np.int64).max
_scratch = threading.local()


def _zbuffer(size: int) -> np.ndarray:
    """This thread's empty z-buffer of `size` pixels, kept between calls.

    A fresh grid per frame would be a megabytes-large allocation and fill (page faults included)
    for a few thousand points; each thread (a node's worker, the batch tool) keeps its own.
    """
    bufs = _scratch.__dict__.setdefault('zbufs', {})     # one per grid size (camera)
    if size not in bufs:
        bufs[size] = np.full(size, _EMPTY, np.int64)
    return bufs[size]


def grid_points(depth: np.ndarray, K: np.ndarray, step: int = 1) -> np.ndarray:
    """(N, 3) float32 optical-frame points of a planar depth map's finite positive pixels.

    Every `step`-th row and column (the previous frame, moved by the temporal source).
    """
    depth = np.asarray(depth)
    if depth.ndim != 2:
        raise ValueError(f'depth must be (H, W), got {depth.shape}')
    K = np.asarray(K, dtype=np.float64)
    v, u = np.mgrid[0:depth.shape[0]:step, 0:depth.shape[1]:step]
    z = depth[::step, ::step].astype(np.float32)
    ok = (z > 0) & (z < np.inf)
    z, u, v = z[ok], u[ok].astype(np.float32), v[ok].astype(np.float32)
    y = (v - np.float32(K[1, 2])) / np.float32(K[1, 1]) * z
    x = (u - np.float32(K[0, 2]) - np.float32(K[0, 1]) * y / z) / np.float32(K[0, 0]) * z
    return np.stack([x, y, z], axis=1)
