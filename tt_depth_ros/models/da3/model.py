"""DA3 metric / mono network: DINOv2 backbone + DPT head (upstream `model/da3.py`, net part).

No sky post-process here: upstream's in-forward sky fill samples at random (spec/da3.md §3), so the
raw maps are returned and sky is handled deterministically in `geometry/metric_depth.py`.
"""
from __future__ import annotations

import torch
from torch import nn

from tt_depth_ros.models.da3.backbone import DA3Backbone
from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.da3.head import DA3Head


class DA3Model(nn.Module):
    """DA3 network; state_dict keys equal the HF checkpoint keys minus `model.`.

    Args:
        cfg: Model dimensions (`config.LARGE`, `config.MONO_LARGE`, `config.TINY`).
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = DA3Backbone(cfg)
        self.head = DA3Head(cfg)

    def forward(self, x: torch.Tensor, return_features: bool = False) -> dict[str, torch.Tensor]:
        """Run on ImageNet-normalised images.

        Args:
            x: (B, 3, H, W) float, H and W positive multiples of 14.
            return_features: Also return the four head inputs as 'feat0'..'feat3' (B, h0*w0, C).

        Returns:
            'depth' (B, H, W) raw depth (exp), 'sky' (B, H, W) relu sky, 'sky_logit' (B, H, W).
        """
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f'DA3Model expects (B, 3, H, W), got {tuple(x.shape)}')
        h, w = x.shape[-2:]
        p = self.cfg.patch_size
        if h < p or w < p or h % p or w % p:
            raise ValueError(f'DA3Model input {h}x{w}: both sides must be positive multiples of '
                             f'{p} (use geometry.da3_preprocess.network_size)')
        feats = self.backbone(x)
        out = self.head(feats, h, w, patch_size=p)
        if return_features:
            out.update({f'feat{i}': f for i, f in enumerate(feats)})
        return out
