"""Metres -> 16-bit quantised inverse depth, the numbers inside image_transport's compressedDepth.

compressed_depth_image_transport stores a 32FC1 depth image as a 16-bit PNG of
`q = A / d + B` with `A = Q (Q + 1)` and `B = 1 - A / d_max` (Q = its `depth_quantization`,
d_max = its `depth_max`); its decoder returns `d = A / (q - B)` and NaN for q = 0. Inverse depth
spends the 16 bits where a camera's depth error is smallest: near. Here q is rounded (the C++
encoder truncates; both decode with the same formula), so a depth is returned within
`quantization_error_bound(d, A)`.

The format has one "no depth" value, 0. Given to it: NaN, +/-Inf, d <= 0, d >= d_max, and depths
nearer than `nearest_depth(A, B)` whose q would not fit in 16 bits (the C++ encoder lets those
wrap around; here they are invalid, never a wrong depth). +Inf "no return" (REP 117) therefore
decodes as NaN.
"""
from __future__ import annotations

import numpy as np

Q_MAX = 65535


def quant_params(depth_max_m: float, quantization: float) -> tuple[float, float]:
    """(A, B) as float32 values, exactly as they are written into the 12-byte header."""
    if not (depth_max_m > 0 and np.isfinite(depth_max_m)):
        raise ValueError(f'depth_max must be a positive number of metres, got {depth_max_m!r}')
    if not (quantization > 0 and np.isfinite(quantization)):
        raise ValueError(f'depth quantization must be positive, got {quantization!r}')
    a = np.float32(quantization) * (np.float32(quantization) + np.float32(1.0))
    b = np.float32(1.0) - a / np.float32(depth_max_m)
    return float(a), float(b)


def nearest_depth(a: float, b: float) -> float:
    """Smallest depth whose q fits in 16 bits, metres (0.152 m for the defaults 100 / 10 m)."""
    return a / (Q_MAX + 0.5 - b)


def quantization_error_bound(depth_m, a: float):
    """Largest |decoded - d| of a rounded q at depth d: 0.5 d^2 / (A - 0.5 d), metres."""
    d = np.asarray(depth_m, dtype=np.float64)
    return 0.5 * d * d / (a - 0.5 * d)


def quantize_inverse_depth(depth_m: np.ndarray, a: float, b: float,
                           depth_max_m: float) -> np.ndarray:
    """(H, W) metres -> (H, W) uint16 q = round(A / d + B); 0 where the format has no value."""
    d = np.asarray(depth_m, dtype=np.float64)
    with np.errstate(divide='ignore', invalid='ignore'):
        q = np.rint(a / d + b)
        ok = np.isfinite(d) & (d > 0) & (d < depth_max_m) & (q >= 1) & (q <= Q_MAX)
    return np.where(ok, q, 0).astype(np.uint16)
