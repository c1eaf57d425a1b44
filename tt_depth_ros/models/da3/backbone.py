"""DINOv2 ViT backbone of every DA3 model (upstream `model/dinov2/`).

Specs: docs/da3.md §2.1 and test/data/da3_anyview/README.md "Backbone".

Metric/mono configs: plain ViT; each tap is the final LayerNorm of a block output, cls dropped.
Any-view configs add, per block i (views S are the batch axis of one scene):

* i == alt_start - 1, S >= 3: reference-view selection from token 0 of each view (saddle_balanced)
  and a reorder of the views to [ref, others in order]; outputs are put back in input order.
* i == alt_start: token 0 of each view becomes `camera_token[0, 0]` (reference) or `[0, 1]`.
* global blocks (i >= alt_start, odd) attend over all views together; local blocks per view.
* QK-norm from qknorm_start; 2-D RoPE (base 100) from rope_start: local blocks use (row+1, col+1)
  per patch, global blocks (1, 1) for every patch; token 0 is at (0, 0).
* taps: cat(tokens of the latest local block, LayerNorm(block tokens)) (2C, only the second half
  normed), token 0 dropped; the raw 2C token 0 of the last tap is the camera token.

Module names equal the checkpoint's `backbone.pretrained.*` keys. `set_fused(True)` switches every
block to its folded inference arithmetic (layers/block.py) and caches resampled pos-embeds and the
RoPE positions (so RoPE2D's cos/sin tables are built once per size, not per forward).
`set_export(True)` (the export-friendly forward, engines/export/): every tensor that depends only
on the input size - the resampled pos-embed, the RoPE positions and their cos/sin tables - is
computed once per size and reused, so a traced graph (torch.onnx) holds it as a constant instead
of bicubic-resize, arange and trig ops, and every attention splits its fused qkv into three
linears with 4-D heads (layers/attention.py); the arithmetic is the same, so the outputs are
identical.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.layers.block import Block
from tt_depth_ros.models.layers.patch_embed import PatchEmbed
from tt_depth_ros.models.layers.pos_embed import resample_pos_embed
from tt_depth_ros.models.layers.rope2d import RoPE2D, grid_positions


def select_reference_view(token0: torch.Tensor) -> int:
    """Upstream's "saddle_balanced" reference view from token 0 of each view, (S, C).

    Scores per view: mean cosine similarity to the other views, token norm and the (unbiased)
    variance of the unit token; each min-max normalised over the views; the view closest to 0.5 in
    all three (sum of absolute distances) wins, first index on ties.
    """
    t = token0.float()
    s = t.shape[0]
    f = t / t.norm(dim=-1, keepdim=True)
    sim = ((f @ f.t()).sum(-1) - 1.0) / (s - 1)
    scores = [sim, t.norm(dim=-1), f.var(dim=-1)]

    def unit(m: torch.Tensor) -> torch.Tensor:
        return (m - m.min()) / (m.max() - m.min() + 1e-8)

    dist = sum((unit(m) - 0.5).abs() for m in scores)
    return int(torch.argmin(dist))


class DinoViT(nn.Module):
    """DINOv2 vision transformer returning the head taps, one per `out_layers`.

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.embed_dim
        grid = cfg.img_size // cfg.patch_size
        self.patch_embed = PatchEmbed(cfg.patch_size, 3, d)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        if cfg.anyview:
            self.camera_token = nn.Parameter(torch.zeros(1, 2, d))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + grid * grid, d))
        self.blocks = nn.ModuleList(
            Block(d, cfg.num_heads, cfg.mlp_ratio, norm_eps=cfg.block_norm_eps, layer_scale=True,
                  qk_norm=0 <= cfg.qknorm_start <= i, ffn=cfg.ffn, ffn_hidden=cfg.ffn_hidden)
            for i in range(cfg.depth))
        self.norm = nn.LayerNorm(d, eps=cfg.final_norm_eps)
        self.rope = RoPE2D(base=cfg.rope_base) if cfg.rope_start >= 0 else None
        self._pos_cache: Optional[dict] = None
        self._consts: Optional[dict] = None   # export mode: size-only tensors (module docstring)

    def set_fused(self, on: bool, precision: str = 'float32') -> 'DinoViT':
        """Folded blocks at a matmul precision (layers/block.py) and a pos-embed cache, on/off."""
        for blk in self.blocks:
            blk.set_fused(on, precision)
        self._pos_cache = {} if on else None
        return self

    @torch.no_grad()
    def set_export(self, on: bool) -> 'DinoViT':
        """Export-friendly forward (module docstring) on or off; call after loading weights."""
        self._consts = {} if on else None
        for blk in self.blocks:
            blk.set_export(on)   # q/k/v as three linears, 4-D heads (layers/attention.py)
        if self.rope is not None:
            self.rope.clear()
        return self

    def _pos_embed(self, h0: int, w0: int) -> torch.Tensor:
        key = (h0, w0, self.pos_embed.dtype, self.pos_embed.device)
        for cache in (self._consts, self._pos_cache):
            if cache is not None and key in cache:
                return cache[key]
        pe = resample_pos_embed(self.pos_embed, h0, w0, num_prefix=1,
                                offset=self.cfg.interpolate_offset,
                                antialias=self.cfg.interpolate_antialias)
        for cache in (self._consts, self._pos_cache):
            if cache is not None:
                cache[key] = pe.detach()
        return pe

    def _positions(self, s: int, h0: int, w0: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE positions: local (S, N, 2) = (row+1, col+1); global (1, S*N, 2) = (1, 1)."""
        key = ('rope_pos', s, h0, w0, str(device))
        for cache in (self._consts, self._pos_cache):
            if cache is not None and key in cache:
                return cache[key]   # the same tensors: RoPE2D reuses their tables
        zero = torch.zeros(1, 2, dtype=torch.long, device=device)
        local = torch.cat([zero, grid_positions(h0, w0, device=device)[0] + 1])   # (N, 2)
        glob = torch.cat([zero, torch.ones(h0 * w0, 2, dtype=torch.long, device=device)])
        pos = local[None].expand(s, -1, -1), glob.repeat(s, 1)[None]
        for cache in (self._consts, self._pos_cache):
            if cache is not None:
                cache[key] = pos
        return pos

    def forward(self, x: torch.Tensor) -> tuple[list[torch.Tensor], Optional[torch.Tensor], int]:
        """Map normalised images (S, 3, H, W) to taps.

        Returns:
            (taps, camera_token, ref_view): taps (S, h0*w0, C or 2C) in input view order, (y, x)
            token order; camera_token (S, 2C) raw token 0 of the last tap (any-view) or None;
            ref_view the selected reference view (0 unless S >= 3, any-view).
        """
        cfg = self.cfg
        s, _, h, w = (int(v) for v in x.shape)   # python ints, also under a tracer (export)
        h0, w0 = h // cfg.patch_size, w // cfg.patch_size
        tokens = self.patch_embed(x)                              # (S, h0*w0, C)
        cls = self.cls_token.expand(s, -1, -1).to(tokens.dtype)
        tokens = torch.cat([cls, tokens], dim=1) + self._pos_embed(h0, w0)   # (S, N, C)
        n, c = tokens.shape[1:]
        local_pos = glob_pos = None
        if self.rope is not None:
            local_pos, glob_pos = self._positions(s, h0, w0, x.device)
        order = None                     # view permutation applied at alt_start - 1
        ref = 0
        taps, cam = [], None
        local_x = tokens
        last = max(cfg.out_layers)
        for i, blk in enumerate(self.blocks[:last + 1]):
            if cfg.anyview and i == cfg.alt_start - 1 and s >= 3:
                ref = select_reference_view(tokens[:, 0])
                order = [ref] + [j for j in range(s) if j != ref]
                tokens = tokens[order]
                taps = [t[order] for t in taps]   # earlier taps join the new order
            if cfg.anyview and i == cfg.alt_start:
                # one view: no empty (0-row) expand in the graph (an exported file's shapes)
                cam_tok = self.camera_token[:, :1] if s == 1 else torch.cat(
                    [self.camera_token[:, :1], self.camera_token[:, 1:].expand(-1, s - 1, -1)],
                    dim=1)
                tokens = torch.cat([cam_tok[0, :, None].to(tokens.dtype), tokens[:, 1:]], dim=1)
            use_rope = self.rope is not None and i >= cfg.rope_start
            if cfg.is_global(i):
                out = blk(tokens.reshape(1, s * n, c), rope=self.rope if use_rope else None,
                          pos=glob_pos).view(s, n, c)
            else:
                out = blk(tokens, rope=self.rope if use_rope else None, pos=local_pos)
                local_x = out
            tokens = out
            if i in cfg.out_layers:
                if cfg.cat_token:
                    raw = torch.cat([local_x, out], dim=-1)
                    taps.append(torch.cat([raw[..., :c], self.norm(raw[..., c:])], dim=-1))
                    cam = raw[:, 0]
                else:
                    taps.append(self.norm(out))
        taps = [t[:, 1:] for t in taps]
        if order is not None:
            back = [order.index(j) for j in range(s)]
            taps = [t[back] for t in taps]
            cam = cam[back]
        return taps, cam, ref


class DA3Backbone(nn.Module):
    """Holder matching the checkpoint's `backbone.pretrained.*` prefix.

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.pretrained = DinoViT(cfg)

    def forward(self, x: torch.Tensor) -> tuple[list[torch.Tensor], Optional[torch.Tensor], int]:
        """See `DinoViT.forward`."""
        return self.pretrained(x)
