"""CroCo decoder block (docs/dust3r.md §3.4): self-attention, cross-attention to the other, MLP.

Mirrors croco `models/blocks.py` DecoderBlock with `norm_im2_in_dec=True`; attribute names are the
checkpoint keys (`norm1 attn norm2 cross_attn norm_y norm3 mlp`). `set_precision` picks the
precision of its nine matmuls for inference (layers/linear_kernels.py); residual stream and
LayerNorms stay fp32.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from tt_depth_ros.models.layers.attention import Attention
from tt_depth_ros.models.layers.cross_attention import CrossAttention
from tt_depth_ros.models.layers.linear_kernels import MATMUL_PRECISIONS, LinearKernel
from tt_depth_ros.models.layers.mlp import Mlp


class DecoderBlock(nn.Module):
    """x += attn(norm1 x); x += cross_attn(norm2 x, norm_y y); x += mlp(norm3 x). y is not changed.

    Args:
        dim: token width.
        num_heads: heads of both attentions.
        mlp_ratio: MLP hidden / width.
        norm_eps: LayerNorm epsilon (1e-6, spec §2).
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, norm_eps: float = 1e-6):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn = Attention(dim, num_heads, qkv_bias=True)
        self.norm2 = nn.LayerNorm(dim, eps=norm_eps)
        self.cross_attn = CrossAttention(dim, num_heads, qkv_bias=True)
        self.norm_y = nn.LayerNorm(dim, eps=norm_eps)
        self.norm3 = nn.LayerNorm(dim, eps=norm_eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.precision = 'float32'
        self._kernels: dict[str, LinearKernel] | None = None

    @torch.no_grad()
    def set_precision(self, precision: str) -> 'DecoderBlock':
        """Matmul precision for inference ('float32' = the modules themselves), from the weights."""
        if precision not in MATMUL_PRECISIONS:
            raise ValueError(f'DecoderBlock: precision={precision!r}; allowed: '
                             f'{MATMUL_PRECISIONS}')
        self.precision = precision
        self._kernels = None
        if precision != 'float32':
            lins = {'qkv': self.attn.qkv, 'attn_proj': self.attn.proj,
                    'projq': self.cross_attn.projq, 'projk': self.cross_attn.projk,
                    'projv': self.cross_attn.projv, 'proj': self.cross_attn.proj,
                    'fc1': self.mlp.fc1, 'fc2': self.mlp.fc2}
            self._kernels = {n: LinearKernel(m.weight, m.bias, precision) for n, m in lins.items()}
        return self

    def _forward_kernels(self, x: torch.Tensor, y: torch.Tensor, rope: Callable | None,
                         xpos: torch.Tensor | None, ypos: torch.Tensor | None) -> torch.Tensor:
        k = self._kernels
        cd = k['qkv'].compute_dtype
        x = k['attn_proj'](self.attn.attend(self.norm1(x).to(cd), rope, xpos, kernels=k)
                           ).float().add_(x)
        x = self.cross_attn(self.norm2(x).to(cd), self.norm_y(y).to(cd), rope=rope, xpos=xpos,
                            ypos=ypos, kernels=k).float().add_(x)
        return x.add_(k['fc2'](self.mlp.hidden(self.norm3(x).to(cd), kernels=k)))

    def forward(self, x: torch.Tensor, y: torch.Tensor, rope: Callable | None = None,
                xpos: torch.Tensor | None = None, ypos: torch.Tensor | None = None) -> torch.Tensor:
        """Update this branch's tokens x (B, Nx, C) given the other branch's y (B, Ny, C)."""
        if self._kernels is not None:
            return self._forward_kernels(x, y, rope, xpos, ypos)
        x = x + self.attn(self.norm1(x), rope=rope, pos=xpos)
        x = x + self.cross_attn(self.norm2(x), self.norm_y(y), rope=rope, xpos=xpos, ypos=ypos)
        return x + self.mlp(self.norm3(x))
