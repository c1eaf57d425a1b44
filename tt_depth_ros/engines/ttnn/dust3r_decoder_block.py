"""CroCo decoder block on device (torch `models/dust3r/decoder_block.py`, docs/dust3r.md §3.4).

x += attn(norm1 x) (RoPE on q, k); x += cross_attn(norm2 x, norm_y y) (q from x, fused k|v from
y, RoPE on q with x's and on k with y's positions — one table, both views share a grid);
x += mlp(norm3 x).
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.attention import (
    TtAttention,
    cross_attention_params,
    self_attention_params,
)
from tt_depth_ros.engines.ttnn.block import TtMlp, mlp_params
from tt_depth_ros.engines.ttnn.common import TtLayerNorm


class TtDecoderBlock:
    def __init__(self, ctx, sd, prefix: str, heads: int, eps: float):
        self.ctx = ctx

        def ln(name):
            return TtLayerNorm(ctx, sd[f'{prefix}{name}.weight'], sd[f'{prefix}{name}.bias'], eps)
        self.norm1, self.norm2, self.norm3, self.norm_y = ln('norm1'), ln('norm2'), ln('norm3'), \
            ln('norm_y')
        self.attn = TtAttention(ctx, self_attention_params(sd, prefix + 'attn.', heads))
        self.cross_attn = TtAttention(ctx, cross_attention_params(sd, prefix + 'cross_attn.',
                                                                  heads))
        self.mlp = TtMlp(ctx, mlp_params(sd, prefix + 'mlp.'))

    def __call__(self, x, y, shape_state, rope):
        ttnn = self.ctx.ttnn
        h = self.norm1(x)
        a = self.attn(h, shape_state, rope)
        ttnn.deallocate(h)
        x1 = ttnn.add(x, a)
        ttnn.deallocate(a)
        h = self.norm2(x1)
        yn = self.norm_y(y)
        c = self.cross_attn(h, shape_state, rope, y=yn)
        ttnn.deallocate(h)
        ttnn.deallocate(yn)
        x2 = ttnn.add(x1, c)
        ttnn.deallocate(x1)
        ttnn.deallocate(c)
        h = self.norm3(x2)
        m = self.mlp(h)
        ttnn.deallocate(h)
        out = ttnn.add(x2, m)
        ttnn.deallocate(x2)
        ttnn.deallocate(m)
        return out

    def release(self) -> None:
        for m in (self.norm1, self.norm2, self.norm3, self.norm_y, self.attn, self.cross_attn,
                  self.mlp):
            m.release()
