"""Precision knobs of the ttnn engines (spec/ttnn.md §3): weights dtype and matmul fidelity.

Default 'bfloat16': bf16 activations and weights, HiFi4 with fp32 accumulation on every matmul,
conv and SDPA (the DA3 port needed this for PCC >= 0.99). Lower settings trade accuracy for speed;
their measured fidelity against our fp32 torch models is in test/engines/ttnn/ (README table).
"""
from __future__ import annotations

from dataclasses import dataclass

PRESETS = {
    # name: (weights dtype, math fidelity, fp32 accumulation)
    'bfloat16': ('bfloat16', 'HiFi4', True),
    'bfloat16-hifi2': ('bfloat16', 'HiFi2', True),
    'bfloat8_b': ('bfloat8_b', 'HiFi4', True),
    'bfloat8_b-lofi': ('bfloat8_b', 'LoFi', False),
}


@dataclass(frozen=True)
class Precision:
    """One precision setting (see PRESETS)."""

    name: str
    weights: str
    fidelity: str
    fp32_acc: bool

    def weights_dtype(self, ttnn):
        return getattr(ttnn, self.weights)

    def kernel_config(self, ttnn):
        return ttnn.WormholeComputeKernelConfig(
            math_fidelity=getattr(ttnn.MathFidelity, self.fidelity),
            math_approx_mode=False, fp32_dest_acc_en=self.fp32_acc, packer_l1_acc=self.fp32_acc)


def parse_precision(dtype) -> Precision:
    """Map the engine `dtype` argument (None = 'bfloat16') to a Precision; ValueError otherwise."""
    name = 'bfloat16' if dtype in (None, 'bf16') else str(dtype)
    if name not in PRESETS:
        raise ValueError(f'ttnn dtype={dtype!r}; allowed: {sorted(PRESETS)} (activations are '
                         'always bfloat16 on the ttnn backend)')
    return Precision(name, *PRESETS[name])
