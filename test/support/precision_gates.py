"""Accuracy gates of the torch precision presets (engines/torch/presets.py) against fp32.

A gate has three parts:

* the preset is ACTIVE: `hot_path` records what a forward really runs (every prepared matmul
  kernel of layers/linear_kernels.py with its precision and output dtype, the input dtype of every
  transformer block and conv), and `assert_active` requires exactly what the preset names - every
  kernel of the model called, in its precision; a cast backbone's blocks fed its dtype; the
  'cpu-fast' DPT head's convs fed bf16. A preset whose kernels were never built (the fp32 path
  instead) fails here;
* the output differs from fp32 by more than round-off (`ROUNDOFF_REL`): reordered fp32
  arithmetic (the fused path, another GEMM blocking) stays below 1e-6 median relative error,
  a reduced-precision matmul is at 1e-4 and above;
* upper bounds: PCC (bf16 presets BF16_PCC; int8 is only guarded against breakage, INT8_FLOOR:
  'auto' never picks it, it would be defaulted only at >= INT8_DEFAULT_PCC,
  docs/cpu-performance.md "Accuracy gates") and the magnitude of the error (median and p99
  relative error, bounds stated by each case from what it measures), which PCC alone does not
  see (a map x 1.05 has PCC 1.0).
"""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from tt_depth_ros.engines.parity import MapAgreement, compare_maps
from tt_depth_ros.engines.torch.presets import PRESETS, cpu_has_native_bf16
from tt_depth_ros.models.layers.linear_kernels import LinearKernel

BF16_PCC = 0.9995
INT8_DEFAULT_PCC = 0.999
INT8_FLOOR = 0.99
ROUNDOFF_REL = 1e-5
"""A preset's median relative error against fp32 must exceed this (module docstring)."""
NO_NATIVE_BF16 = ('bf16 presets are not gated at full size on this CPU: it has no native bf16 '
                  'dot products (avx512_bf16 / amx_bf16), so one full-size forward is emulated '
                  'at ~15x fp32 GEMM time (docs/cpu-performance.md "CPU presets"); '
                  "'auto' never picks bf16 here. The tiny models and DA3-SMALL gate the bf16 "
                  'arithmetic on every CPU')


def skip_full_size_without_native_bf16(preset: str) -> None:
    """pytest.skip a full-size gate of a bf16 `preset` on a CPU without native bf16."""
    if PRESETS[preset].matmul != 'int8' and not cpu_has_native_bf16():
        pytest.skip(f'{preset}: {NO_NATIVE_BF16}')


@dataclass
class HotPath:
    """What ran during the forwards inside `hot_path` (see there)."""

    kernels: Counter = field(default_factory=Counter)     # (precision, output dtype) -> calls
    kernel_ids: set = field(default_factory=set)          # id() of every kernel called
    block_inputs: Counter = field(default_factory=Counter)  # input dtype of transformer blocks
    conv_inputs: Counter = field(default_factory=Counter)   # input dtype of Conv2d layers


def _blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    from tt_depth_ros.models.dust3r.decoder_block import DecoderBlock
    from tt_depth_ros.models.layers.block import Block
    return [m for m in model.modules() if isinstance(m, (Block, DecoderBlock))]


def model_kernels(model: torch.nn.Module) -> list[LinearKernel]:
    """Every prepared matmul kernel the model's blocks hold (none on the fp32 path)."""
    return [k for b in _blocks(model) for k in (b._kernels or {}).values()]


@contextmanager
def hot_path(model: torch.nn.Module):
    """Record, for the forwards of `model` inside the block, the kernels and dtypes that run."""
    seen = HotPath()
    real = LinearKernel.__call__

    def spy(kernel, x):
        y = real(kernel, x)
        seen.kernels[(kernel.precision, y.dtype)] += 1
        seen.kernel_ids.add(id(kernel))
        return y
    hooks = [b.register_forward_pre_hook(
        lambda _m, args: seen.block_inputs.update([args[0].dtype])) for b in _blocks(model)]
    hooks += [m.register_forward_pre_hook(
        lambda _m, args: seen.conv_inputs.update([args[0].dtype])) for m in model.modules()
        if isinstance(m, torch.nn.Conv2d)]
    LinearKernel.__call__ = spy
    try:
        yield seen
    finally:
        LinearKernel.__call__ = real
        for h in hooks:
            h.remove()


def assert_active(case: str, preset: str, model: torch.nn.Module, seen: HotPath) -> None:
    """The forward recorded in `seen` ran what `preset` names (module docstring)."""
    p = PRESETS[preset]
    kernels = model_kernels(model)
    assert seen.block_inputs, f'{case}: no transformer block ran inside hot_path'
    if p.matmul == 'float32':
        assert not kernels and not seen.kernels, \
            f'{case} {preset}: reduced-precision kernels ran {dict(seen.kernels)}'
    else:
        out = torch.bfloat16 if p.matmul == 'bfloat16' else torch.float32
        blocks = _blocks(model)
        bare = sum(b._kernels is None for b in blocks)
        assert not bare, (f'{case} {preset}: {bare} of {len(blocks)} transformer blocks hold no '
                          f'{p.matmul} matmul kernels (the float32 path runs there)')
        assert seen.kernel_ids == {id(k) for k in kernels}, (
            f'{case} {preset}: {len(seen.kernel_ids)} of the model\'s {len(kernels)} '
            f'{p.matmul} kernels ran')
        assert set(seen.kernels) == {(p.matmul, out)}, \
            f'{case} {preset}: kernels ran as {dict(seen.kernels)}, expected {p.matmul} -> {out}'
    backbone = getattr(torch, p.backbone_dtype)
    assert set(seen.block_inputs) == {backbone}, \
        f'{case} {preset}: blocks were fed {dict(seen.block_inputs)}, expected {backbone}'
    if p.head_bf16 and getattr(model, 'head', None) is not None \
            and type(model.head).__name__ == 'DA3Head':
        assert seen.conv_inputs[torch.bfloat16] > 0, \
            f'{case} {preset}: no conv ran in bf16 (the DPT head stays fp32)'


def check(case: str, preset: str, ref: np.ndarray, got: np.ndarray, *, median: float,
          p99: float, vector_axis: int | None = None) -> MapAgreement:
    """Assert `preset`'s gate for `got` against the fp32 `ref`; print and return the agreement.

    Args:
        case: Model and size, for the messages.
        preset: The preset that produced `got`.
        ref: The fp32 output.
        got: The preset's output.
        median: Bound on the median relative error (stated by the caller from what the case
            measures, with margin).
        p99: Bound on the 99th-percentile relative error.
        vector_axis: Axis of a pointmap's xyz: errors per point (parity.compare_maps).
    """
    a = compare_maps(ref, got, vector_axis=vector_axis)
    print(f'[precision gate] {case} {preset}: {a}')
    assert a.finite_mismatch == 0, f'{case} {preset}: finite pixels differ from fp32 ({a})'
    assert a.median_rel > ROUNDOFF_REL, (
        f'{case} {preset}: output equals float32 to round-off ({a}): the preset is not active')
    if PRESETS[preset].matmul == 'int8':
        assert a.pcc >= INT8_FLOOR, f'{case} int8: PCC {a.pcc:.6f} < {INT8_FLOOR} (broken)'
    else:
        assert a.pcc >= BF16_PCC, f'{case} {preset}: PCC {a.pcc:.6f} < {BF16_PCC}'
    assert a.median_rel <= median and a.p99_rel <= p99, \
        f'{case} {preset}: relative error above median {median:g} / p99 {p99:g}: {a}'
    return a
