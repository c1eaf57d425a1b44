"""Per-shape attention constants: the additive key mask over padded tokens and the SDPA config."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from tt_depth_ros.engines.ttnn.common import upload

MASK_VALUE = -1e9   # added to scores of padded keys; exp underflows to exactly 0


@dataclass
class AttentionState:
    attn_mask: Any
    sdpa_config: Any
    rows: int = 0          # token rows of the activations (padded to a tile multiple)


def attention_state(ctx, sc) -> AttentionState:
    ttnn = ctx.ttnn
    mask = None
    if sc.masked:
        m = torch.zeros(1, 1, sc.seq, sc.seq)
        m[..., sc.tokens:] = MASK_VALUE
        mask = upload(ctx, m)
    grid = ttnn.CoreCoord(sc.core_grid[0], sc.core_grid[1])
    cfg = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=grid,
                                 q_chunk_size=sc.q_chunk, k_chunk_size=sc.k_chunk)
    return AttentionState(mask, cfg, sc.seq)


def release_attention_state(ctx, st: AttentionState) -> None:
    if st.attn_mask is not None:
        ctx.ttnn.deallocate(st.attn_mask)
