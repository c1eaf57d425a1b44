"""DINOv2 backbone of DA3 on device (torch `models/da3/backbone.py`, docs/da3.md §2.1).

Normalisation is folded into the patch-embed conv: W' = W / (255 std_c), b' = b - sum W mean_c /
std_c, so the device takes the uint8 image (as bf16, exact for 0..255). Token order on device is
[patches (row-major) | cls | zero padding] — attention is order-free and the pos-embed moves with
its token — so each tap's first h0*w0 rows are directly the head's flattened NHWC map.
Under Precision.mask_free_sdpa the zero rows become the stream's tile padding (a slice to the
real token count, config.shape_config); under block_sharded the blocks run on block shards of
the stream, which each tap copies back to interleaved memory before the final norm.
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import TtLayerNorm, upload
from tt_depth_ros.engines.ttnn.layers.block import TtBlock, shard_stream
from tt_depth_ros.engines.ttnn.layers.conv import TtConv2d
from tt_depth_ros.models.layers.pos_embed import resample_pos_embed

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
P = 'backbone.pretrained.'


def fold_normalisation(weight: torch.Tensor, bias: torch.Tensor, mean, std):
    """Patch conv on (x/255 - mean)/std  ==  conv' on x (uint8 values)."""
    m = torch.tensor(mean, dtype=torch.float64)
    s = torch.tensor(std, dtype=torch.float64)
    w = weight.to(torch.float64)
    w2 = w / (255.0 * s)[None, :, None, None]
    b2 = bias.to(torch.float64) - (w * (m / s)[None, :, None, None]).sum((1, 2, 3))
    return w2.to(torch.float32), b2.to(torch.float32)


def token_constants(sd, cfg, sc) -> tuple[torch.Tensor, torch.Tensor]:
    """(pos (1,1,h0*w0,D) added to the patches, tail (1,1,seq-h0*w0,D) = [cls + pos_cls; 0])."""
    pe = resample_pos_embed(sd[P + 'pos_embed'].to(torch.float32), sc.grid_h, sc.grid_w,
                            num_prefix=1, offset=cfg.interpolate_offset,
                            antialias=cfg.interpolate_antialias)
    d = pe.shape[-1]
    n = sc.grid_h * sc.grid_w
    pos = pe[:, 1:].reshape(1, 1, n, d)
    tail = torch.zeros(1, 1, sc.padded - n, d)
    tail[0, 0, 0] = sd[P + 'cls_token'].reshape(d).to(torch.float32) + pe[0, 0]
    return pos, tail


class TtDA3Backbone:
    def __init__(self, ctx, sd, cfg):
        self.ctx, self.cfg = ctx, cfg
        w, b = fold_normalisation(sd[P + 'patch_embed.proj.weight'],
                                  sd[P + 'patch_embed.proj.bias'], MEAN, STD)
        self.patch = TtConv2d(ctx, w, b, stride=cfg.patch_size, group='patch', out='residual')
        last = max(cfg.out_layers)
        self.blocks = [TtBlock(ctx, sd, f'{P}blocks.{i}.', cfg.num_heads, cfg.block_norm_eps,
                               layer_scale=True, sharded=True) for i in range(last + 1)]
        self.norm = TtLayerNorm(ctx, sd[P + 'norm.weight'], sd[P + 'norm.bias'],
                                cfg.final_norm_eps)
        self.sd = sd

    def shape_constants(self, sc) -> dict:
        pos, tail = token_constants(self.sd, self.cfg, sc)
        dt = self.ctx.precision.act(self.ctx.ttnn, 'residual')
        return {'pos': upload(self.ctx, pos, dt), 'tail': upload(self.ctx, tail, dt)}

    def __call__(self, img, sc, state):
        """Img (1, 1, H*W, 3) bf16 TILE -> 4 taps (1, 1, h0*w0, D) in the residual dtype."""
        ttnn = self.ctx.ttnn
        n = sc.grid_h * sc.grid_w
        patches = self.patch(img, (sc.height, sc.width))           # (1, 1, n, D)
        p2 = ttnn.add(patches, state['pos'])
        ttnn.deallocate(patches)
        d = self.cfg.embed_dim
        tok = ttnn.concat([p2, state['tail']], dim=2)             # (1, 1, padded, D)
        ttnn.deallocate(p2)
        if sc.seq != sc.padded:     # logical: the real token count, its tile padding zeros
            t1 = ttnn.slice(tok, [0, 0, 0, 0], [1, 1, sc.seq, d], [1, 1, 1, 1], pad_value=0.0)
            ttnn.deallocate(tok)
            tok = t1
        x = ttnn.reshape(tok, (1, sc.seq, d))
        ttnn.deallocate(tok, force=False)      # x may be a view on tok's buffer (common.py)
        shard = self.blocks[0].shard(state['attn'])
        if shard is not None:
            xs = shard_stream(self.ctx, x, shard)
            ttnn.deallocate(x)
            x = xs
        taps = []
        for i, blk in enumerate(self.blocks):
            nx = blk(x, state['attn'])
            ttnn.deallocate(x)
            x = nx
            if i in self.cfg.out_layers:
                xi = x if shard is None else ttnn.to_memory_config(
                    x, self.ctx.precision.residual_memory(ttnn))
                t = self.norm(xi)
                if shard is not None:
                    ttnn.deallocate(xi)
                t2 = ttnn.slice(t, [0, 0, 0], [1, n, self.cfg.embed_dim], [1, 1, 1],
                                pad_value=0.0)
                ttnn.deallocate(t, force=False)
                taps.append(ttnn.reshape(t2, (1, 1, n, self.cfg.embed_dim), pad_value=0.0))
                ttnn.deallocate(t2, force=False)
        ttnn.deallocate(x)
        return taps

    def release(self) -> None:
        for m in [self.patch, self.norm] + self.blocks:
            m.release()
