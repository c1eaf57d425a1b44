"""How far one output map is from a reference: the one PCC and the magnitude figures.

Every parity check (exports against torch, precision presets against float32, the ttnn stand-in
against the golden outputs, benchmarks' accuracy columns) measures with these, so a figure means
the same wherever it is printed. Correlation alone ignores scale and offset (a map x 1.05 has PCC
1.0); the relative errors do not.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

REL_FLOOR = 1e-12
"""Reference magnitudes below this count as this in a relative error (no division by zero)."""


def pcc(ref, got) -> float:
    """Pearson correlation of two arrays over the elements finite in both.

    1.0 when the finite elements are equal (a constant map included); NaN when fewer than two
    elements are finite in both.
    """
    a, b = np.asarray(ref, np.float64).ravel(), np.asarray(got, np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f'pcc: shapes differ ({np.shape(ref)} vs {np.shape(got)})')
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 2:
        return float('nan')
    if np.array_equal(a, b):
        return 1.0
    return float(np.corrcoef(a, b)[0, 1])


@dataclass(frozen=True)
class MapAgreement:
    """One map against its reference, over the elements finite in both.

    Attributes:
        pcc: Pearson correlation (`pcc`).
        median_rel: Median of |got - ref| / |ref|.
        p99_rel: 99th percentile of |got - ref| / |ref|.
        max_abs: Largest |got - ref|.
        max_rel: `max_abs` / max |ref| (the error against the map's range).
        finite_mismatch: Fraction of elements (vectors) finite in one map and not in the other.
    """

    pcc: float
    median_rel: float
    p99_rel: float
    max_abs: float
    max_rel: float
    finite_mismatch: float

    def __str__(self) -> str:
        return (f'PCC {self.pcc:.6f}, rel err median {self.median_rel:.2e} p99 '
                f'{self.p99_rel:.2e}, max abs {self.max_abs:.3g} (max rel {self.max_rel:.2e}), '
                f'finite mismatch {self.finite_mismatch:.2%}')


def compare_maps(ref, got, vector_axis: Optional[int] = None) -> MapAgreement:
    """The agreement of `got` with `ref` (same shape), module docstring.

    Args:
        ref: Reference map.
        got: Map under test.
        vector_axis: For a map of vectors (a pointmap's xyz on its last axis): the relative
            and absolute errors are those of each vector, |got - ref| / |ref| with the Euclidean
            norm along this axis (a coordinate that crosses 0 would inflate an element-wise
            relative error); PCC stays over the elements.
    """
    a, b = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    if a.shape != b.shape:
        raise ValueError(f'compare_maps: shapes differ ({a.shape} vs {b.shape})')
    fa, fb = np.isfinite(a), np.isfinite(b)
    if vector_axis is not None:
        fa, fb = fa.all(axis=vector_axis), fb.all(axis=vector_axis)
    ok = fa & fb
    if not ok.any():
        raise ValueError('compare_maps: no element is finite in both maps')
    if vector_axis is None:
        diff, mag = np.abs(b[ok] - a[ok]), np.abs(a[ok])
    else:
        va, vb = np.moveaxis(a, vector_axis, -1)[ok], np.moveaxis(b, vector_axis, -1)[ok]
        diff, mag = np.linalg.norm(vb - va, axis=-1), np.linalg.norm(va, axis=-1)
    rel = diff / np.maximum(mag, REL_FLOOR)
    scale = float(np.max(mag)) or 1.0
    return MapAgreement(pcc=pcc(a, b), median_rel=float(np.median(rel)),
                        p99_rel=float(np.percentile(rel, 99)), max_abs=float(diff.max()),
                        max_rel=float(diff.max()) / scale,
                        finite_mismatch=float(np.mean(fa != fb)))


def mask_agreement(ref_mask, got_mask) -> float:
    """Fraction of pixels on which two boolean masks (e.g. sky) agree."""
    a, b = np.asarray(ref_mask, bool), np.asarray(got_mask, bool)
    if a.shape != b.shape:
        raise ValueError(f'mask_agreement: shapes differ ({a.shape} vs {b.shape})')
    return float(np.mean(a == b))
