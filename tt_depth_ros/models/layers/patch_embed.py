"""Patch embedding (strided conv, row-major (y, x) tokens), as DINOv2 `layers/patch_embed.py`."""
from __future__ import annotations

import torch
from torch import nn


class PatchEmbed(nn.Module):
    """Split an image into non-overlapping patches and project each to `embed_dim`.

    Args:
        patch_size: Patch side in pixels (14 for DINOv2, 16 for CroCo).
        in_chans: Input channels.
        embed_dim: Token width.
    """

    def __init__(self, patch_size: int, in_chans: int = 3, embed_dim: int = 1024) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map x (B, C, H, W) with H, W multiples of the patch size to (B, H/p * W/p, D)."""
        _, _, h, w = x.shape
        p = self.patch_size
        if h % p or w % p:
            raise ValueError(f'PatchEmbed: input {h}x{w} is not a multiple of the patch size {p}')
        # (B, D, h0, w0) -> (B, h0*w0, D)
        return self.proj(x).flatten(2).transpose(1, 2)
