"""The port levers' weight preparation (engines/ttnn/precision.py host_weight), on the FPU model.

HiFi2 multiplies only the top 6 of an activation's mantissa bits and truncates the rest, so every
product comes out small on average; `debias` divides the role's weights by (1 - shrink) to cancel
that. LoFi multiplies 4 of a bf16 weight's 7 mantissa bits; `round_weights` rounds them on the
host instead of letting the FPU truncate. Both are checked on the stand-in's FPU arithmetic
(devtools/ttnn/standin/ops_math.py), the same the engine's forwards run through.
"""
import pytest
import torch

from devtools.ttnn.standin import numerics
from devtools.ttnn.standin.ops_math import fpu_matmul
from devtools.ttnn.standin.types import MathFidelity, WormholeComputeKernelConfig
from tt_depth_ros.engines.ttnn.precision import parse_precision, truncation_shrink


def _bf16(x):
    return x.to(torch.bfloat16).to(torch.float32)


def _slope(y, ref):
    """Least-squares gain of y against ref: 1 - the mean relative shrink."""
    return float((y.double() * ref).sum() / (ref * ref).sum())


@pytest.fixture(scope='module')
def operands():
    g = torch.Generator().manual_seed(7)
    x = _bf16(torch.randn(256, 512, generator=g))                  # a bf16 'inner' activation
    w = _bf16(torch.randn(512, 256, generator=g) / 23)
    return x, w, x.double() @ w.double()


def _config(fidelity):
    return WormholeComputeKernelConfig(math_fidelity=fidelity, fp32_dest_acc_en=True)


def test_debiased_hifi2_weights_cancel_the_truncation_shrink(operands):
    x, w, ref = operands
    preset = parse_precision('fast-hifi2')                          # proj: HiFi2 + debias
    shrink = preset.debias_shrink('proj')
    assert shrink == pytest.approx(truncation_shrink(7, 6))
    raw = _slope(fpu_matmul(x, w, _config(MathFidelity.HiFi2)), ref)
    assert raw == pytest.approx(1 - shrink, abs=shrink / 4)        # the bias is what we model
    w_up = preset.host_weight(w, 'folded', 'proj')
    assert not torch.equal(w_up, w)
    fixed = _slope(fpu_matmul(x, _bf16(w_up), _config(MathFidelity.HiFi2)), ref)
    assert abs(fixed - 1) < abs(raw - 1) / 4
    # a role without debias, and the same role in a preset without it, upload as they are
    assert torch.equal(preset.host_weight(w, None, 'fc1'), w)
    assert torch.equal(parse_precision('fast').host_weight(w, 'folded', 'proj'), w)


def test_lofi_weights_rounded_on_the_host_lose_less_than_truncated(operands):
    x, w, ref = operands
    preset = parse_precision('fast-lofi-mlp', 'dust3r')
    assert preset.matmul_setting('dec_fc1')[0] == 'LoFi'
    assert preset.matmul_setting('fc1')[0] == 'HiFi2'               # the encoder keeps its own
    rounded = preset.host_weight(w, None, 'dec_fc1')
    assert torch.equal(numerics.round_bf16(rounded), rounded)       # still bf16 values
    lofi = _config(MathFidelity.LoFi)
    err_trunc = (fpu_matmul(x, w, lofi).double() - ref).norm()
    err_round = (fpu_matmul(x, rounded, lofi).double() - ref).norm()
    assert err_round < 0.8 * err_trunc
    assert torch.equal(preset.host_weight(w, None, 'fc1'), w)       # HiFi2 reads bf16 whole
