"""Relative pose of camera 2 from DUSt3R's view-2 pointmap by PnP-RANSAC (docs/dust3r.md §7.2).

Mirrors the PnP step of dust3r `cloud_opt/pair_viewer.py`, written from the spec: view 2's
pointmap is expressed in camera 1's frame, so each confident pixel (x, y) of image 2 with its
3-D point X1 is a 2D-3D correspondence for camera 2. cv2.solvePnPRansac (SQPnP) gives [R|t]
mapping camera-1 coordinates to camera-2; the result reported is its inverse, camera 2 -> camera 1.
Translation is in pointmap units (DUSt3R is scale-free) until a scale is applied by the caller.
A failure is reported as such (success=False with a reason), never as an identity pose.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import cv2
import numpy as np

from tt_depth_ros.geometry.pose.se3 import angle_deg, make_T


@dataclass(frozen=True)
class PoseResult:
    """Camera-2 -> camera-1 pose (x1 = R @ x2 + t) or an explicit failure.

    Attributes:
        success: True only when R and t are a real estimate.
        reason: empty on success, else why it failed.
        R: (3, 3) rotation, None on failure.
        t: (3,) translation in pointmap units (or scaled by the caller), None on failure.
        inliers: RANSAC inlier count.
        inlier_ratio: inliers / confident points used.
        reproj_error_px: mean reprojection error of the inliers (network pixels).
        num_points: confident correspondences given to RANSAC.
        focal_source: 'intrinsics' (K from the camera) or 'estimated' (Weiszfeld).
    """

    success: bool
    reason: str = ''
    R: np.ndarray | None = None
    t: np.ndarray | None = None
    inliers: int = 0
    inlier_ratio: float = 0.0
    reproj_error_px: float = float('nan')
    num_points: int = 0
    focal_source: str = 'intrinsics'

    @property
    def T(self) -> np.ndarray:
        """4x4 camera-2 -> camera-1 transform; raises if the pose failed."""
        if not self.success:
            raise ValueError(f'no pose: PnP failed ({self.reason})')
        return make_T(self.R, self.t)

    def to_dict(self) -> dict:
        """JSON-friendly summary (lists instead of arrays, rotation angle in degrees)."""
        d = asdict(self)
        d['R'] = None if self.R is None else self.R.tolist()
        d['t'] = None if self.t is None else self.t.tolist()
        d['rotation_deg'] = angle_deg(self.R) if self.success else None
        return d


def _collinear(pts: np.ndarray, rel: float = 1e-5) -> bool:
    """True when points span (nearly) a line or a single point: no pose is defined."""
    sv = np.linalg.svd(pts - pts.mean(axis=0), compute_uv=False)
    return bool(sv[0] <= 0 or sv[1] < rel * sv[0])


def _failure(reason: str, num_points: int = 0, focal_source: str = 'intrinsics', **kw):
    return PoseResult(success=False, reason=reason, num_points=num_points,
                      focal_source=focal_source, **kw)


def solve_relative_pose(pts3d_2: np.ndarray, conf_2: np.ndarray, K2_net: np.ndarray,
                        conf_threshold: float = 3.0, reproj_px: float = 5.0,
                        iterations: int = 100, confidence: float = 0.99,
                        valid_mask: np.ndarray | None = None, min_points: int = 16,
                        min_inliers: int = 12, min_inlier_ratio: float = 0.1, seed: int = 0,
                        focal_source: str = 'intrinsics') -> PoseResult:
    """Pose of camera 2 in camera 1 from view 2's pointmap (in camera-1 coordinates).

    Args:
        pts3d_2: (H, W, 3) DUSt3R head-2 points (`pts3d_2`), camera-1 frame.
        conf_2: (H, W) head-2 confidence (>= 1).
        K2_net: 3x3 intrinsics of image 2 on the network grid
        (geometry.preprocess.dust3r_preprocess).
        conf_threshold: use pixels with conf > this (3 upstream, i.e. logit > ln 2).
        reproj_px: RANSAC inlier threshold in network pixels (5 upstream).
        iterations: RANSAC iterations (100 upstream).
        confidence: RANSAC confidence (0.99, OpenCV's default as upstream).
        valid_mask: optional (H, W) bool; False pixels (padding) are never used.
        min_points: fewer confident finite points than this is a failure.
        min_inliers: fewer RANSAC inliers than this is a failure.
        min_inlier_ratio: a smaller inlier fraction is a failure (not in upstream, which never
            fails; a pose supported by < 10 % of the confident points is not trustworthy).
        seed: OpenCV RNG seed set before RANSAC (results are deterministic).
        focal_source: recorded in the result ('intrinsics' or 'estimated').

    Returns:
        A PoseResult; check `success`.

    Raises:
        ValueError: malformed inputs (shapes, non-finite or non-positive intrinsics).
    """
    pts3d_2 = np.asarray(pts3d_2)
    conf_2 = np.asarray(conf_2)
    if pts3d_2.ndim != 3 or pts3d_2.shape[2] != 3:
        raise ValueError(f'solve_relative_pose: pts3d_2 must be (H, W, 3), got {pts3d_2.shape}')
    h, w = pts3d_2.shape[:2]
    if conf_2.shape != (h, w):
        raise ValueError(f'solve_relative_pose: conf_2 shape {conf_2.shape} != {(h, w)}')
    K = np.asarray(K2_net, dtype=np.float64)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
        raise ValueError(f'solve_relative_pose: K2_net must be a finite 3x3 with fx, fy > 0, '
                         f'got {K.tolist() if K.size == 9 else K.shape}')
    mask = (conf_2 > conf_threshold) & np.all(np.isfinite(pts3d_2), axis=-1)
    if valid_mask is not None:
        valid_mask = np.asarray(valid_mask, dtype=bool)
        if valid_mask.shape != (h, w):
            raise ValueError(f'solve_relative_pose: valid_mask shape {valid_mask.shape} != '
                             f'{(h, w)}')
        mask &= valid_mask
    n = int(mask.sum())
    if n < min_points:
        return _failure(f'too few confident finite points: {n} < {min_points} '
                        f'(conf > {conf_threshold})', n, focal_source)
    ys, xs = np.nonzero(mask)                        # row-major, as upstream
    obj = pts3d_2[mask].astype(np.float64)
    img = np.stack((xs, ys), axis=-1).astype(np.float64)   # OpenCV pixel centres
    if _collinear(obj):
        return _failure('degenerate geometry: the confident points are (nearly) collinear',
                        n, focal_source)
    cv2.setRNGSeed(int(seed))
    try:
        ok, rvec, tvec, inl = cv2.solvePnPRansac(
            obj, img, K, None, iterationsCount=int(iterations), reprojectionError=float(reproj_px),
            confidence=float(confidence), flags=cv2.SOLVEPNP_SQPNP)
    except cv2.error as e:
        return _failure(f'OpenCV solvePnPRansac error: {e.msg if hasattr(e, "msg") else e}',
                        n, focal_source)
    n_in = 0 if inl is None else int(len(inl))
    if not ok or inl is None:
        return _failure('RANSAC found no consistent pose', n, focal_source, inliers=n_in)
    if n_in < min_inliers:
        return _failure(f'too few RANSAC inliers: {n_in} < {min_inliers}', n, focal_source,
                        inliers=n_in, inlier_ratio=n_in / n)
    R_21, _ = cv2.Rodrigues(rvec)                    # x2 = R_21 x1 + t_21
    t_21 = tvec.reshape(3)
    if not (np.all(np.isfinite(R_21)) and np.all(np.isfinite(t_21))):
        return _failure('PnP returned a non-finite pose', n, focal_source, inliers=n_in)
    idx = inl.reshape(-1)
    if n_in / n < min_inlier_ratio:
        return _failure(f'inlier ratio {n_in / n:.3f} < {min_inlier_ratio}: the pointmap is not '
                        'consistent with one camera', n, focal_source, inliers=n_in,
                        inlier_ratio=n_in / n)
    if _collinear(obj[idx]):
        return _failure('degenerate geometry: the RANSAC inliers are (nearly) collinear', n,
                        focal_source, inliers=n_in, inlier_ratio=n_in / n)
    proj, _ = cv2.projectPoints(obj[idx], rvec, tvec, K, None)
    err = float(np.linalg.norm(proj.reshape(-1, 2) - img[idx], axis=-1).mean())
    R_12 = R_21.T
    return PoseResult(success=True, R=R_12, t=-R_12 @ t_21, inliers=n_in,
                      inlier_ratio=n_in / n, reproj_error_px=err, num_points=n,
                      focal_source=focal_source)
