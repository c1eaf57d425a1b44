"""CroCo decoder block on device (torch `models/dust3r/decoder_block.py`, docs/dust3r.md §3.4).

x += attn(norm1 x) (RoPE on q, k); x += cross_attn(norm2 x, norm_y y) (q from x, fused k|v from
y, RoPE on q with x's and on k with y's positions — one table, both views share a grid);
x += mlp(norm3 x). The self-attention and MLP steps are the encoder block's (block.py, no
LayerScale); this block adds the cross-attention step between them.
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.common import TtLayerNorm
from tt_depth_ros.engines.ttnn.layers.attention import TtAttention, cross_attention_params
from tt_depth_ros.engines.ttnn.layers.block import TtBlock, residual_step


class TtDecoderBlock:
    def __init__(self, ctx, sd, prefix: str, heads: int, eps: float):
        self.ctx = ctx
        self.block = TtBlock(ctx, sd, prefix, heads, eps, layer_scale=False, mlp_norm='norm3',
                             rope=True, mlp_roles=('dec_fc1', 'dec_fc2'))
        self.norm2 = TtLayerNorm(ctx, sd[prefix + 'norm2.weight'], sd[prefix + 'norm2.bias'], eps)
        self.norm_y = TtLayerNorm(ctx, sd[prefix + 'norm_y.weight'], sd[prefix + 'norm_y.bias'],
                                  eps)
        self.cross_attn = TtAttention(ctx, cross_attention_params(
            sd, prefix + 'cross_attn.', heads, rope=ctx.precision.rope_kernel))

    def _cross(self, h, y, shape_state, rope, residual, out_memory):
        yn = self.norm_y(y, memory_config=self.ctx.precision.residual_memory(self.ctx.ttnn))
        c = self.cross_attn(h, shape_state, rope, y=yn, residual=residual,
                            out_memory=out_memory)
        self.ctx.ttnn.deallocate(yn)
        return c

    def __call__(self, x, y, shape_state, rope, out_memory=None):
        """`out_memory`: where the result goes when a head taps it (block.residual_step)."""
        ttnn = self.ctx.ttnn
        x1 = self.block.attention_step(x, shape_state, rope)
        x2 = residual_step(self.ctx, x1, self.norm2,
                           lambda h, res, mem: self._cross(h, y, shape_state, rope, res, mem))
        ttnn.deallocate(x1)
        out = self.block.mlp_step(x2, shape_state, out_memory)
        ttnn.deallocate(x2)
        return out

    def release(self) -> None:
        for m in (self.block, self.norm2, self.norm_y, self.cross_attn):
            m.release()
