"""The measurements of the 'cloud' and 'temporal' scale sources: sparse metric depth, then a fit.

`cloud_scale`: a LiDAR scan (points in its own frame, the transform to this frame's optical
frame from TF) is projected onto the published grid with a z-buffer and the network's depth on
those pixels is fitted to it (geometry/depth/sparse_depth.py, sparse_fit.py).

`temporal_scale`: the previous published frame (kept as points: its confident pixels on every
k-th row and column, about TEMPORAL_POINTS of them) is moved into this frame with the camera's
motion and projected the same way; the scale that makes this frame's depth agree with it is the
ratio over the pixels both see (overlapping, confident, not sky). ROS-free: the node and
tt-depth-batch hand in the arrays they read from messages and TF.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from tt_depth_ros.geometry.depth.sparse_depth import (
    SparseDepth,
    grid_points,
    project_points,
)
from tt_depth_ros.geometry.depth.sparse_fit import affine_inverse_fit, gated_ratio_scale
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.geometry.pose.se3 import invert_T

FITS = ('scale', 'affine_inverse')
MAX_FIT_PIXELS = 2048
"""A fit reads about this many pixels: those of a lattice over the image (sparse_depth.py
`max_pixels`). The median of a few thousand ratios is far more precise than the scale moves,
and the per-frame cost stays flat for a dense LiDAR; every point landing on a lattice pixel
still competes in its z-buffer, so occlusion is exact there."""
TEMPORAL_POINTS = 4 * MAX_FIT_PIXELS
"""The previous frame is moved as every k-th row and column, k chosen for about this many
points: enough that its lattice of pixels is full, at a fraction of the projection work."""


class PreviousFrame(NamedTuple):
    """What the temporal source keeps of the last published frame of a camera."""

    points: np.ndarray          # (N, 3) float32 confident points, its optical frame, metres
    pose: np.ndarray            # 4x4 T_fixed_optical at its stamp (identity: a static camera)
    stamp_ns: int


def fit_sparse(reference: SparseDepth, depth: np.ndarray, mask: Optional[np.ndarray], fit: str,
               min_support: int, source: str) -> ScaleResult:
    """The `fit` of the network depth to `reference` over its pixels that `mask` allows.

    `mask` None: every pixel with a valid depth (the fits drop the others themselves).
    """
    index, ref = reference.index, reference.depth
    net = depth.reshape(-1)[index]
    if mask is not None:
        allowed = mask.reshape(-1)[index]
        ref, net = ref[allowed], net[allowed]
    if fit == 'affine_inverse':
        return affine_inverse_fit(ref, net, min_support=min_support, source=source)
    if fit == 'scale':
        return gated_ratio_scale(ref, net, min_support=min_support, source=source)
    raise ValueError(f'scale_fit={fit!r}; allowed: {FITS}')


def cloud_scale(points: np.ndarray, T_optical_cloud: np.ndarray, depth: np.ndarray,
                mask: Optional[np.ndarray], K: np.ndarray, fit: str = 'scale',
                min_support: int = 20,
                max_pixels: int = MAX_FIT_PIXELS) -> tuple[ScaleResult, SparseDepth]:
    """The fit of `depth` to a LiDAR scan, and the scan on the grid.

    Args:
        points: (N, 3) the scan in its own frame, metres.
        T_optical_cloud: 4x4 from the scan's frame to the frame's optical frame.
        depth: (H, W) the network's depth on the published grid.
        mask: (H, W) pixels allowed to vote (confident, valid); None = every valid one.
        K: 3x3 intrinsics of that grid.
        fit: 'scale' or 'affine_inverse'.
        min_support: fewest pixels for a fit.
        max_pixels: about how many pixels the fit reads (0: every pixel the scan hits).
    """
    sparse = project_points(points, K, depth.shape, T_optical_cloud, max_pixels=max_pixels)
    return fit_sparse(sparse, depth, mask, fit, min_support, 'cloud'), sparse


def previous_frame(depth: np.ndarray, mask: Optional[np.ndarray], K: np.ndarray,
                   pose: np.ndarray, stamp_ns: int) -> PreviousFrame:
    """Keep a published metric frame for the next frame's temporal ratio (NaN off `mask`)."""
    kept = depth if mask is None else np.where(mask, depth, np.float32(np.nan))
    step = max(1, int(np.sqrt(depth.size / TEMPORAL_POINTS)))
    return PreviousFrame(grid_points(kept, K, step), np.asarray(pose, np.float64),
                         int(stamp_ns))


def temporal_scale(previous: Optional[PreviousFrame], depth: np.ndarray,
                   mask: Optional[np.ndarray],
                   K: np.ndarray, pose: Optional[np.ndarray],
                   min_support: int = 20) -> ScaleResult:
    """The scale that makes `depth` agree with the previous frame moved into this one.

    Args:
        previous: the camera's last published frame (None: this is its first).
        depth: (H, W) this frame's network depth, metres.
        mask: (H, W) pixels allowed to vote; None = every valid one.
        K: 3x3 intrinsics of the grid.
        pose: 4x4 T_fixed_optical at this frame's stamp (identity: a static camera); None
            when TF had none (the reason is the caller's).
        min_support: fewest overlapping pixels for a ratio.
    """
    if previous is None:
        return ScaleResult('temporal', None, 'no previous frame')
    if pose is None:
        return ScaleResult('temporal', None, 'no camera pose for this frame')
    T_cur_prev = invert_T(pose) @ previous.pose
    sparse = project_points(previous.points, K, depth.shape, T_cur_prev,
                            max_pixels=MAX_FIT_PIXELS)
    return fit_sparse(sparse, depth, mask, 'scale', min_support, 'temporal')
