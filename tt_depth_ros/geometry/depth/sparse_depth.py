"""3-D points onto a depth grid: rigid transform, pinhole projection and a z-buffer.

A LiDAR scan (scale_source 'cloud') and the previous frame's depth moved with the camera
(scale_source 'temporal') become sparse depth on the published grid here, in one pass: the
rigid transform and the pinhole projection are one 3x4 matrix. Pixel centres are at integer
coordinates (the convention of geometry/depth/depth_cloud.py and image_geometry), so a point
lands on pixel (round(u), round(v)). Points at or behind the camera (z <= `min_z_m`), non-finite
ones and those outside the image are dropped; where several points land on one pixel the nearest
wins (a z-buffer: a wall behind a box never shows through it). The result is sparse - the flat
indices of the pixels hit, each once, and their depth - so the fits that follow touch only those
pixels.

A fit needs a few thousand pixels, not every pixel a dense LiDAR hits, and the z-buffer's random
access into a megabytes-large grid is most of the per-frame cost
(benchmarks/bench_scale_stability.py). With `max_pixels`, only the pixels on a diagonal lattice
((u + v) % k == 0, k the smallest power of two that leaves at most `max_pixels` of the points in
view on it) are z-buffered: each of them still gets the nearest of every point that lands on it,
so occlusion stays exact where depth is read.
"""
from __future__ import annotations

import functools
import threading
from typing import NamedTuple, Optional

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
        in_view: How many points landed in the image in front of the camera (with a lattice,
            more than the pixels kept).
    """

    index: np.ndarray
    depth: np.ndarray
    shape: tuple[int, int]
    in_view: int = 0

    def dense(self) -> np.ndarray:
        """(h, w) float32 image: the depth where a point landed, NaN elsewhere."""
        out = np.full(self.shape[0] * self.shape[1], np.nan, np.float32)
        out[self.index] = self.depth
        return out.reshape(self.shape)


def project_points(points: np.ndarray, K: np.ndarray, shape: tuple[int, int],
                   T: Optional[np.ndarray] = None, min_z_m: float = MIN_Z_M,
                   max_pixels: int = 0) -> SparseDepth:
    """Nearest planar depth per pixel of `points`, moved by `T` into the optical frame first.

    The move and the projection are one 3x4 matrix (K, the pixel-centre offset and T), applied
    in one vectorised pass (cv2.transform: numpy's matmul is slow with an inner size of 3). The
    z-buffer is one `np.minimum.at` into a grid kept per thread; the winners are read back at
    the points' own pixels (never a scan of the whole grid), one per pixel.

    Args:
        points: (N, 3) points, metres: in the optical frame (z forward), or in frame b for
            T = T_optical_b (a LiDAR scan in its own frame).
        K: 3x3 intrinsics of the grid (skew honoured).
        shape: (h, w) of the grid.
        T: 4x4 transform into the optical frame; None = the points are already there.
        min_z_m: points with z at or below this are behind the camera and dropped.
        max_pixels: more points in view than this: z-buffer only the pixels of a diagonal
            lattice that holds at most this many of them (module docstring); 0 = every pixel.
    """
    pts = np.ascontiguousarray(points, dtype=np.float32)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f'points must be (N, 3), got {pts.shape}')
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3) or not (K[0, 0] > 0 and K[1, 1] > 0):
        raise ValueError(f'K must be 3x3 with positive fx, fy; got {K.tolist()}')
    T = np.eye(4) if T is None else np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4):
        raise ValueError(f'T must be 4x4, got {T.shape}')
    h, w = int(shape[0]), int(shape[1])
    if not len(pts):
        return SparseDepth(np.zeros(0, np.int64), np.zeros(0, np.float32), (h, w), 0)
    # + 0.5 px: floor(u + 0.5) rounds to the nearest pixel centre
    Kc = np.array([[K[0, 0], K[0, 1], K[0, 2] + 0.5], [0.0, K[1, 1], K[1, 2] + 0.5],
                   [0.0, 0.0, 1.0]])
    u, v, z = (c.reshape(-1) for c in cv2.split(cv2.transform(pts.reshape(-1, 1, 3),
                                                                Kc @ T[:3])))
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        inv_z = np.float32(1.0) / z
        u *= inv_z
        v *= inv_z
        col = u.astype(np.int32)            # in [0, w) truncation is the floor; elsewhere
        row = v.astype(np.int32)            # garbage, masked next
        # NaN fails every comparison
        ok = (z > np.float32(min_z_m)) & (u >= 0) & (u < w) & (v >= 0) & (v < h)
    in_view = int(np.count_nonzero(ok))
    if max_pixels and in_view > max_pixels:
        k = 1 << (-(-in_view // max_pixels) - 1).bit_length()     # a power of two: a mask
        on = col + row
        on &= k - 1
        ok &= on == 0
    kept = np.flatnonzero(ok)               # index + take: faster than a boolean mask per array
    flat = row.take(kept).astype(np.int64)
    flat *= w
    flat += col.take(kept)
    z = z.take(kept)
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
    return SparseDepth(flat.take(win), z.take(win), (h, w), in_view)


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

    Every `step`-th row and column (the previous frame, moved by the temporal source). A point
    is its pixel's ray (x/z, y/z, 1), kept per grid and K, times its depth.
    """
    depth = np.asarray(depth)
    if depth.ndim != 2:
        raise ValueError(f'depth must be (H, W), got {depth.shape}')
    K = np.asarray(K, dtype=np.float64)
    rays = _rays(depth.shape, int(step), tuple(K.reshape(-1).tolist()))
    z = depth[::step, ::step].astype(np.float32).reshape(-1)
    keep = np.flatnonzero((z > 0) & (z < np.inf))
    points = rays.take(keep, axis=0)
    points *= z.take(keep)[:, None]
    return points


@functools.lru_cache(maxsize=16)
def _rays(shape: tuple[int, int], step: int, K: tuple[float, ...]) -> np.ndarray:
    """(n, 3) float32 rays (x/z, y/z, 1) of every `step`-th pixel of a grid, row-major."""
    fx, s, cx, _, fy, cy = K[:6]
    v, u = np.mgrid[0:shape[0]:step, 0:shape[1]:step].astype(np.float64)
    y = (v - cy) / fy
    x = (u - cx - s * y) / fx
    rays = np.stack([x, y, np.ones_like(x)], axis=-1).reshape(-1, 3).astype(np.float32)
    rays.setflags(write=False)
    return rays
