"""Multi-head self-attention as in DINOv2 `layers/attention.py` and timm `Attention`.

The fused `qkv` projection is read as (B, N, 3, heads, head_dim): the q/k/v index is outer and the
head index inner (spec/da3.md §2.1), which is what the upstream checkpoints assume. An optional
`rope(t, pos)` callable rotates q and k (DUSt3R/CroCo RoPE2D); DA3 metric passes none.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

RopeFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Attention(nn.Module):
    """Scaled-dot-product self-attention with a fused qkv projection.

    Args:
        dim: Token width.
        num_heads: Number of heads; must divide `dim`.
        qkv_bias: Whether `qkv` has a bias (True for DINOv2 and CroCo).
    """

    def __init__(self, dim: int, num_heads: int, qkv_bias: bool = True) -> None:
        super().__init__()
        if dim <= 0 or num_heads <= 0 or dim % num_heads:
            raise ValueError(f'Attention: dim={dim} must be a positive multiple of '
                             f'num_heads={num_heads}')
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, rope: Optional[RopeFn] = None,
                pos: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Attend over the N tokens of x (B, N, C); `rope(t, pos)` rotates q and k if given."""
        b, n, c = x.shape
        # (B, N, 3C) -> (B, N, 3, heads, hd) -> (3, B, heads, N, hd)
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if rope is not None:
            q = rope(q, pos)
            k = rope(k, pos)
        out = F.scaled_dot_product_attention(q, k, v, scale=self.scale)
        # (B, heads, N, hd) -> (B, N, C)
        out = out.transpose(1, 2).reshape(b, n, c)
        return self.proj(out)
