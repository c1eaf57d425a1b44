"""DUSt3R asymmetric two-view network (docs/dust3r.md §3): ViT encoder, lockstep decoders, DPT.

Mirrors dust3r `model.py` AsymmetricCroCo3DStereo (inference config: PatchEmbedDust3R, no
transposition of portrait inputs) with croco `models/croco.py`. Attribute names equal the
checkpoint keys of naver/DUSt3R_ViTLarge_BaseDecoder_512_dpt (spec §6), so loading is strict and
needs no renaming except the in-memory DPT aliases (checkpoint.py).
"""
from __future__ import annotations

import torch
from torch import nn

from tt_depth_ros.models.dust3r.config import Dust3rConfig
from tt_depth_ros.models.dust3r.decoder_block import DecoderBlock
from tt_depth_ros.models.dust3r.dpt_head import Dust3rDPT
from tt_depth_ros.models.layers.block import Block
from tt_depth_ros.models.layers.patch_embed import PatchEmbed
from tt_depth_ros.models.layers.rope2d import RoPE2D, grid_positions


class Dust3rHead(nn.Module):
    """`downstream_head{1,2}`: holds the DPT adapter under the checkpoint name `dpt`."""

    def __init__(self, cfg: Dust3rConfig):
        super().__init__()
        self.dpt = Dust3rDPT(cfg.dim_tokens, cfg.layer_dims, cfg.feature_dim, cfg.last_dim,
                             cfg.num_channels, cfg.patch_size)

    def forward(self, taps: list[torch.Tensor], hw: tuple[int, int]) -> torch.Tensor:
        return self.dpt(taps, hw)


def postprocess(raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw head output (B, 4, H, W) -> pts3d (B, H, W, 3), conf (B, H, W) (spec §3.7), in fp32.

    pts3d = r / max(|r|, 1e-8) * expm1(|r|) with no clipping (depth_mode bounds are +-inf);
    conf = 1 + exp(c).
    """
    raw = raw.float().permute(0, 2, 3, 1)
    r, c = raw[..., :3], raw[..., 3]
    d = r.norm(dim=-1, keepdim=True)
    pts = r / d.clamp(min=1e-8) * torch.expm1(d)
    return pts, 1.0 + torch.exp(c)


class Dust3r(nn.Module):
    """DUSt3R network; `forward(img1, img2)` on [-1, 1] images (B, 3, H, W), H, W multiples of 16.

    Args:
        cfg: model dimensions (config.LARGE or config.TINY).
    """

    def __init__(self, cfg: Dust3rConfig):
        super().__init__()
        self.cfg = cfg
        self.rope = RoPE2D(base=cfg.rope_base)  # plain callable: no weights, no checkpoint keys
        self._pos_cache: dict[tuple, torch.Tensor] = {}
        self.patch_embed = PatchEmbed(cfg.patch_size, 3, cfg.enc_embed_dim)
        self.enc_blocks = nn.ModuleList([
            Block(cfg.enc_embed_dim, cfg.enc_num_heads, cfg.mlp_ratio, cfg.norm_eps,
                  layer_scale=False) for _ in range(cfg.enc_depth)])
        self.enc_norm = nn.LayerNorm(cfg.enc_embed_dim, eps=cfg.norm_eps)
        self.decoder_embed = nn.Linear(cfg.enc_embed_dim, cfg.dec_embed_dim)
        self.dec_blocks = nn.ModuleList([
            DecoderBlock(cfg.dec_embed_dim, cfg.dec_num_heads, cfg.mlp_ratio, cfg.norm_eps)
            for _ in range(cfg.dec_depth)])
        self.dec_blocks2 = nn.ModuleList([
            DecoderBlock(cfg.dec_embed_dim, cfg.dec_num_heads, cfg.mlp_ratio, cfg.norm_eps)
            for _ in range(cfg.dec_depth)])
        self.dec_norm = nn.LayerNorm(cfg.dec_embed_dim, eps=cfg.norm_eps)
        self.downstream_head1 = Dust3rHead(cfg)
        self.downstream_head2 = Dust3rHead(cfg)
        self.precision = 'float32'

    def set_precision(self, precision: str) -> 'Dust3r':
        """Matmul precision of the encoder and decoder blocks for inference; reversible.

        'float32' exact, 'bfloat16' or 'int8' (layers/linear_kernels.py). Residual streams,
        norms, `decoder_embed` and the DPT heads stay as they are.
        """
        for blk in self.enc_blocks:
            blk.set_fused(precision != 'float32', precision)
        for blk in (*self.dec_blocks, *self.dec_blocks2):
            blk.set_precision(precision)
        self.precision = precision
        return self

    def positions(self, h: int, w: int, device) -> torch.Tensor:
        """Cached (1, h*w, 2) patch positions; one tensor per grid so RoPE tables are reused."""
        key = (h, w, str(device))
        pos = self._pos_cache.get(key)
        if pos is None:
            pos = self._pos_cache[key] = grid_positions(h, w, 1, device)
        return pos

    def encode(self, img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoder on (B, 3, H, W) -> enc_norm tokens (B, N, C_enc) and positions (1, N, 2)."""
        _, _, hh, ww = img.shape
        p = self.cfg.patch_size
        x = self.patch_embed(img)
        pos = self.positions(hh // p, ww // p, img.device)
        for blk in self.enc_blocks:
            x = blk(x, rope=self.rope, pos=pos)
        return self.enc_norm(x), pos

    def decode(self, f1, f2, pos1, pos2) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Lockstep decoders; return each branch's hooked features (spec §3.4-3.5)."""
        feats1, feats2 = [f1], [f2]
        x1, x2 = self.decoder_embed(f1), self.decoder_embed(f2)
        for blk1, blk2 in zip(self.dec_blocks, self.dec_blocks2):
            # both branches read the previous layer's x1 and x2
            x1, x2 = (blk1(x1, x2, self.rope, pos1, pos2), blk2(x2, x1, self.rope, pos2, pos1))
            feats1.append(x1)
            feats2.append(x2)
        feats1[-1], feats2[-1] = self.dec_norm(feats1[-1]), self.dec_norm(feats2[-1])
        hooks = self.cfg.hooks
        return [feats1[i] for i in hooks], [feats2[i] for i in hooks]

    def forward_raw(self, img1: torch.Tensor,
                    img2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw head outputs (B, 4, H1, W1) and (B, 4, H2, W2) before the output activations."""
        for name, img in (('img1', img1), ('img2', img2)):
            if img.ndim != 4 or img.shape[1] != 3:
                raise ValueError(f'Dust3r: {name} must be (B, 3, H, W), got {tuple(img.shape)}')
            if img.shape[2] % self.cfg.patch_size or img.shape[3] % self.cfg.patch_size:
                raise ValueError(f'Dust3r: {name} size {tuple(img.shape[2:])} is not a multiple '
                                 f'of {self.cfg.patch_size}; preprocess with '
                                 'geometry.preprocess.dust3r_preprocess first')
        if img1.shape[0] != img2.shape[0]:
            raise ValueError(f'Dust3r: batch sizes differ ({img1.shape[0]} vs {img2.shape[0]})')
        dtype = self.patch_embed.proj.weight.dtype   # backbone dtype (heads may stay fp32)
        img1, img2 = img1.to(dtype), img2.to(dtype)
        if img1.shape == img2.shape:
            # one encoder pass at 2B (numerically the same as per view, spec §3.8)
            f, pos1 = self.encode(torch.cat((img1, img2), dim=0))
            f1, f2 = f.chunk(2, dim=0)
            pos2 = pos1
        else:
            f1, pos1 = self.encode(img1)
            f2, pos2 = self.encode(img2)
        taps1, taps2 = self.decode(f1, f2, pos1, pos2)
        hdtype = self.downstream_head1.dpt.head[0].weight.dtype
        taps1, taps2 = [t.to(hdtype) for t in taps1], [t.to(hdtype) for t in taps2]
        raw1 = self.downstream_head1(taps1, tuple(img1.shape[2:]))
        raw2 = self.downstream_head2(taps2, tuple(img2.shape[2:]))
        return raw1, raw2

    def forward(self, img1: torch.Tensor, img2: torch.Tensor) -> dict[str, torch.Tensor]:
        """Pointmaps of both views in camera 1's frame, confidences and raw outputs.

        Returns:
            dict with 'pts3d_1', 'pts3d_2' (B, H, W, 3), 'conf_1', 'conf_2' (B, H, W),
            'raw1', 'raw2' (B, 4, H, W).
        """
        raw1, raw2 = self.forward_raw(img1, img2)
        pts1, conf1 = postprocess(raw1)
        pts2, conf2 = postprocess(raw2)
        return {'pts3d_1': pts1, 'conf_1': conf1, 'pts3d_2': pts2, 'conf_2': conf2,
                'raw1': raw1, 'raw2': raw2}
