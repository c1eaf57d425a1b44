"""DUSt3R DPT regression head (docs/dust3r.md §3.6): tokens at four taps -> raw (B, 4, H, W).

Mirrors croco `models/dpt_block.py` DPTOutputAdapter as used by dust3r `heads/dpt_head.py`:
`act_postprocess` brings the taps to strides 4/8/16/32, the shared `DPTFusion` ("scratch")
fuses them with 'double_then_crop' upsampling, and `head` maps to `num_channels` at full res.
"""
from __future__ import annotations

import torch
from torch import nn

from tt_depth_ros.models.layers.dpt_fusion import DPTFusion


class _Upsample2x(nn.Module):
    """Bilinear x2 with align_corners=True (spec §3.6: all five upsamplings); holds no weights."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.interpolate(x, scale_factor=2, mode='bilinear', align_corners=True)


class Dust3rDPT(nn.Module):
    """The `downstream_head{1,2}.dpt` module.

    Args:
        dim_tokens: widths of the four tapped token maps.
        layer_dims: act_postprocess output widths (strides 4, 8, 16, 32).
        feature_dim: fusion width.
        last_dim: head hidden width.
        num_channels: raw outputs per pixel.
        patch_size: token stride in pixels (16).
    """

    def __init__(self, dim_tokens, layer_dims, feature_dim: int, last_dim: int,
                 num_channels: int = 4, patch_size: int = 16):
        super().__init__()
        d0, d1, d2, d3 = layer_dims
        t0, t1, t2, t3 = dim_tokens
        self.patch_size = patch_size
        self.act_postprocess = nn.ModuleList([
            nn.Sequential(nn.Conv2d(t0, d0, 1), nn.ConvTranspose2d(d0, d0, 4, stride=4)),
            nn.Sequential(nn.Conv2d(t1, d1, 1), nn.ConvTranspose2d(d1, d1, 2, stride=2)),
            nn.Sequential(nn.Conv2d(t2, d2, 1)),
            nn.Sequential(nn.Conv2d(t3, d3, 1), nn.Conv2d(d3, d3, 3, stride=2, padding=1)),
        ])
        # DUSt3R checkpoints carry refinenet4.resConfUnit1 (unused at runtime): keep the keys.
        self.scratch = DPTFusion(list(layer_dims), feature_dim, refinenet4_skip_unit=True,
                                 upsample='double_then_crop')
        self.head = nn.Sequential(
            nn.Conv2d(feature_dim, feature_dim // 2, 3, padding=1),
            _Upsample2x(),
            nn.Conv2d(feature_dim // 2, last_dim, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(last_dim, num_channels, 1),
        )

    def forward(self, taps: list[torch.Tensor], hw: tuple[int, int]) -> torch.Tensor:
        """Map four token maps (B, N, C_i) of an (H, W) image to raw (B, num_channels, H, W)."""
        h, w = hw[0] // self.patch_size, hw[1] // self.patch_size
        maps = []
        for tokens, post in zip(taps, self.act_postprocess):
            b, n, c = tokens.shape
            # (B, h*w, C) -> (B, C, h, w)
            maps.append(post(tokens.transpose(1, 2).reshape(b, c, h, w)))
        return self.head(self.scratch(*maps))
