"""Accuracy of metric depth and relative poses against ground truth (benchmark reports, tests).

Depth metrics follow the usual monocular-depth definitions (Eigen et al. 2014): AbsRel, RMSE and
δ1 (share of pixels with max(pred/gt, gt/pred) < 1.25). They are computed on **metric** depth
as published, with no median or least-squares scaling: a model that gets the scale wrong must
score badly, which is the point of a metric-depth node. Pose errors are the rotation angle of
R_est^T R_gt and the angle between translation directions (the only translation quantity a
two-view method without known scale can get right).
"""
from __future__ import annotations

import math

import numpy as np

DELTA1_THRESHOLD = 1.25
DEPTH_KEYS = ('abs_rel', 'rmse_m', 'delta1', 'valid_pixels', 'pred_coverage', 'sky_recall')


def resize_nearest(depth: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize (pixel centres aligned): never blends depths, keeps +Inf/NaN.

    Args:
        depth: (H, W) array.
        out_hw: (height, width) of the result.
    """
    h, w = depth.shape[:2]
    oh, ow = int(out_hw[0]), int(out_hw[1])
    if oh <= 0 or ow <= 0:
        raise ValueError(f'out_hw must be positive, got {out_hw}')
    rows = np.minimum(((np.arange(oh) + 0.5) * h / oh).astype(np.int64), h - 1)
    cols = np.minimum(((np.arange(ow) + 0.5) * w / ow).astype(np.int64), w - 1)
    return depth[rows[:, None], cols[None, :]]


def depth_metrics(pred: np.ndarray, gt: np.ndarray, *, min_depth_m: float = 1e-3,
                  max_depth_m: float | None = None) -> dict[str, float]:
    """Metric-depth errors of one frame (no scale alignment).

    Pixels count when the ground truth is finite and in [min_depth_m, max_depth_m]. Of those, a
    prediction that is not finite and positive is "missing": it lowers `pred_coverage` and is left
    out of AbsRel/RMSE/δ1. `sky_recall` is the share of ground-truth +Inf pixels predicted +Inf
    (NaN when the frame has no sky).

    Args:
        pred: (H, W) predicted depth, metres.
        gt: (H, W) ground-truth depth, metres (+Inf = sky, NaN = unknown).
        min_depth_m: smallest ground-truth depth evaluated.
        max_depth_m: largest ground-truth depth evaluated (None: no limit).

    Returns:
        dict with the keys of DEPTH_KEYS; metrics are NaN when no pixel can be evaluated.
    """
    pred = np.asarray(pred, dtype=np.float64)
    gt = np.asarray(gt, dtype=np.float64)
    if pred.shape != gt.shape:
        raise ValueError(f'pred shape {pred.shape} differs from gt shape {gt.shape}; '
                         'resize one of them first (resize_nearest keeps depth unblended)')
    valid = np.isfinite(gt) & (gt >= min_depth_m)
    if max_depth_m is not None:
        valid &= gt <= max_depth_m
    pred_ok = np.isfinite(pred) & (pred > 0)
    both = valid & pred_ok
    n_valid = int(valid.sum())
    sky = np.isposinf(gt)
    out = {
        'valid_pixels': float(both.sum()),
        'pred_coverage': float(both.sum() / n_valid) if n_valid else math.nan,
        'sky_recall': float((np.isposinf(pred) & sky).sum() / sky.sum()) if sky.any() else math.nan,
    }
    if not both.any():
        out.update(abs_rel=math.nan, rmse_m=math.nan, delta1=math.nan)
        return out
    p, g = pred[both], gt[both]
    ratio = np.maximum(p / g, g / p)
    out.update(abs_rel=float(np.mean(np.abs(p - g) / g)),
               rmse_m=float(np.sqrt(np.mean((p - g) ** 2))),
               delta1=float(np.mean(ratio < DELTA1_THRESHOLD)))
    return out


def mean_metrics(per_frame: list[dict[str, float]]) -> dict[str, float]:
    """Average per-frame metrics (NaN frames skipped per key); adds `frames`."""
    if not per_frame:
        return {'frames': 0}
    keys = sorted({k for m in per_frame for k in m})
    out: dict[str, float] = {'frames': len(per_frame)}
    for k in keys:
        vals = np.array([m[k] for m in per_frame if k in m], dtype=np.float64)
        vals = vals[np.isfinite(vals)]
        out[k] = float(vals.mean()) if vals.size else math.nan
    return out


def rotation_error_deg(R_est: np.ndarray, R_gt: np.ndarray) -> float:
    """Angle of the rotation R_est^T R_gt, degrees, in [0, 180]."""
    R = np.asarray(R_est, dtype=np.float64).T @ np.asarray(R_gt, dtype=np.float64)
    # atan2(sin, cos) stays accurate near 0 and 180 degrees, where arccos loses precision.
    sin = 0.5 * np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    cos = (np.trace(R) - 1.0) / 2.0
    return float(np.degrees(np.arctan2(sin, cos)))


def translation_direction_error_deg(t_est: np.ndarray, t_gt: np.ndarray) -> float:
    """Angle between two translation vectors, degrees (scale-free).

    Raises:
        ValueError: either vector has (near) zero length, so it has no direction.
    """
    a = np.asarray(t_est, dtype=np.float64).reshape(3)
    b = np.asarray(t_gt, dtype=np.float64).reshape(3)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na < 1e-12 or nb < 1e-12:
        raise ValueError(f'translation has no direction (|t_est|={na:.3g}, |t_gt|={nb:.3g})')
    return float(np.degrees(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b)))


def relative_pose(T_world_a: np.ndarray, T_world_b: np.ndarray) -> np.ndarray:
    """T_a_b: pose of frame b in frame a, from two world poses (4x4)."""
    Ta = np.asarray(T_world_a, dtype=np.float64)
    Tb = np.asarray(T_world_b, dtype=np.float64)
    inv = np.eye(4)
    inv[:3, :3] = Ta[:3, :3].T
    inv[:3, 3] = -Ta[:3, :3].T @ Ta[:3, 3]
    return inv @ Tb


def pose_errors(T_est: np.ndarray, T_gt: np.ndarray) -> dict[str, float]:
    """Rotation error, translation-direction error (degrees) and translation-norm ratio est/gt."""
    T_est = np.asarray(T_est, dtype=np.float64)
    T_gt = np.asarray(T_gt, dtype=np.float64)
    if T_est.shape != (4, 4) or T_gt.shape != (4, 4):
        raise ValueError(f'poses must be 4x4, got {T_est.shape} and {T_gt.shape}')
    t_e, t_g = T_est[:3, 3], T_gt[:3, 3]
    return {
        'rot_err_deg': rotation_error_deg(T_est[:3, :3], T_gt[:3, :3]),
        'trans_dir_err_deg': translation_direction_error_deg(t_e, t_g),
        'trans_norm_ratio': float(np.linalg.norm(t_e) / np.linalg.norm(t_g)),
    }
