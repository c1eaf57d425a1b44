"""Per-pixel maps with few channels, packed k pixels to a tile row (a TILE layout's lanes are 32).

A (1, 1, H*W, c) float32 map with c = 2 (DA3 depth, sky) or 4 (DUSt3R raw) fills c of each tile
row's 32 lanes: every elementwise op after the head's last linear, and the readback, moved 32/c
times the bytes they use (DA3-L 518x518: 34 MB per op for 2 MB of values). Packed as
(1, 1, H*W/k, k*c) the same values fill k*c lanes; the row-major order of the values is
unchanged, so the host reads the packed array with the same reshape as the unpacked one.
"""
from __future__ import annotations

import torch

TILE_LANES = 32


def pixels_per_row(hw: int, channels: int) -> int:
    """The largest k <= 32 // channels that divides hw (DA3: W is a multiple of 14, so k >= 7)."""
    return next(k for k in range(TILE_LANES // channels, 0, -1) if hw % k == 0)


def pack(ttnn, x, hw: int, channels: int, k: int):
    """(1, 1, hw, channels) -> (1, 1, hw / k, k * channels); frees x unless a view remains."""
    out = ttnn.reshape(x, (1, 1, hw // k, k * channels), pad_value=0.0)
    ttnn.deallocate(x, force=False)
    return out


def lane_pattern(values, k: int) -> torch.Tensor:
    """(1, 1, 1, k * len(values)): a per-channel row constant repeated for k packed pixels."""
    return torch.tensor(list(values) * k, dtype=torch.float32).reshape(1, 1, 1, -1)
