"""Accuracy gates of the torch precision presets (engines/torch/presets.py) against fp32.

bf16 presets must keep the depth (DUSt3R: pointmap) PCC at or above BF16_PCC on the golden cases;
int8 is reported (printed) and only guarded against breakage (INT8_FLOOR): 'auto' never picks it,
and it would be defaulted only at >= INT8_DEFAULT_PCC (README "CPU presets").
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.engines.torch.presets import cpu_has_native_bf16

BF16_PCC = 0.9995
INT8_DEFAULT_PCC = 0.999
INT8_FLOOR = 0.99


def full_size_presets(presets: tuple) -> tuple:
    """The (name, ...) preset entries a full-size gate runs on this CPU.

    bf16 presets only where the CPU has native bf16 (where 'auto' picks them): emulated, one
    full-size bf16 forward costs ~30-60 s (~15x fp32 GEMM time, README "CPU presets"). DA3-SMALL
    and the tiny tests gate the bf16 arithmetic on every CPU.
    """
    native = cpu_has_native_bf16()
    run = tuple(p for p in presets if native or p[0] == 'int8')
    if len(run) < len(presets):
        print('[precision gate] bf16 presets not run at full size: no native bf16 on this CPU')
    return run


def pcc(ref: np.ndarray, got: np.ndarray) -> float:
    """Pearson correlation of two maps over the pixels finite in both."""
    a, b = np.asarray(ref, np.float64).ravel(), np.asarray(got, np.float64).ravel()
    ok = np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def check(case: str, preset: str, ref: np.ndarray, got: np.ndarray) -> float:
    """Assert `preset`'s gate for `got` against the fp32 `ref`; print and return the PCC."""
    r = pcc(ref, got)
    rel = float(np.median(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-12)))
    print(f'[precision gate] {case} {preset}: PCC {r:.6f}, median rel err {rel:.2e}')
    if preset == 'int8':
        assert r >= INT8_FLOOR, f'{case} int8: PCC {r:.6f} < {INT8_FLOOR} (broken, not just lossy)'
    else:
        assert r >= BF16_PCC, f'{case} {preset}: PCC {r:.6f} < {BF16_PCC}'
    return r
