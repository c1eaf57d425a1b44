"""Human-viewable depth preview: metres -> rgb8 with OpenCV's turbo colour map.

For people (RViz image panel, rqt), never for machines: the colours are relative to the range
shown. Near is red, far is blue; invalid (NaN, +-Inf, <= 0) pixels are black.
"""
from __future__ import annotations

import cv2
import numpy as np


def colorize_depth(depth: np.ndarray, min_m: float | None = None,
                   max_m: float | None = None) -> np.ndarray:
    """Turbo-colour an (H, W) metric depth map.

    Args:
        depth: (H, W) depth in metres.
        min_m: depth mapped to the near end; None = smallest valid depth in the frame.
        max_m: depth mapped to the far end; None = largest valid depth in the frame.

    Returns:
        (H, W, 3) uint8 RGB image.
    """
    if depth.ndim != 2:
        raise ValueError(f'depth must be (H, W), got shape {depth.shape}')
    d = np.asarray(depth, dtype=np.float32)
    valid = np.isfinite(d) & (d > 0)
    out = np.zeros(d.shape + (3,), dtype=np.uint8)
    if not valid.any():
        return out
    lo = float(d[valid].min()) if min_m is None else float(min_m)
    hi = float(d[valid].max()) if max_m is None else float(max_m)
    span = max(hi - lo, 1e-6)
    norm = np.where(valid, (d - lo) / span, 0.0)
    level = (255.0 * (1.0 - np.clip(norm, 0.0, 1.0))).astype(np.uint8)   # near = 255 = red
    bgr = cv2.applyColorMap(level, cv2.COLORMAP_TURBO)
    out[valid] = bgr[valid][:, ::-1]
    return out
