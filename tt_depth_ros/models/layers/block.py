"""Pre-norm transformer block, as DINOv2 `layers/block.py` / timm `Block` (no drop-path at eval)."""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from tt_depth_ros.models.layers.attention import Attention, RopeFn
from tt_depth_ros.models.layers.layer_scale import LayerScale
from tt_depth_ros.models.layers.mlp import Mlp


class Block(nn.Module):
    """x += ls1(attn(norm1(x))); x += ls2(mlp(norm2(x))).

    Args:
        dim: Token width.
        num_heads: Attention heads.
        mlp_ratio: MLP hidden width / dim.
        norm_eps: LayerNorm epsilon (1e-6 in DINOv2 and CroCo blocks, spec/da3.md §2).
        layer_scale: Use LayerScale (DINOv2) or not (CroCo: `ls1`/`ls2` are Identity).
        qkv_bias: Bias on the fused qkv projection.
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, norm_eps: float = 1e-6,
                 layer_scale: bool = True, qkv_bias: bool = True) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn = Attention(dim, num_heads, qkv_bias=qkv_bias)
        self.ls1 = LayerScale(dim) if layer_scale else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=norm_eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale(dim) if layer_scale else nn.Identity()

    def forward(self, x: torch.Tensor, rope: Optional[RopeFn] = None,
                pos: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Run one block on x (B, N, C); rope/pos are passed to the attention."""
        x = x + self.ls1(self.attn(self.norm1(x), rope=rope, pos=pos))
        return x + self.ls2(self.mlp(self.norm2(x)))
