"""Ground plane in a relative-depth cloud, and the metric scale it gives from the camera height.

The classic monocular-VO trick: a relative-depth cloud is right up to one factor, the camera's
height above a flat floor is known (a mounting parameter), so fitting the floor plane in the cloud
and dividing the known height by the plane's distance from the optical centre gives metres.

The fit is RANSAC over plane hypotheses from point triples (numpy, seeded: the same cloud gives the
same plane on every run), restricted to planes whose upward normal lies within `max_tilt_deg` of
the camera's "up" (-y in the optical frame: x right, y down, z forward) and that lie below the
camera. The inlier band is relative, |n.p + d| <= tolerance * d, so it does not depend on the
cloud's unknown unit. The winning hypothesis is refined by least squares (REFINE_ROUNDS). A fit
is refused (no scale) when too few points, or too small a fraction of the valid points, lie on the
plane: the ground is then not visible, and a wall or a table top must not be taken for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tt_depth_ros.geometry.pointmap.scale import ScaleResult

UP_OPTICAL = np.array([0.0, -1.0, 0.0])
"""Camera 'up' in the optical frame (y points down)."""
REFINE_ROUNDS = 3
"""Least-squares refinements of the RANSAC plane, each over the points within 3x the median
residual of the previous one (at most `tolerance`): points of a wall near the floor line, inside
the wide RANSAC band, would otherwise tilt the plane."""


@dataclass(frozen=True)
class GroundFit:
    """One ground-plane fit in the cloud's units.

    Attributes:
        ok: A plane was found and accepted.
        normal: (3,) unit normal pointing from the plane towards the camera (None if not ok).
        distance: Distance of the optical centre from the plane, cloud units (0 if not ok).
        inliers: Points within the band around the plane.
        inlier_ratio: inliers / valid points.
        tilt_deg: Angle between the normal and the camera's up axis.
        residual: Median |n.p + d| / d of the inliers (relative flatness).
        reason: Why the fit was refused ('' when ok).
    """

    ok: bool
    normal: np.ndarray | None
    distance: float
    inliers: int
    inlier_ratio: float
    tilt_deg: float
    residual: float = 0.0
    reason: str = ''


def _refused(reason: str, inliers: int = 0, ratio: float = 0.0, tilt: float = 0.0) -> GroundFit:
    return GroundFit(False, None, 0.0, inliers, ratio, tilt, 0.0, reason)


def _orient(normal: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flip (n, d) so that d > 0: the camera (origin) is on the normal's side."""
    sign = np.where(d < 0, -1.0, 1.0)
    return normal * sign[..., None], d * sign


def fit_ground_plane(points: np.ndarray, *, max_tilt_deg: float = 35.0,
                     tolerance: float = 0.05, min_inlier_ratio: float = 0.1,
                     min_inliers: int = 100, iterations: int = 200, max_points: int = 20000,
                     seed: int = 0) -> GroundFit:
    """RANSAC floor plane of a cloud in an optical camera frame (see the module docstring).

    Args:
        points: (..., 3) points, any unit; non-finite rows are ignored.
        max_tilt_deg: Largest angle between the plane normal and the camera up axis.
        tolerance: Inlier band as a fraction of the plane's distance from the camera.
        min_inlier_ratio: Smallest accepted inliers / valid points.
        min_inliers: Smallest accepted inlier count.
        iterations: RANSAC hypotheses.
        max_points: Evenly spaced subsample of the valid points used for the fit.
        seed: RNG seed of the triples (deterministic fits).
    """
    if not 0.0 < max_tilt_deg < 90.0:
        raise ValueError(f'max_tilt_deg={max_tilt_deg} must be in (0, 90)')
    if not tolerance > 0.0:
        raise ValueError(f'tolerance={tolerance} must be > 0')
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    pts = pts[np.isfinite(pts).all(axis=1)]
    n_valid = len(pts)
    if n_valid < max(3, min_inliers):
        return _refused(f'only {n_valid} valid points (< {max(3, min_inliers)})')
    if n_valid > max_points:
        pts = pts[np.arange(max_points) * n_valid // max_points]
    below = pts[pts @ UP_OPTICAL < 0]          # candidate triples from below the camera only
    if len(below) < 3:
        return _refused('no points below the camera: the ground is not visible')
    rng = np.random.default_rng(seed)
    tri = below[rng.integers(0, len(below), (iterations, 3))]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    norm = np.linalg.norm(normal, axis=1)
    good = norm > 1e-12
    normal = normal[good] / norm[good, None]
    normal, d = _orient(normal, -np.einsum('ij,ij->i', normal, tri[good, 0]))
    cos_tilt = normal @ UP_OPTICAL
    keep = (cos_tilt >= np.cos(np.radians(max_tilt_deg))) & (d > 0)
    if not keep.any():
        return _refused(f'no plane within {max_tilt_deg} deg of level below the camera: the '
                        'ground is not visible')
    normal, d = normal[keep], d[keep]
    residual = np.abs(pts @ normal.T + d)                 # (P, hypotheses)
    counts = (residual <= tolerance * d).sum(axis=0)
    best = int(np.argmax(counts))
    on = residual[:, best] <= tolerance * d[best]
    for _ in range(REFINE_ROUNDS):   # least squares; the band shrinks to the plane's own noise
        n_ref, d_ref = _refine(pts[on])
        n_ref, d_ref = _orient(n_ref, np.asarray(d_ref))
        res = np.abs(pts @ n_ref + d_ref)
        band = min(tolerance, max(3.0 * float(np.median(res[on])) / max(float(d_ref), 1e-12),
                                  1e-6))
        on = res <= band * d_ref
    on = res <= tolerance * d_ref
    count = int(on.sum())
    ratio = count / len(pts)
    tilt = float(np.degrees(np.arccos(np.clip(n_ref @ UP_OPTICAL, -1.0, 1.0))))
    if not d_ref > 0 or tilt > max_tilt_deg:
        return _refused(f'refined plane is {tilt:.1f} deg from level or not below the camera',
                        count, ratio, tilt)
    if count < min_inliers or ratio < min_inlier_ratio:
        return _refused(f'ground plane has {count} inliers ({100 * ratio:.1f} % of the valid '
                        f'points; need >= {min_inliers} and >= {100 * min_inlier_ratio:.1f} %): '
                        'the ground is not visible enough', count, ratio, tilt)
    return GroundFit(True, n_ref, float(d_ref), count, float(ratio), tilt,
                     float(np.median(res[on]) / d_ref))


def _refine(pts: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares plane (unit normal, offset) through points: smallest singular vector."""
    centre = pts.mean(axis=0)
    _, _, vt = np.linalg.svd(pts - centre, full_matrices=False)
    normal = vt[-1]
    return normal, float(-normal @ centre)


def camera_height_scale(points: np.ndarray, camera_height_m: float,
                        **fit_kwargs) -> tuple[ScaleResult, GroundFit]:
    """Scale (metres per cloud unit) = camera_height_m / fitted ground distance.

    Args:
        points: Relative-depth cloud in the optical camera frame.
        camera_height_m: Height of the optical centre above the floor, metres (> 0).
        **fit_kwargs: `fit_ground_plane` options.

    Returns:
        (ScaleResult with source 'camera_height' - value None when refused, support = inliers,
        spread = relative residual - and the fit itself).
    """
    if not (camera_height_m > 0.0 and np.isfinite(camera_height_m)):
        raise ValueError(f'camera_height_m={camera_height_m} must be a positive number of metres')
    fit = fit_ground_plane(points, **fit_kwargs)
    if not fit.ok:
        return ScaleResult('camera_height', None, fit.reason, fit.inliers), fit
    return (ScaleResult('camera_height', float(camera_height_m) / fit.distance,
                        support=fit.inliers, spread=fit.residual), fit)
