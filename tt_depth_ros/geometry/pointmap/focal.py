"""Focal length from a pointmap (docs/dust3r.md §7.1), used when no intrinsics are known.

Mirrors dust3r `post_process.py` estimate_focal_knowing_depth (mode 'weiszfeld'), written from
the spec: a single focal f minimises sum_i |p_i - f * r_i| over pixels p (centred on the principal
point) and the pointmap's projective rays r = (X/Z, Y/Z), by 10 IRLS (Weiszfeld) steps.
"""
from __future__ import annotations

import numpy as np


def estimate_focal(pts3d: np.ndarray, pp: tuple[float, float] | None = None,
                   mask: np.ndarray | None = None, iterations: int = 10) -> float:
    """Estimate one focal length (pixels) of the camera a pointmap is expressed in.

    Args:
        pts3d: (H, W, 3) points of the image's pixels in its own camera frame (head 1 of DUSt3R).
        pp: principal point (cx, cy); upstream's default (W/2, H/2) when None.
        mask: optional (H, W) bool of pixels to use (upstream uses all pixels).
        iterations: IRLS steps (10 upstream).

    Returns:
        The focal length in pixels of the pointmap's grid, >= 0.

    Raises:
        ValueError: bad shapes, or no pixel with a usable ray.
    """
    pts3d = np.asarray(pts3d, dtype=np.float64)
    if pts3d.ndim != 3 or pts3d.shape[2] != 3:
        raise ValueError(f'estimate_focal: pts3d must be (H, W, 3), got {pts3d.shape}')
    h, w = pts3d.shape[:2]
    cx, cy = (w / 2.0, h / 2.0) if pp is None else (float(pp[0]), float(pp[1]))
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)   # integer pixel coords, x = column
    p = np.stack((xs - cx, ys - cy), axis=-1).reshape(-1, 2)
    with np.errstate(divide='ignore', invalid='ignore'):
        r = pts3d[..., :2] / pts3d[..., 2:3]
    r = np.nan_to_num(r, nan=0.0, posinf=0.0, neginf=0.0).reshape(-1, 2)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (h, w):
            raise ValueError(f'estimate_focal: mask shape {mask.shape} != {(h, w)}')
        p, r = p[mask.reshape(-1)], r[mask.reshape(-1)]
    dot_rp = (r * p).sum(-1)
    dot_rr = (r * r).sum(-1)
    if dot_rr.size == 0 or dot_rr.mean() <= 0:
        raise ValueError('estimate_focal: the pointmap has no finite rays off the optical axis')
    f = dot_rp.mean() / dot_rr.mean()
    for _ in range(int(iterations)):
        wgt = 1.0 / np.maximum(np.linalg.norm(p - f * r, axis=-1), 1e-8)
        f = (wgt * dot_rp).mean() / (wgt * dot_rr).mean()
    return float(max(f, 0.0))
