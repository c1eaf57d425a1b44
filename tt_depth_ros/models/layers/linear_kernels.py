"""Prepared linear layers for the inference precisions of a transformer block's matmuls.

A block's four projections (qkv, proj, fc1/w12, fc2/w3; CroCo cross-attention also projq/k/v)
carry most of a ViT's FLOPs. `LinearKernel` holds one of them prepared for one precision, from the
current (possibly LayerScale-folded) fp32 weights:

* 'float32': `F.linear` on the weights as they are (the exact path).
* 'bfloat16': bf16 weights and inputs, bf16 output (the caller adds it to its fp32 residual
  stream); fast only on CPUs with native bf16 dot products (AVX-512 BF16 / AMX) and on CUDA.
* 'int8': fbgemm dynamic quantisation - weights int8 per output channel (symmetric), activations
  quantised per tensor at run time (7-bit range, `reduce_range`, which AVX2's 16-bit pair sums
  need to stay exact), fp32 output. About 2x an fp32 GEMM on AVX2 CPUs; accuracy is measured, not
  assumed (engines/torch/presets.py).

Kernels are plain callables kept outside the state dict, so `state_dict()` stays the checkpoint
layout whatever precision runs.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

MATMUL_PRECISIONS = ('float32', 'bfloat16', 'int8')


class LinearKernel:
    """y = x W^T + b in one precision, for x (..., in_features).

    Args:
        weight: (out, in) fp32 weights (copied / converted; the original is not kept).
        bias: (out,) fp32 bias or None.
        precision: One of MATMUL_PRECISIONS.
    """

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor],
                 precision: str) -> None:
        if precision not in MATMUL_PRECISIONS:
            raise ValueError(f'LinearKernel: precision={precision!r}; allowed: '
                             f'{MATMUL_PRECISIONS}')
        self.precision = precision
        self.out_features = int(weight.shape[0])
        w = weight.detach().float()
        b = None if bias is None else bias.detach().float()
        if precision == 'int8':
            if w.device.type != 'cpu':
                raise ValueError('int8 linears are CPU only (fbgemm); use float32 or bfloat16 '
                                 f'on {w.device}')
            scale = (w.abs().amax(dim=1) / 127.0).clamp(min=1e-12).double()
            zero = torch.zeros(w.shape[0], dtype=torch.long)
            qw = torch.quantize_per_channel(w, scale, zero, 0, torch.qint8)
            self._packed = torch.ops.quantized.linear_prepack(qw, b)
        else:
            dtype = torch.bfloat16 if precision == 'bfloat16' else torch.float32
            self._w = w.to(dtype).contiguous()
            self._b = None if b is None else b.to(dtype)

    @property
    def compute_dtype(self) -> torch.dtype:
        """The dtype inputs should arrive in (bf16 for 'bfloat16', else fp32)."""
        return torch.bfloat16 if self.precision == 'bfloat16' else torch.float32

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Apply to x (..., in); returns (..., out) in the compute dtype."""
        if self.precision == 'int8':
            lead = x.shape[:-1]
            y = torch.ops.quantized.linear_dynamic(x.reshape(-1, x.shape[-1]).float(),
                                                   self._packed, True)
            return y.view(*lead, self.out_features)
        return F.linear(x.to(self._w.dtype), self._w, self._b)


def compute_dtype(precision: str) -> torch.dtype:
    """Activation dtype of a block's matmul inputs under `precision`."""
    return torch.bfloat16 if precision == 'bfloat16' else torch.float32
