"""Pre-norm transformer block and MLP on device (torch `models/layers/block.py`, `mlp.py`).

x += ls1 * proj(attn(LN1(x))); x += ls2 * fc2(GELU(fc1(LN2(x)))). LayerScale is folded into
proj/fc2 at conversion; GELU (exact erf) is fused into fc1. Under a float32 preset x, the LN
outputs and the proj/fc2 outputs are float32 while q/k/v and the MLP hidden are `inner` dtype.
The residual steps are public so that the CroCo decoder block (dust3r_decoder_block.py) composes
this block with a cross-attention step between them.

The ports' structural levers (docs/ttnn-levers.md), each a Precision switch:
- fused_residual: proj and fc2 add x themselves (dit_minimal_matmul_addcmul_fused: x +
  (h W^T + b) * gate, the LayerScale gamma as the gate, unfolded), no separate add.
- block_sharded (a block built with `sharded=True`: the DA3 backbone and the DUSt3R encoder):
  x arrives block-sharded in L1 (config.BlockShard, `shard_stream`); the LayerNorms run on the
  shards, q|k|v / proj / fc1 / fc2 take the shard grid's 2D-multicast configs, the MLP hidden
  and both sums stay sharded; q|k|v leave interleaved for the head split and SDPA.
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.common import TtLayerNorm, linear_params
from tt_depth_ros.engines.ttnn.layers.attention import TtAttention, self_attention_params
from tt_depth_ros.engines.ttnn.layers.block_linear import TtBlockLinear


def mlp_params(sd, prefix: str, gamma=None) -> dict:
    """`{prefix}fc1.*`, `{prefix}fc2.*` -> ttnn weights (LayerScale `gamma` folded into fc2)."""
    return {'fc1': linear_params(sd[prefix + 'fc1.weight'], sd[prefix + 'fc1.bias']),
            'fc2': linear_params(sd[prefix + 'fc2.weight'], sd[prefix + 'fc2.bias'], gamma)}


def residual_step(ctx, x, norm, branch, out_memory=None, shard=None):
    """Return x + branch(norm(x)); frees the intermediates, keeps x.

    norm(x) and the sum live where the preset keeps the residual stream (L1 under 'fast'); a
    sum that outlives the blocks (a head's tap) goes to `out_memory` instead. `branch(h,
    residual, out_memory)` returns residual + its output when given one (fused_residual: the
    last matmul adds it), else its output. shard: x's block sharding (config.BlockShard).
    """
    ttnn = ctx.ttnn
    mem = shard.memory_config(ttnn) if shard is not None else ctx.precision.residual_memory(ttnn)
    h = norm(x, memory_config=mem,
             program_config=None if shard is None else shard.layer_norm_config(ttnn))
    if ctx.precision.fused_residual:
        out = branch(h, x, out_memory or mem)
        ttnn.deallocate(h)
        return out
    b = branch(h, None, None)
    ttnn.deallocate(h)
    out = ttnn.add(x, b, memory_config=out_memory or mem)
    ttnn.deallocate(b)
    return out


def shard_stream(ctx, x, shard):
    """The residual stream x (interleaved) as `shard` block shards (a copy; x stays)."""
    return ctx.ttnn.to_memory_config(x, shard.memory_config(ctx.ttnn))


class TtMlp:
    """fc2(GELU(fc1(x))).

    `gate` as TtAttention's (fused_residual); `roles` fc1's and fc2's matmul roles
    (precision.ROLES; the DUSt3R decoder's are 'dec_fc1', 'dec_fc2').
    """

    def __init__(self, ctx, params: dict, gate=None, roles: tuple[str, str] = ('fc1', 'fc2')):
        self.ctx = ctx
        self.fc1 = TtBlockLinear(ctx, *params['fc1'], activation='gelu', out='inner',
                                 role=roles[0])
        self.fc2 = TtBlockLinear(ctx, *params['fc2'], group='folded', out='residual',
                                 role=roles[1], adds_residual=True, gate=gate)

    def __call__(self, x, rows: int | None = None, residual=None, out_memory=None, shard=None):
        """fc2(GELU(fc1(x))) [+ residual, fused] into out_memory (None: the preset's)."""
        ttnn = self.ctx.ttnn
        pc1 = pc2 = h_mem = grid = None
        if shard is not None:
            k, n = self.fc1.shape
            pc1 = shard.matmul_config(ttnn, k, n, sharded_in=True, gelu=True,
                                      fp32_acc=self.fc1.fp32_acc)
            pc2 = shard.matmul_config(ttnn, *self.fc2.shape, sharded_in=True,
                                      fp32_acc=self.fc2.fp32_acc)
            h_mem, grid = shard.memory_config(ttnn, n), shard.grid
            out_memory = out_memory or shard.memory_config(ttnn)
        h = self.fc1(x, program_config=pc1, rows=rows, memory_config=h_mem)
        out = self.fc2(h, program_config=pc2, rows=rows, memory_config=out_memory,
                       residual=residual, grid=grid)
        ttnn.deallocate(h)
        return out

    def release(self) -> None:
        self.fc1.release()
        self.fc2.release()


class TtBlock:
    """One encoder block.

    Args: sd (checkpoint), prefix ('...blocks.3.'), heads, eps, layer_scale (DINOv2: True),
    mlp_norm (checkpoint name of the LayerNorm before the MLP; CroCo decoder: 'norm3'),
    rope (its attention takes RoPE: q/k columns in rotary_embedding_llama's order under
    Precision.rope_kernel), sharded (an encoder block: its stream block-sharded under
    Precision.block_sharded; the caller shards x, `shard_stream`), mlp_roles (TtMlp's roles).
    """

    def __init__(self, ctx, sd, prefix: str, heads: int, eps: float, layer_scale: bool,
                 mlp_norm: str = 'norm2', rope: bool = False, sharded: bool = False,
                 mlp_roles: tuple[str, str] = ('fc1', 'fc2')):
        self.ctx = ctx
        g1 = sd[prefix + 'ls1.gamma'] if layer_scale else None
        g2 = sd[prefix + 'ls2.gamma'] if layer_scale else None
        fused = ctx.precision.fused_residual     # LayerScale as the fused matmul's gate
        self.sharded = sharded and ctx.precision.block_sharded
        self.norm1 = TtLayerNorm(ctx, sd[prefix + 'norm1.weight'], sd[prefix + 'norm1.bias'], eps)
        self.attn = TtAttention(
            ctx, self_attention_params(sd, prefix + 'attn.', heads, None if fused else g1,
                                       rope=rope and ctx.precision.rope_kernel),
            gate=g1 if fused else None)
        self.mlp_norm = TtLayerNorm(ctx, sd[f'{prefix}{mlp_norm}.weight'],
                                    sd[f'{prefix}{mlp_norm}.bias'], eps)
        self.mlp = TtMlp(ctx, mlp_params(sd, prefix + 'mlp.', None if fused else g2),
                         gate=g2 if fused else None, roles=mlp_roles)
        self.dim = int(sd[prefix + 'norm1.weight'].shape[0])

    def shard(self, shape_state):
        """This block's stream sharding at `shape_state` (None: interleaved)."""
        return shape_state.block_shard(self.dim) if self.sharded else None

    def attention_step(self, x, shape_state, rope=None):
        """Return x + attn(norm1(x)); keeps x."""
        shard = self.shard(shape_state)
        return residual_step(
            self.ctx, x, self.norm1,
            lambda h, res, mem: self.attn(h, shape_state, rope, residual=res, out_memory=mem,
                                          shard=shard),
            shard=shard)

    def mlp_step(self, x, shape_state=None, out_memory=None):
        """Return x + mlp(mlp_norm(x)) (into `out_memory`: residual_step); keeps x."""
        rows = None if shape_state is None else shape_state.rows
        shard = None if shape_state is None else self.shard(shape_state)
        return residual_step(
            self.ctx, x, self.mlp_norm,
            lambda h, res, mem: self.mlp(h, rows, residual=res, out_memory=mem, shard=shard),
            out_memory, shard=shard)

    def __call__(self, x, shape_state, rope=None):
        x1 = self.attention_step(x, shape_state, rope)
        x2 = self.mlp_step(x1, shape_state)
        self.ctx.ttnn.deallocate(x1)
        return x2

    def release(self) -> None:
        for m in (self.norm1, self.attn, self.mlp_norm, self.mlp):
            m.release()
