"""DINOv2 ViT backbone of DA3 (upstream `model/dinov2/vision_transformer.py`), spec/da3.md §2.1.

Plain ViT: patch embed, 1 cls token, learned 37x37 abs pos-embed resampled with upstream's
scale-factor semantics, pre-norm LayerScale blocks; the tapped block outputs go through the final
LayerNorm (eps 1e-5) and lose the cls token. Module names equal the checkpoint's
`backbone.pretrained.*` keys.
"""
from __future__ import annotations

import torch
from torch import nn

from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.layers.block import Block
from tt_depth_ros.models.layers.patch_embed import PatchEmbed
from tt_depth_ros.models.layers.pos_embed import resample_pos_embed


class DinoViT(nn.Module):
    """DINOv2 vision transformer returning normed taps (B, h0*w0, C), one per `out_layers`.

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
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + grid * grid, d))
        self.blocks = nn.ModuleList(
            Block(d, cfg.num_heads, cfg.mlp_ratio, norm_eps=cfg.block_norm_eps, layer_scale=True)
            for _ in range(cfg.depth))
        self.norm = nn.LayerNorm(d, eps=cfg.final_norm_eps)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Map normalised images (B, 3, H, W) to the normed taps, cls dropped, (y, x) order."""
        _, _, h, w = x.shape
        p = self.cfg.patch_size
        h0, w0 = h // p, w // p
        tokens = self.patch_embed(x)                      # (B, h0*w0, C)
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1)           # (B, 1 + h0*w0, C)
        tokens = tokens + resample_pos_embed(self.pos_embed, h0, w0, num_prefix=1,
                                             offset=self.cfg.interpolate_offset,
                                             antialias=self.cfg.interpolate_antialias)
        taps = []
        wanted = set(self.cfg.out_layers)
        for i, blk in enumerate(self.blocks):
            tokens = blk(tokens)
            if i in wanted:
                taps.append(self.norm(tokens)[:, 1:])
            if i >= max(wanted):
                break
        return taps


class DA3Backbone(nn.Module):
    """Holder matching the checkpoint's `backbone.pretrained.*` prefix.

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.pretrained = DinoViT(cfg)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """See `DinoViT.forward`."""
        return self.pretrained(x)
