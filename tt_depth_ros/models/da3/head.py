"""DA3 DPT head with depth and sky outputs (upstream `model/dpt.py`), spec/da3.md §2.2.

Tokens -> per-level 1x1 projection -> resize (ConvT x4, ConvT x2, identity, conv s2) -> the shared
DPT fusion (`scratch`, 'to_skip_size' upsampling, no RCU1 in refinenet4) -> output_conv1 ->
bilinear (align_corners=True) to the input size -> depth = exp(output_conv2), sky =
relu(sky_output_conv2). Module names equal the checkpoint's `head.*` keys.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.layers.dpt_fusion import DPTFusion


def _out_conv2(cin: int, hidden: int) -> nn.Sequential:
    # keys .0 (3x3) and .2 (1x1); index 1 is the ReLU
    return nn.Sequential(nn.Conv2d(cin, hidden, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(hidden, 1, 1))


class DA3Scratch(DPTFusion):
    """The shared DPT fusion plus DA3's output convolutions (all under `head.scratch.*`).

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__(cfg.out_channels, cfg.features, refinenet4_skip_unit=False,
                         upsample='to_skip_size')
        half = cfg.output_conv1_out
        self.output_conv1 = nn.Conv2d(cfg.features, half, 3, padding=1)
        self.output_conv2 = _out_conv2(half, cfg.head_features_2)
        self.sky_output_conv2 = _out_conv2(half, cfg.head_features_2)


class DA3Head(nn.Module):
    """DPT head: four token maps -> raw depth, sky and the sky logit at input resolution.

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        oc = cfg.out_channels
        self.projects = nn.ModuleList(nn.Conv2d(cfg.embed_dim, c, 1) for c in oc)
        self.resize_layers = nn.ModuleList([
            nn.ConvTranspose2d(oc[0], oc[0], kernel_size=4, stride=4),
            nn.ConvTranspose2d(oc[1], oc[1], kernel_size=2, stride=2),
            nn.Identity(),
            nn.Conv2d(oc[3], oc[3], kernel_size=3, stride=2, padding=1),
        ])
        self.scratch = DA3Scratch(cfg)

    def forward(self, feats: list[torch.Tensor], h: int, w: int,
                patch_size: int = 14) -> dict[str, torch.Tensor]:
        """Decode taps (B, h0*w0, C) for an (h, w) input into (B, h, w) maps.

        Returns:
            {'depth': exp(logit), 'sky': relu(sky logit), 'sky_logit': sky logit}.
        """
        h0, w0 = h // patch_size, w // patch_size
        levels = []
        for i, f in enumerate(feats):
            b, _, c = f.shape
            # (B, h0*w0, C) -> (B, C, h0, w0)
            x = f.transpose(1, 2).reshape(b, c, h0, w0)
            levels.append(self.resize_layers[i](self.projects[i](x)))
        s = self.scratch
        path1 = s(*levels)
        out = s.output_conv1(path1)
        out = F.interpolate(out, size=(h, w), mode='bilinear', align_corners=True)
        depth_logit = s.output_conv2(out)[:, 0]
        sky_logit = s.sky_output_conv2(out)[:, 0]
        return {'depth': torch.exp(depth_logit), 'sky': torch.relu(sky_logit),
                'sky_logit': sky_logit}
