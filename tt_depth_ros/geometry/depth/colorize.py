"""Human-viewable depth preview: metres -> rgb8 with OpenCV's turbo colour map.

For people (RViz image panel, rqt), never for machines: the colours are relative to the range
shown. Near is red, far is blue; invalid (NaN, +-Inf, <= 0) pixels are black. `colour_bar`
draws the legend of one such range (in metres, or unitless for relative depth).
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
    rgb = _turbo_rgb(np.where(valid, (d - lo) / max(hi - lo, 1e-6), 0.0))
    out[valid] = rgb[valid]
    return out


def _turbo_rgb(norm: np.ndarray) -> np.ndarray:
    """(H, W) values in [0, 1] (0 = near) -> (H, W, 3) uint8 RGB, the colorize_depth scale."""
    level = (255.0 * (1.0 - np.clip(norm, 0.0, 1.0))).astype(np.uint8)   # near = 255 = red
    return cv2.applyColorMap(level, cv2.COLORMAP_TURBO)[..., ::-1]


def colour_bar(lo: float, hi: float, height: int, unit: str = 'm', ticks: int = 5,
               width: int = 84) -> np.ndarray:
    """A vertical legend for colorize_depth(depth, lo, hi): far (hi) at the top, labelled.

    Without it a colour panel says nothing about distance; with it a wrong scale reads off.

    Args:
        lo: depth at the near (red) end.
        hi: depth at the far (blue) end.
        height: image height in pixels (that of the panel it stands beside), >= 40.
        unit: 'm' for metric depth (ticks read '1.50 m'), or a word such as 'relative' for
            unitless depth: it heads the bar and the ticks are bare numbers.
        ticks: number of labelled values, evenly spaced from lo to hi (>= 2).
        width: total width in pixels (bar + labels).

    Returns:
        (height, width, 3) uint8 RGB, white background.
    """
    if height < 40 or ticks < 2 or width < 40:
        raise ValueError(f'colour_bar needs height >= 40, ticks >= 2, width >= 40; got '
                         f'{height}, {ticks}, {width}')
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ValueError(f'colour_bar needs finite lo < hi, got {lo}, {hi}')
    out = np.full((height, width, 3), 255, np.uint8)
    top, bottom, bar_w = 22, height - 6, 14
    rows = np.linspace(1.0, 0.0, bottom - top)[:, None].repeat(bar_w, 1)   # top = far
    out[top:bottom, 2:2 + bar_w] = _turbo_rgb(rows)
    font, black = cv2.FONT_HERSHEY_SIMPLEX, (0, 0, 0)
    cv2.putText(out, 'depth [m]' if unit == 'm' else unit, (2, 11), font, 0.36, black, 1,
                cv2.LINE_AA)
    for v in np.linspace(hi, lo, ticks):
        y = int(round(top + (hi - v) / (hi - lo) * (bottom - top - 1)))
        out[y, 2 + bar_w:6 + bar_w] = 0
        label = f'{v:.2f} m' if unit == 'm' else f'{v:.2f}'
        cv2.putText(out, label, (8 + bar_w, min(max(y + 4, top + 4), height - 2)), font, 0.34,
                    black, 1, cv2.LINE_AA)
    return out
