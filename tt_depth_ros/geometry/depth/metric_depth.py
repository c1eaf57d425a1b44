"""DA3 raw depth to metres, sky and range handling, and validity-preserving resampling.

Mirrors upstream Depth-Anything-3 `utils/alignment.py::apply_metric_scaling` (docs/da3.md §5): the
network predicts planar depth for a virtual 300 px focal, so

    metres = raw * ((fx' + fy') / 2) / 300,   fx', fy' = focal lengths AT NETWORK RESOLUTION.

Sky (docs/da3.md §3): upstream calls a pixel non-sky when sky < 0.3 and fills sky with a randomly
sampled quantile. Here a pixel is sky when sky >= threshold (same 0.3 default), deterministically,
and becomes +Inf ("no return", REP 117) by default, NaN, or keeps the predicted depth.

Depth conventions: float32 metres, NaN = invalid, +Inf = sky / beyond range.
"""
from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

from tt_depth_ros.geometry.preprocess.da3_preprocess import check_focal

CANONICAL_FOCAL = 300.0
"""The virtual focal (px) of DA3's raw depth: raw depth equals metres at f' = 300."""

DEFAULT_FOCAL_NO_INTRINSICS = CANONICAL_FOCAL
"""Focal (px, at network resolution) assumed when no intrinsics are given.

Equal to the canonical focal, so the "metres" are the network's raw canonical depth (a 504 px wide
network image then spans an ~80 deg horizontal field of view). The scale is unreliable for any other
camera: callers flag such results (`DepthResult.intrinsics_assumed`, a warning in the node).
"""

SKY_MODES = ('inf', 'nan', 'keep')


def default_intrinsics(net_w: int, net_h: int) -> np.ndarray:
    """Assumed K at network resolution: DEFAULT_FOCAL_NO_INTRINSICS, centred principal point."""
    f = DEFAULT_FOCAL_NO_INTRINSICS
    return np.array([[f, 0.0, net_w / 2.0], [0.0, f, net_h / 2.0], [0.0, 0.0, 1.0]])


def metric_depth(raw_depth: np.ndarray, fx_net: float, fy_net: float) -> np.ndarray:
    """Metric depth (float32 metres) from DA3 raw depth.

    Args:
        raw_depth: Raw network depth (exp of the logit), at network resolution.
        fx_net: Horizontal focal length in pixels at network resolution.
        fy_net: Vertical focal length in pixels at network resolution.

    Returns:
        raw * ((fx_net + fy_net) / 2) / 300 as float32.
    """
    check_focal(fx_net, fy_net)
    scale = ((float(fx_net) + float(fy_net)) / 2.0) / CANONICAL_FOCAL
    return np.asarray(raw_depth, dtype=np.float32) * np.float32(scale)   # float32 product


def sky_mask(sky: np.ndarray, threshold: float) -> np.ndarray:
    """Boolean sky mask: sky >= threshold (NaN sky scores count as not sky)."""
    if not np.isfinite(threshold):
        raise ValueError(f'sky threshold={threshold} must be finite')
    with np.errstate(invalid='ignore'):
        return np.asarray(sky) >= threshold


def apply_sky(depth_m: np.ndarray, sky: np.ndarray, threshold: float,
              mode: str = 'inf') -> np.ndarray:
    """Mark sky pixels in a depth map (returns a new array).

    Args:
        depth_m: Depth map (H, W).
        sky: Sky score map (relu of the sky logit), same shape.
        threshold: Pixels with sky >= threshold are sky (upstream's is
            models/da3/config.py SKY_THRESHOLD).
        mode: 'inf' (+Inf, REP 117 "no return"), 'nan' (invalid) or 'keep' (predicted depth).

    Returns:
        float32 depth with sky handled.
    """
    if mode not in SKY_MODES:
        raise ValueError(f'sky mode={mode!r}; allowed: {SKY_MODES}')
    depth = np.array(depth_m, dtype=np.float32, copy=True)
    if np.shape(sky) != depth.shape:
        raise ValueError(f'sky shape {np.shape(sky)} differs from depth shape {depth.shape}')
    if mode == 'keep':
        return depth
    depth[sky_mask(sky, threshold)] = np.inf if mode == 'inf' else np.nan
    return depth


def clip_max_depth(depth: np.ndarray, max_depth_m: Optional[float]) -> np.ndarray:
    """Set depths beyond `max_depth_m` to +Inf (out of range); None returns a copy unchanged."""
    depth = np.array(depth, dtype=np.float32, copy=True)
    if max_depth_m is None:
        return depth
    if not np.isfinite(max_depth_m) or max_depth_m <= 0:
        raise ValueError(f'max_depth_m={max_depth_m} must be a finite positive distance or None')
    with np.errstate(invalid='ignore'):
        depth[depth > max_depth_m] = np.inf
    return depth


def resize_depth(depth: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Resample a depth map to out_hw without mixing valid depth with NaN/Inf pixels.

    Interpolation: bilinear (cv2 INTER_LINEAR, pixel-centre aligned, like align_corners=False)
    over the *finite* neighbours only, with weights renormalised to sum to 1. A pixel whose nearest
    source pixel (INTER_NEAREST_EXACT) is NaN or Inf takes that value, so sky and invalid regions
    keep their shape and code. Depth values are not rescaled (planar depth does not change with
    resolution; only K does - see `scale_intrinsics`). An all-finite map (the common case) needs
    only the depth resample: its weight sums are cached per shape and the result is bit-identical.

    Args:
        depth: (H, W) float depth, NaN invalid, +Inf sky / no return.
        out_hw: (out_h, out_w).

    Returns:
        (out_h, out_w) float32.
    """
    depth = np.asarray(depth, dtype=np.float32)
    if depth.ndim != 2:
        raise ValueError(f'depth must be (H, W), got shape {depth.shape}')
    out_h, out_w = (int(v) for v in out_hw)
    if out_h < 1 or out_w < 1:
        raise ValueError(f'out_hw={tuple(out_hw)} must be positive')
    if (out_h, out_w) == depth.shape:
        return depth.copy()
    dsize = (out_w, out_h)
    valid = np.isfinite(depth)
    if valid.all():     # the common frame: no sky, no holes - skip the mask resamples
        num = cv2.resize(depth, dsize, interpolation=cv2.INTER_LINEAR)
        den = _all_valid_weights(depth.shape, dsize)
        if den is None:     # weights sum to exactly 1 everywhere: num / 1 == num
            return num
    else:
        num = cv2.resize(np.where(valid, depth, np.float32(0.0)), dsize,
                         interpolation=cv2.INTER_LINEAR)
        den = cv2.resize(valid.astype(np.float32), dsize, interpolation=cv2.INTER_LINEAR)
    out = cv2.resize(depth, dsize, interpolation=cv2.INTER_NEAREST_EXACT)
    ok = np.isfinite(out)
    ok &= den > 1e-6
    np.divide(num, den, out=out, where=ok)
    return out


_WEIGHTS_CACHE: dict[tuple, Optional[np.ndarray]] = {}


def _all_valid_weights(in_hw: tuple[int, int], dsize: tuple[int, int]) -> Optional[np.ndarray]:
    """Bilinear weight sum of an all-valid map (cached per shape pair); None when exactly 1.

    It is what `resize_depth` would compute from an all-ones validity mask, so using it gives the
    same bits; when every sum is exactly 1 the division is the identity and is skipped.
    """
    key = (tuple(in_hw), tuple(dsize))
    if key not in _WEIGHTS_CACHE:
        if len(_WEIGHTS_CACHE) >= 16:   # bounded: a node sees one or two camera sizes
            _WEIGHTS_CACHE.clear()
        den = cv2.resize(np.ones(in_hw, np.float32), dsize, interpolation=cv2.INTER_LINEAR)
        den.flags.writeable = False
        _WEIGHTS_CACHE[key] = None if (den == 1.0).all() else den
    return _WEIGHTS_CACHE[key]
