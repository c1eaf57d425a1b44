"""Multi-head self/cross attention on device (torch `layers/attention.py`, `cross_attention.py`).

q|k|v come from one fused linear; heads are split with `transpose_key=False` (ttnn's default
returns K transposed, which SDPA does not want) and attention runs in SDPA with `is_causal=False`
(ttnn defaults to causal) and an additive mask over padded tokens (none under
Precision.mask_free_sdpa: SDPA masks the stream's tile padding itself, config.py). Head widths
that are not a multiple of 32 (the tiny test configs: 16) are zero-padded per head in the
weights; the scale stays head_dim**-0.5 of the real width, so results are unchanged.
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import linear_params, pad_to
from tt_depth_ros.engines.ttnn.layers.block_linear import TtBlockLinear
from tt_depth_ros.engines.ttnn.layers.rope2d import permute_rope_columns


def pad_heads_out(w_t: torch.Tensor, b, groups: int, heads: int, dh: int, dhp: int):
    """Spread output columns [g][h][dh] of a fused projection to [g][h][dhp] (zeros between)."""
    if dhp == dh:
        return w_t, b
    k = w_t.shape[0]
    w = torch.zeros(k, groups, heads, dhp)
    w[..., :dh] = w_t.reshape(k, groups, heads, dh)
    bb = None
    if b is not None:
        bb = torch.zeros(1, groups, heads, dhp)
        bb[..., :dh] = b.reshape(1, groups, heads, dh)
        bb = bb.reshape(1, -1)
    return w.reshape(k, -1), bb


def pad_heads_in(w_t: torch.Tensor, heads: int, dh: int, dhp: int) -> torch.Tensor:
    """Spread input rows [h][dh] of the output projection to [h][dhp] (zero rows between)."""
    if dhp == dh:
        return w_t
    n = w_t.shape[1]
    w = torch.zeros(heads, dhp, n)
    w[:, :dh] = w_t.reshape(heads, dh, n)
    return w.reshape(heads * dhp, n)


def self_attention_params(sd, prefix: str, heads: int, gamma=None, rope: bool = False) -> dict:
    """Checkpoint `{prefix}qkv.*`, `{prefix}proj.*` -> padded ttnn weights (LayerScale folded).

    rope: q and k columns in rotary_embedding_llama's lane order (rope2d.permute_rope_columns).
    """
    dim = sd[prefix + 'proj.weight'].shape[0]
    dh = dim // heads
    dhp = pad_to(dh)
    qkv_w, qkv_b = linear_params(sd[prefix + 'qkv.weight'], sd[prefix + 'qkv.bias'])
    if rope:
        qkv_w, qkv_b = permute_rope_columns(qkv_w, qkv_b, (True, True, False), heads, dh)
    qkv_w, qkv_b = pad_heads_out(qkv_w, qkv_b, 3, heads, dh, dhp)
    proj_w, proj_b = linear_params(sd[prefix + 'proj.weight'], sd[prefix + 'proj.bias'], gamma)
    return {'qkv': (qkv_w, qkv_b), 'proj': (pad_heads_in(proj_w, heads, dh, dhp), proj_b),
            'heads': heads, 'dh': dh, 'dhp': dhp}


def cross_attention_params(sd, prefix: str, heads: int, rope: bool = False) -> dict:
    """`{prefix}proj{q,k,v}`, `{prefix}proj` -> q linear, fused k|v linear, output linear.

    rope: q and k columns in rotary_embedding_llama's lane order (rope2d.permute_rope_columns).
    """
    dim = sd[prefix + 'proj.weight'].shape[0]
    dh = dim // heads
    dhp = pad_to(dh)
    q_w, q_b = linear_params(sd[prefix + 'projq.weight'], sd[prefix + 'projq.bias'])
    k_w, k_b = linear_params(sd[prefix + 'projk.weight'], sd[prefix + 'projk.bias'])
    v_w, v_b = linear_params(sd[prefix + 'projv.weight'], sd[prefix + 'projv.bias'])
    kv_w, kv_b = torch.cat([k_w, v_w], 1), torch.cat([k_b, v_b], 1)
    if rope:
        q_w, q_b = permute_rope_columns(q_w, q_b, (True,), heads, dh)
        kv_w, kv_b = permute_rope_columns(kv_w, kv_b, (True, False), heads, dh)
    q_w, q_b = pad_heads_out(q_w, q_b, 1, heads, dh, dhp)
    kv_w, kv_b = pad_heads_out(kv_w, kv_b, 2, heads, dh, dhp)
    proj_w, proj_b = linear_params(sd[prefix + 'proj.weight'], sd[prefix + 'proj.bias'])
    return {'q': (q_w, q_b), 'kv': (kv_w, kv_b),
            'proj': (pad_heads_in(proj_w, heads, dh, dhp), proj_b),
            'heads': heads, 'dh': dh, 'dhp': dhp}


class TtAttention:
    """Self-attention (params from `self_attention_params`) or cross-attention (`cross_...`).

    gate: under Precision.fused_residual the output projection adds the residual itself,
    scaled by this (1, D) gate (the LayerScale gamma, None: ones); the params then carry the
    projection unfolded.
    """

    def __init__(self, ctx, params: dict, gate=None):
        self.ctx = ctx
        self.heads, self.dh = params['heads'], params['dh']
        self.cross = 'kv' in params
        if self.cross:
            self.q = TtBlockLinear(ctx, *params['q'], out='inner', role='qkv')
            self.kv = TtBlockLinear(ctx, *params['kv'], out='inner', role='qkv')
        else:
            self.qkv = TtBlockLinear(ctx, *params['qkv'], out='inner', role='qkv')
        self.proj = TtBlockLinear(ctx, *params['proj'], group='folded', out='residual',
                                  role='proj', adds_residual=True, gate=gate)

    def __call__(self, x, shape_state, rope=None, y=None, residual=None, out_memory=None,
                 shard=None):
        """X (1, S, D) [and y (1, S, D) for cross attention] -> (1, S, D).

        residual: returns residual + attention (fused into the projection); out_memory: where
        the result goes (None: the preset's residual memory); shard: the block sharding of x
        (config.BlockShard) for the q|k|v and output projections.
        """
        ttnn = self.ctx.ttnn
        mem = self.ctx.precision.inner_memory(ttnn)
        if self.cross:
            q_in, kv_in = self.q(x, rows=shape_state.rows), self.kv(y, rows=shape_state.rows)
            q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(
                q_in, kv_in, num_heads=self.heads, transpose_key=False, memory_config=mem)
            ttnn.deallocate(q_in)
            ttnn.deallocate(kv_in)
        else:
            pc = None if shard is None else shard.matmul_config(
                ttnn, *self.qkv.shape, sharded_in=True, fp32_acc=self.qkv.fp32_acc)
            qkv = self.qkv(x, program_config=pc, rows=shape_state.rows)
            q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(
                qkv, num_heads=self.heads, transpose_key=False, memory_config=mem)
            ttnn.deallocate(qkv)
        if rope is not None:
            q, k = rope(q), rope(k)
        o = ttnn.transformer.scaled_dot_product_attention(
            q, k, v, attn_mask=shape_state.attn_mask, is_causal=False, scale=self.dh ** -0.5,
            program_config=shape_state.sdpa_config(self.heads), memory_config=mem,
            compute_kernel_config=self.ctx.matmul_config('sdpa'))
        for t in (q, k, v):
            ttnn.deallocate(t)
        o2 = ttnn.transformer.concatenate_heads(o, memory_config=mem)
        ttnn.deallocate(o)
        pc = grid = None
        if shard is not None:
            pc = shard.matmul_config(ttnn, *self.proj.shape, sharded_in=False,
                                     fp32_acc=self.proj.fp32_acc)
            grid = shard.grid
            out_memory = out_memory or shard.memory_config(ttnn)
        out = self.proj(o2, program_config=pc, rows=shape_state.rows, memory_config=out_memory,
                        residual=residual, grid=grid)
        ttnn.deallocate(o2)
        return out

    def release(self) -> None:
        for lin in ([self.q, self.kv] if self.cross else [self.qkv]) + [self.proj]:
            lin.release()
