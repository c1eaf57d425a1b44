"""DUSt3R on device: encoder, lockstep decoders, two DPT heads (torch `models/dust3r/model.py`).

Normalisation (x/255 - 0.5)/0.5 is folded into the patch-embed conv. Both views go through the
encoder as one batch of 2 (the same weights; torch runs it so too): every linear multiplies
2 x seq rows at once, which fills the core grid better than two calls of seq rows (768 tokens =
24 tile rows on 10 core rows: 3 per core for 2.4 of work; 48 rows: 5 for 4.8). The decoders have
a weight set per view and stay per view. Output per pair: one (1, 1, 2*H*W, 8) float32 tensor,
view 1 rows then view 2 rows, each [pts xyz, conf, raw 0..3] — one readback.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.engines.ttnn.common import (
    TtLayerNorm,
    TtLinear,
    image_to_tile,
    linear_params,
    pad_to,
    upload,
)
from tt_depth_ros.engines.ttnn.da3.backbone import fold_normalisation
from tt_depth_ros.engines.ttnn.dust3r.decoder_block import TtDecoderBlock
from tt_depth_ros.engines.ttnn.dust3r.dpt_head import TtDust3rDPT, unpack_rows
from tt_depth_ros.engines.ttnn.layers.block import TtBlock, shard_stream
from tt_depth_ros.engines.ttnn.layers.conv import TtConv2d
from tt_depth_ros.engines.ttnn.layers.rope2d import (
    TtRoPE,
    llama_tables,
    pair_rotation_matrix,
    rope_tables,
    rotation_matrix,
)
from tt_depth_ros.engines.ttnn.shape_state import attention_state, release_attention_state

MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)


class TtDust3r:
    num_views = 2
    patch = 16
    prefix_tokens = 0

    def __init__(self, ctx, sd, cfg):
        self.ctx, self.cfg = ctx, cfg
        eps = cfg.norm_eps
        w, b = fold_normalisation(sd['patch_embed.proj.weight'], sd['patch_embed.proj.bias'],
                                  MEAN, STD)
        self.patch_embed = TtConv2d(ctx, w, b, stride=cfg.patch_size)
        self.enc = [TtBlock(ctx, sd, f'enc_blocks.{i}.', cfg.enc_num_heads, eps,
                            layer_scale=False, rope=True, sharded=True)
                    for i in range(cfg.enc_depth)]
        self.enc_norm = TtLayerNorm(ctx, sd['enc_norm.weight'], sd['enc_norm.bias'], eps)
        self.dec_embed = TtLinear(ctx, *linear_params(sd['decoder_embed.weight'],
                                                      sd['decoder_embed.bias']))
        self.dec1 = [TtDecoderBlock(ctx, sd, f'dec_blocks.{i}.', cfg.dec_num_heads, eps)
                     for i in range(cfg.dec_depth)]
        self.dec2 = [TtDecoderBlock(ctx, sd, f'dec_blocks2.{i}.', cfg.dec_num_heads, eps)
                     for i in range(cfg.dec_depth)]
        self.dec_norm = TtLayerNorm(ctx, sd['dec_norm.weight'], sd['dec_norm.bias'], eps)
        self.head1 = TtDust3rDPT(ctx, sd, 'downstream_head1.dpt.', cfg)
        self.head2 = TtDust3rDPT(ctx, sd, 'downstream_head2.dpt.', cfg)

    @staticmethod
    def programs_estimate(cfg, precision) -> int:
        """Upper bound on device programs per traced forward (trace region sizing).

        The real ttnn 0.81.1 counts the programs in the dry run (devtools/ttnn/dryrun; the
        driver's --json records them per size): just under 20 per encoder layer (both views in
        one batch), about 80 per decoder layer (two branches), and several hundred for the two
        DPT heads (several programs per conv; a masked grid adds slices). Bound: 20 per encoder
        + 100 per decoder layer + 600 (tiny 1,840, Large 2,280). The levers take programs out:
        `fused_residual` the add of every residual step (2 per encoder layer; 3 per decoder
        branch: self-attention, cross-attention, MLP), `rope_kernel` 3 of the 4 RoPE ops for each
        rotated q and k (2 per encoder layer; self and cross q and k, 4 per decoder branch).
        test_ttnn_dryrun checks the bound against every count.
        """
        enc, dec = 20, 100
        if precision.fused_residual:
            enc, dec = enc - 2, dec - 2 * 3
        if precision.rope_kernel:
            enc, dec = enc - 3 * 2, dec - 2 * 3 * 4
        return enc * cfg.enc_depth + dec * cfg.dec_depth + 600

    def _rope(self, sc, dim: int, heads: int):
        dh = dim // heads
        dhp = pad_to(dh)
        cos, sin = rope_tables(sc.grid_h, sc.grid_w, sc.seq, dh, dhp, self.cfg.rope_base)
        if self.ctx.precision.rope_kernel:      # the q/k weights are permuted alike
            cos, sin = llama_tables(cos, sin, dh)
            return TtRoPE(self.ctx, upload(self.ctx, pair_rotation_matrix()),
                          upload(self.ctx, cos), upload(self.ctx, sin), kernel=True)
        return TtRoPE(self.ctx, upload(self.ctx, rotation_matrix(dh, dhp)),
                      upload(self.ctx, cos), upload(self.ctx, sin))

    def build_shape(self, sc) -> dict:
        cfg = self.cfg
        st = {'attn': attention_state(self.ctx, sc),
              'attn_enc': attention_state(self.ctx, sc, batch=self.num_views),
              'rope_enc': self._rope(sc, cfg.enc_embed_dim, cfg.enc_num_heads),
              'rope_dec': self._rope(sc, cfg.dec_embed_dim, cfg.dec_num_heads)}
        st.update(self.head1.shape_constants(sc))      # shared by both heads (same config)
        n = sc.grid_h * sc.grid_w
        if sc.padded != n:   # zero rows that pad the patch tokens to a tile multiple
            import torch
            st['pad_rows_enc'] = upload(self.ctx, torch.zeros(1, 1, sc.padded - n,
                                                              cfg.enc_embed_dim))
        return st

    def _tokens(self, x, sc, dim):
        """(1, seq, dim) -> (1, 1, N, dim) real tokens; a view on x's buffer when N == seq.

        No full-range slice: ttnn 0.81.1 returns x itself for it, and freeing that result frees
        the caller's x. The caller releases x with force=False while the view lives.
        """
        ttnn = self.ctx.ttnn
        n = sc.grid_h * sc.grid_w
        if n == sc.seq:
            return ttnn.reshape(x, (1, 1, n, dim), pad_value=0.0)
        s = ttnn.slice(x, [0, 0, 0], [1, n, dim], [1, 1, 1], pad_value=0.0)
        out = ttnn.reshape(s, (1, 1, n, dim), pad_value=0.0)
        ttnn.deallocate(s, force=False)   # out is a view on s's buffer (common.py)
        return out

    def _embed(self, inp, sc, st):
        """One view's image -> (1, 1, seq, d) patch tokens, zero rows padding them.

        Under Precision.mask_free_sdpa (sc.logical) the zero rows are the tile padding of an
        n-row stream: SDPA masks keys past n but multiplies V's padding rows by 0, so they must
        be finite, which the conv's own padding rows need not be.
        """
        ttnn = self.ctx.ttnn
        n = sc.grid_h * sc.grid_w
        img = image_to_tile(self.ctx, inp)
        p = self.patch_embed(img, (sc.height, sc.width))                # (1, 1, n, d)
        ttnn.deallocate(img)
        if sc.padded != n:
            q = ttnn.concat([p, st['pad_rows_enc']], dim=2)
            ttnn.deallocate(p)
            p = q
            if sc.logical:
                q = ttnn.slice(p, [0, 0, 0, 0], [1, 1, n, self.cfg.enc_embed_dim],
                               [1, 1, 1, 1], pad_value=0.0)
                ttnn.deallocate(p)
                p = q
        return p

    def _encode(self, inputs, sc, st):
        """Both views through the encoder as one batch -> (f1, f2), each (1, seq, d)."""
        ttnn = self.ctx.ttnn
        d, seq = self.cfg.enc_embed_dim, sc.seq
        p = [self._embed(inp, sc, st) for inp in inputs]
        both = ttnn.concat(p, dim=0)                                    # (2, 1, seq, d)
        for t in p:
            ttnn.deallocate(t)
        x = ttnn.reshape(both, (self.num_views, seq, d))
        ttnn.deallocate(both, force=False)
        shard = self.enc[0].shard(st['attn_enc'])
        if shard is not None:           # Precision.block_sharded: the blocks run on shards
            xs = shard_stream(self.ctx, x, shard)
            ttnn.deallocate(x)
            x = xs
        for blk in self.enc:
            nx = blk(x, st['attn_enc'], st['rope_enc'])
            ttnn.deallocate(x)
            x = nx
        if shard is not None:
            xi = ttnn.to_memory_config(x, self.ctx.precision.residual_memory(ttnn))
            ttnn.deallocate(x)
            x = xi
        f = self.enc_norm(x)
        ttnn.deallocate(x)
        views = [ttnn.slice(f, [i, 0, 0], [i + 1, seq, d], [1, 1, 1], pad_value=0.0)
                 for i in range(self.num_views)]      # (a logical stream's padding: zeros)
        ttnn.deallocate(f)
        return views

    def forward(self, sc, st, inputs):
        ttnn = self.ctx.ttnn
        f1, f2 = self._encode(inputs, sc, st)
        taps1, taps2 = [self._tokens(f1, sc, self.cfg.enc_embed_dim)], \
            [self._tokens(f2, sc, self.cfg.enc_embed_dim)]
        x1, x2 = self.dec_embed(f1), self.dec_embed(f2)
        ttnn.deallocate(f1, force=False)          # the taps may share f1's / f2's buffers
        ttnn.deallocate(f2, force=False)
        dd = self.cfg.dec_embed_dim
        for i, (b1, b2) in enumerate(zip(self.dec1, self.dec2)):
            tap = i + 1 in self.cfg.hooks and i + 1 != self.cfg.dec_depth
            # a tapped layer's output lives until the heads run: DRAM, even when the preset
            # keeps the residual stream in L1 (left there, it splits L1 under the heads' convs)
            mem = ttnn.DRAM_MEMORY_CONFIG if tap else None
            # both branches read the previous layer's x1 and x2 (docs/dust3r.md §3.4)
            n1 = b1(x1, x2, st['attn'], st['rope_dec'], out_memory=mem)
            n2 = b2(x2, x1, st['attn'], st['rope_dec'], out_memory=mem)
            ttnn.deallocate(x1, force=False)
            ttnn.deallocate(x2, force=False)
            x1, x2 = n1, n2
            if tap:
                taps1.append(self._tokens(x1, sc, dd))
                taps2.append(self._tokens(x2, sc, dd))
        for x, taps in ((x1, taps1), (x2, taps2)):
            xn = self.dec_norm(x)
            ttnn.deallocate(x)
            taps.append(self._tokens(xn, sc, dd))
            ttnn.deallocate(xn, force=False)
        o1 = self.head1(taps1, sc, st)                 # the heads free their taps
        o2 = self.head2(taps2, sc, st)
        out = ttnn.concat([o1, o2], dim=2)
        ttnn.deallocate(o1)
        ttnn.deallocate(o2)
        return out

    def unpack(self, out: np.ndarray, sc) -> dict[str, np.ndarray]:
        act, raw = unpack_rows(out, 2, sc.height, sc.width)
        res = {}
        for i in (0, 1):
            res[f'pts3d_{i + 1}'] = np.ascontiguousarray(act[i, ..., :3], dtype=np.float32)
            res[f'conf_{i + 1}'] = np.ascontiguousarray(act[i, ..., 3], dtype=np.float32)
            res[f'raw_{i + 1}'] = np.ascontiguousarray(raw[i], dtype=np.float32)
        return res

    def release_shape(self, st) -> None:
        ttnn = self.ctx.ttnn
        release_attention_state(self.ctx, st['attn'])
        release_attention_state(self.ctx, st['attn_enc'])
        for k in ('rope_enc', 'rope_dec'):
            r = st[k]
            for t in (r.rmat, r.cos, r.sin):
                ttnn.deallocate(t)
        if 'pad_rows_enc' in st:
            ttnn.deallocate(st['pad_rows_enc'])
        self.head1.release_shape(st)

    def release(self) -> None:
        for m in [self.patch_embed, *self.enc, self.enc_norm, self.dec_embed, *self.dec1,
                  *self.dec2, self.dec_norm, self.head1, self.head2]:
            m.release()
