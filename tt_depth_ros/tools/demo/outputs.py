"""The demo's depth panel: a recorded node output as an image people can look at.

A depth "panel" puts input, prediction and ground truth side by side with one colour scale, so a
wrong metric scale is visible at a glance; a colour bar beside them gives the scale in metres
(or says "relative" for a relative model). (Recorded messages are decoded by tools/bag/decode.py.)
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.geometry.depth.colorize import colorize_depth, colour_bar


def depth_panel(rgb: np.ndarray, pred: np.ndarray, gt: np.ndarray | None = None,
                unit: str = 'm') -> np.ndarray:
    """[input | predicted depth | ground truth | colour bar] with one colour scale (the GT's).

    Args:
        rgb: (H, W, 3) uint8 input.
        pred: (h, w) predicted depth (resized to H x W by nearest neighbour if needed).
        gt: (H, W) true metres, or None.
        unit: the colour bar's unit: 'm' (metric models) or 'relative' (relative models).
    """
    from tt_depth_ros.tools.eval.accuracy import resize_nearest

    h, w = rgb.shape[:2]
    if pred.shape != (h, w):
        pred = resize_nearest(pred, (h, w))
    ref = gt if gt is not None else pred
    finite = ref[np.isfinite(ref) & (ref > 0)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    tiles = [rgb, colorize_depth(pred, lo, hi)]
    if gt is not None:
        tiles.append(colorize_depth(gt, lo, hi))
    if lo is not None and hi > lo and h >= 40:
        tiles.append(colour_bar(lo, hi, h, unit))
    gap = np.full((h, 4, 3), 255, np.uint8)
    out = []
    for t in tiles:
        out += [t, gap]
    return np.concatenate(out[:-1], axis=1)
