"""Metric scale for DUSt3R outputs, which are only defined up to one global factor per pair.

DUSt3R's loss is scale-normalised (docs/dust3r.md §7.1 step 6), so a pair's pointmaps and PnP
translation are in arbitrary "DUSt3R units". Three sources turn them into something meaningful:

- ``none``: keep DUSt3R units (scale 1); nothing downstream may call them metres.
- ``baseline``: a known distance between the two cameras (a calibrated stereo rig):
  scale = baseline_m / |t|, where t is the PnP translation of camera 2 in camera 1.
- ``depth``: a metric depth image of view 1 (e.g. the depth node's output for camera 1):
  scale = median(metric / pointmap depth) over confident, valid pixels — robust to outliers and sky.

The same median ratio also chains temporal pairs onto one consistent unit (ratio between a
keyframe's depth as seen by two different pairs). Every result names its source and support.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SOURCES = ('none', 'baseline', 'depth')
METRIC_SOURCES = ('baseline', 'depth', 'camera_height', 'model', 'cloud', 'temporal')
"""Sources whose scaled lengths are metres ('camera_height': geometry/depth/ground_plane.py;
'model': the network predicts metres itself, e.g. DA3NESTED; 'cloud': a LiDAR scan and
'temporal': the previous frame moved with the camera, geometry/depth/sparse_fit.py)."""


@dataclass(frozen=True)
class ScaleResult:
    """One pair's scale: multiply DUSt3R-unit lengths by `value` to get the target units.

    `value` is None when the source could not provide a scale for this pair (`reason` says why);
    `support` is the number of pixels (or 1 for a baseline) it rests on; `spread` the relative
    median absolute deviation of the per-pixel ratios (0 for a baseline). A fit in inverse depth
    (geometry/depth/sparse_fit.py) also has a `shift`: metric = value * d / (1 + shift * d);
    `outliers` counts the pixels a gated fit left out.
    """

    source: str
    value: float | None
    reason: str = ''
    support: int = 0
    spread: float = 0.0
    shift: float = 0.0
    outliers: int = 0

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def metric(self) -> bool:
        """True when lengths times `value` are metres."""
        return self.ok and self.source in METRIC_SOURCES


def unit_scale() -> ScaleResult:
    """Scale of source ``none``: DUSt3R units kept."""
    return ScaleResult('none', 1.0, support=0)


def baseline_scale(t: np.ndarray, baseline_m: float, min_norm: float = 1e-9) -> ScaleResult:
    """Scale is baseline_m / |t| for a stereo rig with a known camera distance.

    Args:
        t: PnP translation of camera 2 in camera 1, DUSt3R units, shape (3,).
        baseline_m: distance between the two optical centres, metres (> 0).
        min_norm: below this |t| the direction is undefined and no scale is returned.
    """
    if not baseline_m > 0.0 or not np.isfinite(baseline_m):
        raise ValueError(f'baseline_m must be a positive finite number of metres, got {baseline_m}')
    norm = float(np.linalg.norm(np.asarray(t, dtype=np.float64).reshape(3)))
    if not np.isfinite(norm) or norm < min_norm:
        return ScaleResult('baseline', None, f'|t| = {norm:.3g} is too small to scale', 0)
    return ScaleResult('baseline', float(baseline_m) / norm, support=1)


def median_ratio_scale(reference: np.ndarray, depth: np.ndarray, mask: np.ndarray | None = None,
                       *, min_support: int = 20, source: str = 'depth') -> ScaleResult:
    """Scale is median(reference / depth) over pixels valid in both (finite, > 0) and in `mask`.

    Args:
        reference: target-unit depth (e.g. metres) on the same grid as `depth`, (H, W).
        depth: DUSt3R-unit depth (z of the view's pointmap in its own camera), (H, W).
        mask: optional boolean (H, W), e.g. confidence above threshold.
        min_support: fewest valid pixels accepted; fewer gives no scale.
        source: label reported in the result ('depth', or a chaining label).
    """
    reference = np.asarray(reference, dtype=np.float64)
    depth = np.asarray(depth, dtype=np.float64)
    if reference.shape != depth.shape:
        raise ValueError(f'reference depth {reference.shape} and pointmap depth {depth.shape} '
                         'must be on the same grid; resample the reference first')
    valid = np.isfinite(reference) & np.isfinite(depth) & (reference > 0) & (depth > 0)
    if mask is not None:
        if mask.shape != depth.shape:
            raise ValueError(f'mask shape {mask.shape} differs from depth {depth.shape}')
        valid &= mask.astype(bool)
    n = int(valid.sum())
    if n < max(1, min_support):
        return ScaleResult(source, None, f'only {n} valid pixels (< {min_support})', n)
    ratios = reference[valid] / depth[valid]
    value = float(np.median(ratios))
    spread = float(np.median(np.abs(ratios - value)) / value)
    return ScaleResult(source, value, support=n, spread=spread)


def resample_depth_to_grid(depth: np.ndarray, resized_wh: tuple[int, int],
                           crop_ltrb: tuple[int, int, int, int]) -> np.ndarray:
    """Nearest-neighbour map of a camera-resolution depth image onto a resize-then-crop grid.

    Uses the same pixel-centre convention as the intrinsics mapping (docs/dust3r.md §5): resized
    pixel centre u' maps to source (u' + 0.5) * W1 / Wr - 0.5. Nearest neighbour never blends
    valid depth with NaN/Inf neighbours.

    Args:
        depth: (H1, W1) float depth at camera resolution.
        resized_wh: (Wr, Hr) after the resize, before the crop.
        crop_ltrb: (left, top, right, bottom) crop box in resized pixels.
    """
    depth = np.asarray(depth)
    if depth.ndim != 2:
        raise ValueError(f'depth must be (H, W), got shape {depth.shape}')
    h1, w1 = depth.shape
    wr, hr = resized_wh
    left, top, right, bottom = crop_ltrb
    u = (np.arange(left, right) + 0.5) * (w1 / wr) - 0.5
    v = (np.arange(top, bottom) + 0.5) * (h1 / hr) - 0.5
    ui = np.clip(np.rint(u).astype(np.int64), 0, w1 - 1)
    vi = np.clip(np.rint(v).astype(np.int64), 0, h1 - 1)
    return depth[np.ix_(vi, ui)]
