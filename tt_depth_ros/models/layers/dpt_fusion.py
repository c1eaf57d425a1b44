"""DPT "scratch": per-level 3x3 projections and the refinenet fusion chain (Ranftl et al., DPT).

Mirrors the fusion part of DA3 `model/dpt.py` and CroCo `dpt_block.py`, shared by both heads. The
two upstreams differ only in how a coarser path meets the next finer level:

* ``'to_skip_size'`` (DA3): refinenet4 resizes to l3's size, refinenet3 to l2's, refinenet2 to l1's,
  refinenet1 doubles. refinenet4 has no `resConfUnit1`.
* ``'double_then_crop'`` (DUSt3R): every refinenet doubles; refinenet4's output is cropped to the
  next level's size (a no-op when sizes agree). refinenet4 keeps `resConfUnit1` (in checkpoints,
  unused at runtime).

Every bilinear resize uses align_corners=True (docs/da3.md §2.2).
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

UPSAMPLE_MODES = ('to_skip_size', 'double_then_crop')


class ResidualConvUnit(nn.Module):
    """x + conv2(relu(conv1(relu(x)))), 3x3 convs with bias, ReLU not in place.

    Args:
        features: Channels in and out.
    """

    def __init__(self, features: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(features, features, 3, padding=1, bias=True)
        self.conv2 = nn.Conv2d(features, features, 3, padding=1, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual refinement of x (B, C, H, W)."""
        return x + self.conv2(F.relu(self.conv1(F.relu(x))))


class FeatureFusionBlock(nn.Module):
    """Fuse a coarse path with a skip feature, refine, upsample, project.

    Args:
        features: Channels of path and skip.
        with_skip_unit: Create `resConfUnit1` (refines the skip). DA3's refinenet4 has none.
    """

    def __init__(self, features: int, with_skip_unit: bool = True) -> None:
        super().__init__()
        if with_skip_unit:
            self.resConfUnit1 = ResidualConvUnit(features)
        self.resConfUnit2 = ResidualConvUnit(features)
        self.out_conv = nn.Conv2d(features, features, 1, bias=True)

    def forward(self, x: torch.Tensor, skip: Optional[torch.Tensor] = None,
                size: Optional[Sequence[int]] = None) -> torch.Tensor:
        """Return out_conv(resize(RCU2(x + RCU1(skip)))); resize to `size` or x2 if None."""
        if skip is not None:
            if not hasattr(self, 'resConfUnit1'):
                raise ValueError('FeatureFusionBlock built without resConfUnit1 got a skip input')
            x = x + self.resConfUnit1(skip)
        x = self.resConfUnit2(x)
        if size is None:
            x = F.interpolate(x, scale_factor=2.0, mode='bilinear', align_corners=True)
        else:
            x = F.interpolate(x, size=tuple(int(s) for s in size), mode='bilinear',
                              align_corners=True)
        return self.out_conv(x)


class DPTFusion(nn.Module):
    """The DPT scratch: `layer{i}_rn` projections and `refinenet{1..4}`.

    Args:
        in_channels: Channels of the four input levels l1..l4 (finest first).
        features: Fusion width (256 for both Large models).
        refinenet4_skip_unit: Whether refinenet4 holds a `resConfUnit1` (DUSt3R: True; DA3: False).
        upsample: 'to_skip_size' (DA3) or 'double_then_crop' (DUSt3R), see the module docstring.
    """

    def __init__(self, in_channels: Sequence[int], features: int, refinenet4_skip_unit: bool,
                 upsample: str) -> None:
        super().__init__()
        if len(in_channels) != 4:
            raise ValueError(f'DPTFusion: in_channels must list 4 levels, got {list(in_channels)}')
        if upsample not in UPSAMPLE_MODES:
            raise ValueError(f'DPTFusion: upsample={upsample!r}; allowed: {UPSAMPLE_MODES}')
        self.upsample = upsample
        self.layer1_rn = nn.Conv2d(in_channels[0], features, 3, padding=1, bias=False)
        self.layer2_rn = nn.Conv2d(in_channels[1], features, 3, padding=1, bias=False)
        self.layer3_rn = nn.Conv2d(in_channels[2], features, 3, padding=1, bias=False)
        self.layer4_rn = nn.Conv2d(in_channels[3], features, 3, padding=1, bias=False)
        self.refinenet1 = FeatureFusionBlock(features)
        self.refinenet2 = FeatureFusionBlock(features)
        self.refinenet3 = FeatureFusionBlock(features)
        self.refinenet4 = FeatureFusionBlock(features, with_skip_unit=refinenet4_skip_unit)

    def project(self, l1: torch.Tensor, l2: torch.Tensor, l3: torch.Tensor,
                l4: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The `layer{i}_rn` projections of the four levels."""
        return self.layer1_rn(l1), self.layer2_rn(l2), self.layer3_rn(l3), self.layer4_rn(l4)

    @staticmethod
    def fuse_to_skip_size(r: Sequence[torch.Tensor],
                          blocks: Sequence[FeatureFusionBlock]) -> torch.Tensor:
        """'to_skip_size' chain over projected levels r1..r4 with refinenet blocks 1..4."""
        r1, r2, r3, r4 = r
        b1, b2, b3, b4 = blocks
        p4 = b4(r4, size=r3.shape[2:])
        p3 = b3(p4, r3, size=r2.shape[2:])
        p2 = b2(p3, r2, size=r1.shape[2:])
        return b1(p2, r1)

    def forward(self, l1: torch.Tensor, l2: torch.Tensor, l3: torch.Tensor,
                l4: torch.Tensor) -> torch.Tensor:
        """Fuse four levels (finest l1 first, NCHW) into path1: (B, features, 2*H1, 2*W1)."""
        r1, r2, r3, r4 = self.project(l1, l2, l3, l4)
        if self.upsample == 'to_skip_size':
            return self.fuse_to_skip_size((r1, r2, r3, r4), (self.refinenet1, self.refinenet2,
                                                             self.refinenet3, self.refinenet4))
        p4 = self.refinenet4(r4)[:, :, :r3.shape[2], :r3.shape[3]]
        p3 = self.refinenet3(p4, r3)[:, :, :r2.shape[2], :r2.shape[3]]
        p2 = self.refinenet2(p3, r2)[:, :, :r1.shape[2], :r1.shape[3]]
        return self.refinenet1(p2, r1)
