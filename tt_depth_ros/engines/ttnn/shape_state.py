"""Per-shape attention constants: the additive key mask over padded tokens and the SDPA config."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from tt_depth_ros.engines.ttnn.common import upload
from tt_depth_ros.engines.ttnn.config import block_shard

MASK_VALUE = -1e9   # added to scores of padded keys; exp underflows to exactly 0


@dataclass
class AttentionState:
    attn_mask: Any
    sc: Any                # the shape's ShapeConfig: SDPA chunks per head count
    ttnn: Any
    batch: int = 1         # images per attention call (DUSt3R's encoder: both views)
    _configs: dict = field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Token rows of the activations as stored (tile-padded per image), the batch together."""
        return self.batch * self.sc.padded

    def block_shard(self, width: int):
        """The encoder stream's block sharding at `width` channels (config.block_shard)."""
        key = ('shard', width)
        if key not in self._configs:
            self._configs[key] = block_shard(self.sc.core_grid, self.rows, width)
        return self._configs[key]

    def sdpa_config(self, heads: int):
        """SDPA program config of an attention with `heads` heads (host object, cached)."""
        if heads not in self._configs:
            grid = self.ttnn.CoreCoord(self.sc.core_grid[0], self.sc.core_grid[1])
            self._configs[heads] = self.ttnn.SDPAProgramConfig(
                compute_with_storage_grid_size=grid,
                q_chunk_size=self.sc.q_chunk(heads, self.batch), k_chunk_size=self.sc.k_chunk)
        return self._configs[heads]


def attention_state(ctx, sc, batch: int = 1) -> AttentionState:
    """Mask and SDPA configs of attention over `batch` images of shape `sc` at once."""
    mask = None
    if sc.masked:
        m = torch.zeros(batch, 1, sc.seq, sc.seq)
        m[..., sc.tokens:] = MASK_VALUE
        mask = upload(ctx, m, ctx.precision.act(ctx.ttnn, 'mask'))
    return AttentionState(mask, sc, ctx.ttnn, batch)


def release_attention_state(ctx, st: AttentionState) -> None:
    if st.attn_mask is not None:
        ctx.ttnn.deallocate(st.attn_mask)
