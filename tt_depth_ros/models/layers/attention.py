"""Multi-head self-attention as in DINOv2 `layers/attention.py` and timm `Attention`.

The fused `qkv` projection is read as (B, N, 3, heads, head_dim): the q/k/v index is outer and the
head index inner (docs/da3.md §2.1), which is what the upstream checkpoints assume. An optional
`rope(t, pos)` callable rotates q and k (DUSt3R/CroCo RoPE2D, DA3 any-view); DA3 metric passes none.
With `qk_norm` (DA3 any-view blocks from `qknorm_start`), q and k each go through their own
LayerNorm over head_dim (shared by all heads) after the head split and before RoPE.

`set_export(True)` (the export-friendly forward, engines/export/): the fused projection runs as
three linears (its row blocks q, k, v) and each is split into heads with a 4-D reshape, instead of
the 5-D (B, N, 3, heads, hd) view: LiteRT's mobile GPU delegate takes no tensor over 4-D. The same
products and sums, so the same outputs.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import torch
import torch.nn.functional as F
from torch import nn

RopeFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _norm_in(norm: nn.LayerNorm, t: torch.Tensor) -> torch.Tensor:
    """LayerNorm in the norm's own dtype (bf16 matmul inputs meet fp32 QK-norm weights)."""
    w = norm.weight.dtype
    return norm(t) if t.dtype == w else norm(t.to(w)).to(t.dtype)


class Attention(nn.Module):
    """Scaled-dot-product self-attention with a fused qkv projection.

    Args:
        dim: Token width.
        num_heads: Number of heads; must divide `dim`.
        qkv_bias: Whether `qkv` has a bias (True for DINOv2 and CroCo).
        qk_norm: Add `q_norm` / `k_norm` LayerNorm(head_dim) (DA3 any-view).
        qk_norm_eps: Their epsilon (1e-5 upstream).
    """

    def __init__(self, dim: int, num_heads: int, qkv_bias: bool = True, qk_norm: bool = False,
                 qk_norm_eps: float = 1e-5) -> None:
        super().__init__()
        if dim <= 0 or num_heads <= 0 or dim % num_heads:
            raise ValueError(f'Attention: dim={dim} must be a positive multiple of '
                             f'num_heads={num_heads}')
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        if qk_norm:
            self.q_norm = nn.LayerNorm(self.head_dim, eps=qk_norm_eps)
            self.k_norm = nn.LayerNorm(self.head_dim, eps=qk_norm_eps)
        self.proj = nn.Linear(dim, dim)
        self.export = False

    @torch.no_grad()
    def set_export(self, on: bool) -> 'Attention':
        """Split q/k/v projections (module docstring) on or off; call after loading weights."""
        names = ('_q_w', '_k_w', '_v_w', '_q_b', '_k_b', '_v_b')
        for name in names:
            self._buffers.pop(name, None)
            self._non_persistent_buffers_set.discard(name)
        self.export = bool(on)
        if on:
            ws = self.qkv.weight.chunk(3, dim=0)
            bs = self.qkv.bias.chunk(3) if self.qkv.bias is not None else (None,) * 3
            for name, t in zip(names, ws + bs):
                self.register_buffer(name, None if t is None else t.detach().contiguous(),
                                     persistent=False)
        return self

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        # (B, N, C) -> (B, N, heads, hd) -> (B, heads, N, hd)
        return t.reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def attend(self, x: torch.Tensor, rope: Optional[RopeFn] = None,
               pos: Optional[torch.Tensor] = None,
               kernels: Optional[Mapping[str, Callable]] = None) -> torch.Tensor:
        """Attention of x (B, N, C) before the output projection: (B, N, C).

        `kernels['qkv']`, if given, replaces the qkv projection (a prepared reduced-precision
        linear, layers/linear_kernels.py); the attention then runs in its output dtype.
        """
        b, n, c = x.shape
        if self.export:
            q, k, v = (self._split_heads(F.linear(x, getattr(self, f'_{t}_w'),
                                                  getattr(self, f'_{t}_b'))) for t in 'qkv')
        else:
            qkv_fn = self.qkv if kernels is None else kernels['qkv']
            # (B, N, 3C) -> (B, N, 3, heads, hd) -> (3, B, heads, N, hd)
            qkv = qkv_fn(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        if hasattr(self, 'q_norm'):
            q = _norm_in(self.q_norm, q)
            k = _norm_in(self.k_norm, k)
        if rope is not None:
            q = rope(q, pos)
            k = rope(k, pos)
        out = F.scaled_dot_product_attention(q, k, v, scale=self.scale)
        # (B, heads, N, hd) -> (B, N, C)
        return out.transpose(1, 2).reshape(b, n, c)

    def forward(self, x: torch.Tensor, rope: Optional[RopeFn] = None,
                pos: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Attend over the N tokens of x (B, N, C); `rope(t, pos)` rotates q and k if given."""
        return self.proj(self.attend(x, rope, pos))
