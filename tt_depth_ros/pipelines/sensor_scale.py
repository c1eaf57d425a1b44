"""The measurements of the 'cloud' and 'temporal' scale sources: sparse metric depth, then a fit.

`cloud_scale`: a LiDAR scan (points in its own frame, the transform to this frame's optical
frame from TF) is projected onto the published grid with a z-buffer and the network's depth on
those pixels is fitted to it (geometry/depth/sparse_depth.py, sparse_fit.py).

`temporal_scale`: the previous published frame (kept as points, every TEMPORAL_STEP-th row and
column of its confident pixels) is moved into this frame with the camera's motion and projected
the same way; the scale that makes this frame's depth agree with it is the ratio over the
pixels both see (overlapping, confident, not sky). ROS-free: the node and tt-depth-batch hand in
the arrays they read from messages and TF.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from tt_depth_ros.geometry.depth.sparse_depth import (
    SparseDepth,
    grid_points,
    project_points,
    transform_points,
)
from tt_depth_ros.geometry.depth.sparse_fit import affine_inverse_fit, gated_ratio_scale
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.geometry.pose.se3 import invert_T

FITS = ('scale', 'affine_inverse')
MAX_FIT_PIXELS = 4096
"""A fit takes at most this many of the pixels a scan hit (every k-th): a median of thousands
is already far more precise than the scale moves, and the fit's cost stays flat for a dense
LiDAR (the projection still takes every point, so occlusion is judged on the whole scan)."""
TEMPORAL_STEP = 4
"""The previous frame is moved as every 4th row and column: thousands of pixels for a median
at 1/16 of the projection work."""


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
    if index.size > MAX_FIT_PIXELS:                 # every k-th: the scan's spread kept
        k = -(-index.size // MAX_FIT_PIXELS)
        index, ref = index[::k], ref[::k]
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
                min_support: int = 20) -> tuple[ScaleResult, SparseDepth]:
    """The fit of `depth` to a LiDAR scan, and the scan on the grid.

    Args:
        points: (N, 3) the scan in its own frame, metres.
        T_optical_cloud: 4x4 from the scan's frame to the frame's optical frame.
        depth: (H, W) the network's depth on the published grid.
        mask: (H, W) pixels allowed to vote (confident, valid); None = every valid one.
        K: 3x3 intrinsics of that grid.
        fit: 'scale' or 'affine_inverse'.
        min_support: fewest pixels for a fit.
    """
    sparse = project_points(transform_points(points, T_optical_cloud), K, depth.shape)
    return fit_sparse(sparse, depth, mask, fit, min_support, 'cloud'), sparse


def previous_frame(depth: np.ndarray, mask: Optional[np.ndarray], K: np.ndarray,
                   pose: np.ndarray, stamp_ns: int) -> PreviousFrame:
    """Keep a published metric frame for the next frame's temporal ratio (NaN off `mask`)."""
    kept = depth if mask is None else np.where(mask, depth, np.float32(np.nan))
    return PreviousFrame(grid_points(kept, K, TEMPORAL_STEP), np.asarray(pose, np.float64),
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
    sparse = project_points(transform_points(previous.points, T_cur_prev), K, depth.shape)
    return fit_sparse(sparse, depth, mask, 'scale', min_support, 'temporal')
