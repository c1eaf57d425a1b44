"""Learned absolute position embedding resampling, as DINOv2 `interpolate_pos_encoding`.

Upstream quirk kept on purpose (docs/da3.md §2.1): the grid is resized with
`scale_factor=((h0 + offset) / M, (w0 + offset) / M)`, offset 0.1, bicubic, antialias off, in fp32 -
not `size=(h0, w0)`. The source-coordinate mapping then uses M/(h0+0.1); `size=` gives percent-level
depth errors away from 518x518.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def resample_pos_embed(pos_embed: torch.Tensor, h0: int, w0: int, num_prefix: int = 1,
                       offset: float = 0.1, antialias: bool = False) -> torch.Tensor:
    """Resample a (1, prefix + M*M, C) embedding to an (h0, w0) patch grid.

    Args:
        pos_embed: Learned embedding for a square M x M grid plus `num_prefix` tokens (cls).
        h0: Target patch rows.
        w0: Target patch columns.
        num_prefix: Leading tokens kept unchanged (1 = cls).
        offset: Upstream's `interpolate_offset` (0.1).
        antialias: Upstream's `interpolate_antialias` (False).

    Returns:
        (1, prefix + h0*w0, C) in pos_embed's dtype. Passthrough when the grid is already M x M
        (upstream's `npatch == N and w == h` test).
    """
    n = pos_embed.shape[1] - num_prefix
    m = int(math.isqrt(n))
    if m * m != n:
        raise ValueError(f'pos_embed has {n} patch tokens, not a square grid')
    if h0 * w0 == n and h0 == w0:
        return pos_embed
    dtype = pos_embed.dtype
    pe = pos_embed.float()
    prefix, grid = pe[:, :num_prefix], pe[:, num_prefix:]
    c = grid.shape[-1]
    # (1, M*M, C) -> (1, C, M, M)
    grid = grid.reshape(1, m, m, c).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, scale_factor=((h0 + offset) / m, (w0 + offset) / m),
                         mode='bicubic', antialias=antialias)
    if grid.shape[-2:] != (h0, w0):
        raise AssertionError(f'pos_embed resample gave {tuple(grid.shape[-2:])}, wanted {(h0, w0)}')
    # (1, C, h0, w0) -> (1, h0*w0, C)
    grid = grid.permute(0, 2, 3, 1).reshape(1, h0 * w0, c)
    return torch.cat([prefix, grid], dim=1).to(dtype)
