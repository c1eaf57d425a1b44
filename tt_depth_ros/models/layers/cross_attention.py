"""Multi-head cross-attention with optional RoPE, as in the CroCo/DUSt3R decoder.

Spec: docs/dust3r.md §3.4.

Mirrors croco `models/blocks.py` CrossAttention: separate `projq`, `projk`, `projv` and `proj`
linears (their names are the checkpoint keys); RoPE rotates q by the query tokens' positions and
k by the other view's positions; softmax(q k^T * head_dim**-0.5) v with no mask.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn


class CrossAttention(nn.Module):
    """Queries from `x`, keys/values from `y`.

    Args:
        dim: token width of both inputs.
        num_heads: attention heads; dim must divide evenly.
        qkv_bias: bias on projq/projk/projv (True upstream).
    """

    def __init__(self, dim: int, num_heads: int, qkv_bias: bool = True):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f'CrossAttention: dim {dim} is not divisible by num_heads {num_heads}')
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.projq = nn.Linear(dim, dim, bias=qkv_bias)
        self.projk = nn.Linear(dim, dim, bias=qkv_bias)
        self.projv = nn.Linear(dim, dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # B heads N hd

    def forward(self, x: torch.Tensor, y: torch.Tensor, rope: Callable | None = None,
                xpos: torch.Tensor | None = None, ypos: torch.Tensor | None = None,
                kernels: Mapping[str, Callable] | None = None) -> torch.Tensor:
        """Attend from x (B, Nx, C) to y (B, Ny, C).

        Args:
            x: query tokens (already normalised by the caller).
            y: key/value tokens (already normalised by the caller).
            rope: optional `rope(t, pos)` applied to q with `xpos` and to k with `ypos`.
            xpos: (B, Nx, 2) positions of x, required with rope.
            ypos: (B, Ny, 2) positions of y, required with rope.
            kernels: prepared reduced-precision replacements of projq/projk/projv/proj by
                name (layers/linear_kernels.py); None = the modules.

        Returns:
            (B, Nx, C) projected attention output.
        """
        kn = kernels if kernels is not None else {'projq': self.projq, 'projk': self.projk,
                                                  'projv': self.projv, 'proj': self.proj}
        q = self._heads(kn['projq'](x))
        k, v = self._heads(kn['projk'](y)), self._heads(kn['projv'](y))
        if rope is not None:
            if xpos is None or ypos is None:
                raise ValueError('CrossAttention: rope given without xpos/ypos')
            q, k = rope(q, xpos), rope(k, ypos)
        out = F.scaled_dot_product_attention(q, k, v, scale=self.scale)   # B heads Nx hd
        b, _, n, _ = out.shape
        return kn['proj'](out.transpose(1, 2).reshape(b, n, -1))
