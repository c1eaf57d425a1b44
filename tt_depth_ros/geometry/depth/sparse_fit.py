"""Robust fits of a depth map to sparse metric depth: a scale, or scale + shift in inverse depth.

The reference is metric depth on some pixels (a LiDAR scan projected with a z-buffer, the
previous frame moved with the camera: geometry/depth/sparse_depth.py); `depth` is the network's
depth on the same pixels. Both fits gate by the median absolute deviation (MAD): residuals
beyond `gate_mads` scaled MADs of the median are outliers (a LiDAR's gross returns, points seen
by the LiDAR but hidden from the camera, depth edges), left out and counted.

- `gated_ratio_scale`: value = median(reference / depth) over the inliers - for metric models
  (a refinement near 1) and relative ones (metres per model unit).
- `affine_inverse_fit`: 1 / reference = a / depth + b (affine-invariant outputs, whose unit
  and offset are both free), least squares in relative residuals over the inliers; reported as
  value = 1 / a and shift = b / a, so metric = value * depth / (1 + shift * depth)
  (`apply_fit`).

Both return a ScaleResult (geometry/pointmap/scale.py): value None with the reason when the
support is too small; `spread` is the inliers' relative MAD.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.geometry.pointmap.scale import ScaleResult

GATE_MADS = 3.0
"""Residuals beyond 3 scaled MADs (1.4826 MAD = one sigma of a normal sample) are outliers."""
MAD_TO_SIGMA = 1.4826
REL_FLOOR = 1e-6
"""The gate never narrows below a relative 1e-6 (exact data has a MAD of 0)."""
AFFINE_ITERATIONS = 3


def median(a: np.ndarray) -> float:
    """Median of a non-empty 1-D array (np.partition: a float32 array is not copied to float64).

    One selection: for an even size the lower middle is the largest element left of the upper
    (a partition with two kth values runs about 6x slower in numpy 2).
    """
    n = a.size
    k = n // 2
    part = np.partition(a, k)
    if n % 2:
        return float(part[k])
    return 0.5 * (float(part[:k].max()) + float(part[k]))


def _valid_pairs(reference: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    reference = np.asarray(reference).reshape(-1)
    depth = np.asarray(depth).reshape(-1)
    if reference.shape != depth.shape:
        raise ValueError(f'reference {reference.shape} and depth {depth.shape} must pair up '
                         'pixel by pixel')
    ok = (reference > 0) & (reference < np.inf) & (depth > 0) & (depth < np.inf)
    return reference[ok], depth[ok]


def _gate(residual: np.ndarray, centre: float, gate_mads: float, floor: float) -> np.ndarray:
    """Inlier mask: |residual - centre| within gate_mads scaled MADs, never below `floor`."""
    dev = np.abs(residual - residual.dtype.type(centre))
    return dev <= max(gate_mads * MAD_TO_SIGMA * median(dev), floor)


def gated_ratio_scale(reference: np.ndarray, depth: np.ndarray, *, min_support: int = 20,
                      gate_mads: float = GATE_MADS, source: str = 'cloud') -> ScaleResult:
    """Median of reference / depth over the pixels the MAD gate keeps (module docstring).

    Args:
        reference: metric depth per pixel (any shape; non-finite or <= 0 = no reference).
        depth: the network's depth on the same pixels.
        min_support: fewest inliers accepted; fewer gives no scale.
        gate_mads: the outlier gate in scaled MADs.
        source: the label of the result ('cloud', 'depth', 'temporal').
    """
    reference = np.asarray(reference).reshape(-1)
    depth = np.asarray(depth).reshape(-1)
    if reference.shape != depth.shape:
        raise ValueError(f'reference {reference.shape} and depth {depth.shape} must pair up '
                         'pixel by pixel')
    with np.errstate(divide='ignore', invalid='ignore'):
        ratio = (reference / depth).astype(np.float32, copy=False)
    # finite and positive exactly when both are (an Inf or NaN, a 0 or a sign gives none)
    ratio = ratio[(ratio > 0) & (ratio < np.inf)]
    n = ratio.size
    if n < max(1, min_support):
        return ScaleResult(source, None, f'only {n} pixels with a reference depth '
                           f'(< {min_support})', n)
    centre = median(ratio)
    keep = _gate(ratio, centre, gate_mads, REL_FLOOR * centre)
    inliers = ratio[keep]
    if inliers.size < min_support:
        return ScaleResult(source, None, f'only {inliers.size} of {n} pixels agree on a scale '
                           f'(< {min_support})', int(inliers.size), outliers=n - inliers.size)
    value = median(inliers)
    spread = median(np.abs(inliers - np.float32(value))) / value
    return ScaleResult(source, value, support=int(inliers.size), spread=spread,
                       outliers=int(n - inliers.size))


def affine_inverse_fit(reference: np.ndarray, depth: np.ndarray, *, min_support: int = 20,
                       gate_mads: float = GATE_MADS, source: str = 'cloud') -> ScaleResult:
    """1 / reference = a / depth + b, robustly (module docstring); value 1 / a, shift b / a.

    Args: as `gated_ratio_scale`.
    """
    reference, depth = _valid_pairs(reference, depth)
    n = reference.size
    if n < max(2, min_support):
        return ScaleResult(source, None, f'only {n} pixels with a reference depth '
                           f'(< {min_support})', n)
    y = 1.0 / reference.astype(np.float64)
    x = 1.0 / depth.astype(np.float64)
    a, b = median(y / x), 0.0                      # the scale alone starts the iterations
    keep = np.ones(n, bool)
    for _ in range(AFFINE_ITERATIONS):
        residual = y / (a * x + b) - 1.0            # relative, in inverse depth
        keep = _gate(residual, median(residual), gate_mads, REL_FLOOR)
        if keep.sum() < max(2, min_support):
            break
        rows = np.stack([x[keep] / y[keep], 1.0 / y[keep]], axis=1)
        (a, b), *_ = np.linalg.lstsq(rows, np.ones(int(keep.sum())), rcond=None)
    inliers = int(keep.sum())
    if inliers < max(2, min_support):
        return ScaleResult(source, None, f'only {inliers} of {n} pixels agree on an inverse-depth '
                           f'fit (< {min_support})', inliers, outliers=n - inliers)
    if not (a > 0 and np.isfinite(b) and a * x.min() + b > 0):
        return ScaleResult(source, None, f'the inverse-depth fit a={a:.4g}, b={b:.4g} maps '
                           'some depths behind the camera', inliers, outliers=n - inliers)
    residual = y[keep] / (a * x[keep] + b) - 1.0
    return ScaleResult(source, float(1.0 / a), support=inliers,
                       spread=median(np.abs(residual)), shift=float(b / a),
                       outliers=n - inliers)


def apply_fit(depth: np.ndarray, value: float, shift: float = 0.0) -> np.ndarray:
    """Metric depth value * d / (1 + shift * d), float32; +Inf (sky) stays +Inf.

    A pixel the shift would put at or behind the camera (1 + shift * d <= 0) becomes NaN.
    """
    if shift == 0.0:
        return depth * np.float32(value)
    d = np.asarray(depth, dtype=np.float32)
    with np.errstate(invalid='ignore', divide='ignore', over='ignore'):
        denom = np.float32(1.0) + np.float32(shift) * d
        out = np.float32(value) * d / denom
    out = np.where(denom > 0, out, np.float32(np.nan))
    out[np.isposinf(d)] = np.inf
    return out.astype(np.float32, copy=False)
