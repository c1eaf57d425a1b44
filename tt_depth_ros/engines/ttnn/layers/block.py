"""Pre-norm transformer block and MLP on device (torch `models/layers/block.py`, `mlp.py`).

x += ls1 * proj(attn(LN1(x))); x += ls2 * fc2(GELU(fc1(LN2(x)))). LayerScale is folded into
proj/fc2 at conversion; GELU (exact erf) is fused into fc1. Under a float32 preset x, the LN
outputs and the proj/fc2 outputs are float32 while q/k/v and the MLP hidden are `inner` dtype.
The residual steps are public so that the CroCo decoder block (dust3r_decoder_block.py) composes
this block with a cross-attention step between them.
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.common import TtLayerNorm, TtLinear, linear_params
from tt_depth_ros.engines.ttnn.layers.attention import TtAttention, self_attention_params


def mlp_params(sd, prefix: str, gamma=None) -> dict:
    """`{prefix}fc1.*`, `{prefix}fc2.*` -> ttnn weights (LayerScale `gamma` folded into fc2)."""
    return {'fc1': linear_params(sd[prefix + 'fc1.weight'], sd[prefix + 'fc1.bias']),
            'fc2': linear_params(sd[prefix + 'fc2.weight'], sd[prefix + 'fc2.bias'], gamma)}


def residual_step(ctx, x, norm, branch, out_memory=None):
    """Return x + branch(norm(x)); frees the intermediates, keeps x.

    norm(x) and the sum live where the preset keeps the residual stream (L1 under 'fast'); a
    sum that outlives the blocks (a head's tap) goes to `out_memory` instead.
    """
    ttnn = ctx.ttnn
    mem = ctx.precision.residual_memory(ttnn)
    h = norm(x, memory_config=mem)
    b = branch(h)
    ttnn.deallocate(h)
    out = ttnn.add(x, b, memory_config=out_memory or mem)
    ttnn.deallocate(b)
    return out


class TtMlp:
    def __init__(self, ctx, params: dict):
        self.ctx = ctx
        self.fc1 = TtLinear(ctx, *params['fc1'], activation='gelu', out='inner', role='fc1')
        self.fc2 = TtLinear(ctx, *params['fc2'], group='folded', out='residual', role='fc2')

    def __call__(self, x, rows: int | None = None):
        h = self.fc1(x, rows=rows)
        out = self.fc2(h, rows=rows)
        self.ctx.ttnn.deallocate(h)
        return out

    def release(self) -> None:
        self.fc1.release()
        self.fc2.release()


class TtBlock:
    """One encoder block.

    Args: sd (checkpoint), prefix ('...blocks.3.'), heads, eps, layer_scale (DINOv2: True),
    mlp_norm (checkpoint name of the LayerNorm before the MLP; CroCo decoder: 'norm3').
    """

    def __init__(self, ctx, sd, prefix: str, heads: int, eps: float, layer_scale: bool,
                 mlp_norm: str = 'norm2'):
        self.ctx = ctx
        g1 = sd[prefix + 'ls1.gamma'] if layer_scale else None
        g2 = sd[prefix + 'ls2.gamma'] if layer_scale else None
        self.norm1 = TtLayerNorm(ctx, sd[prefix + 'norm1.weight'], sd[prefix + 'norm1.bias'], eps)
        self.attn = TtAttention(ctx, self_attention_params(sd, prefix + 'attn.', heads, g1))
        self.mlp_norm = TtLayerNorm(ctx, sd[f'{prefix}{mlp_norm}.weight'],
                                    sd[f'{prefix}{mlp_norm}.bias'], eps)
        self.mlp = TtMlp(ctx, mlp_params(sd, prefix + 'mlp.', g2))

    def attention_step(self, x, shape_state, rope=None):
        """Return x + attn(norm1(x)); keeps x."""
        return residual_step(self.ctx, x, self.norm1, lambda h: self.attn(h, shape_state, rope))

    def mlp_step(self, x, shape_state=None, out_memory=None):
        """Return x + mlp(mlp_norm(x)) (into `out_memory`: residual_step); keeps x."""
        rows = None if shape_state is None else shape_state.rows
        return residual_step(self.ctx, x, self.mlp_norm, lambda h: self.mlp(h, rows),
                             out_memory)

    def __call__(self, x, shape_state, rope=None):
        x1 = self.attention_step(x, shape_state, rope)
        x2 = self.mlp_step(x1, shape_state)
        self.ctx.ttnn.deallocate(x1)
        return x2

    def release(self) -> None:
        for m in (self.norm1, self.attn, self.mlp_norm, self.mlp):
            m.release()
