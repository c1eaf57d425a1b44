"""Per-shape device configuration, derived in one commented place (as tt-metal model demos do).

Token rows are padded to a tile multiple (32) so every matmul/SDPA contracts over aligned dims;
padded keys are masked with an additive -1e9 (SDPA masking of a non-aligned logical length is
unverified on hardware, docs/ttnn.md §5). SDPA chunks are the largest of 256/128/64/32 that divide
the padded length (ttnn requires chunk | length); the SDPA grid is the whole compute grid.
"""
from __future__ import annotations

from dataclasses import dataclass

from tt_depth_ros.engines.ttnn.common import pad_to


@dataclass(frozen=True)
class ShapeConfig:
    height: int
    width: int
    grid_h: int            # patch rows (H / patch)
    grid_w: int            # patch cols
    tokens: int            # real tokens (patches + prefix)
    seq: int               # tokens padded to a tile multiple
    q_chunk: int
    k_chunk: int
    core_grid: tuple[int, int]

    @property
    def masked(self) -> bool:
        return self.seq != self.tokens


def shape_config(height: int, width: int, patch: int, prefix_tokens: int,
                 core_grid: tuple[int, int]) -> ShapeConfig:
    """Derive every per-shape setting for an (height, width) input.

    Args:
        height: Network input rows (multiple of `patch`).
        width: Network input columns.
        patch: Patch size (14 DA3, 16 DUSt3R).
        prefix_tokens: Non-patch tokens (DA3: 1 cls; DUSt3R: 0).
        core_grid: Device compute grid (x, y): 12x10 with ETH dispatch, 11x10 otherwise.
    """
    if height % patch or width % patch or height <= 0 or width <= 0:
        raise ValueError(f'input {height}x{width} is not a positive multiple of the patch size '
                         f'{patch}; resize to the network grid first')
    gh, gw = height // patch, width // patch
    tokens = gh * gw + prefix_tokens
    seq = pad_to(tokens)                      # e.g. 721 -> 736 (280x504), 1370 -> 1376 (518^2)
    chunk = next(c for c in (256, 128, 64, 32) if seq % c == 0)
    return ShapeConfig(height, width, gh, gw, tokens, seq, chunk, chunk, core_grid)
