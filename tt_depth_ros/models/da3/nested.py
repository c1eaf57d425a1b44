"""DA3NESTED-GIANT-LARGE-1.1: any-view giant + metric large, aligned to metres.

Upstream `DA3NestedNet`; test/data/da3_anyview/README.md "NESTED".

Both branches see the same input; `nested_align.align_to_metric` scales the any-view depth and
camera translations with one scalar (least squares against the metric branch, focal-scaled with
the *predicted* any-view intrinsics) and fills sky. Module names equal the checkpoint's
`model.da3.*` / `model.da3_metric.*` keys; `load_nested_state_dict` loads strictly.
"""
from __future__ import annotations

from typing import Mapping

import torch
from torch import nn

from tt_depth_ros.models.da3.checkpoint import load_state_dict, split_nested
from tt_depth_ros.models.da3.config import GIANT_1_1, LARGE, DA3Config
from tt_depth_ros.models.da3.model import DA3Model
from tt_depth_ros.models.da3.nested_align import align_to_metric


class NestedDA3(nn.Module):
    """Any-view branch `da3` + metric branch `da3_metric` + alignment.

    Args:
        anyview: Any-view config (GIANT_1_1; tests may pass a tiny one).
        metric: Metric config (LARGE; tests may pass TINY).
    """

    def __init__(self, anyview: DA3Config = GIANT_1_1, metric: DA3Config = LARGE) -> None:
        super().__init__()
        if not anyview.anyview or not metric.is_metric:
            raise ValueError(f'NestedDA3 needs an any-view and a metric config, got '
                             f'{anyview.name} / {metric.name}')
        self.da3 = DA3Model(anyview)
        self.da3_metric = DA3Model(metric)

    def set_fused(self, on: bool = True, precision: str = 'float32',
                  head_dtype: torch.dtype = torch.float32) -> 'NestedDA3':
        """Inference fusion switch of both branches (DA3Model.set_fused).

        `head_dtype` applies to the metric branch's head; the any-view DualDPT head stays fp32.
        """
        self.da3.set_fused(on, precision)
        self.da3_metric.set_fused(on, precision, head_dtype)
        return self

    def cast_backbone(self, dtype: torch.dtype) -> 'NestedDA3':
        """Cast both backbones (heads, camera decoder and alignment stay fp32)."""
        self.da3.cast_backbone(dtype)
        self.da3_metric.cast_backbone(dtype)
        return self

    def set_export(self, on: bool) -> 'NestedDA3':
        """Both branches' export-friendly forward (DA3Model.set_export).

        The alignment is not in an exported graph (data-dependent masks and quantiles):
        `align_to_metric` runs on the host after it (engines/onnxruntime).
        """
        self.da3.set_export(on)
        self.da3_metric.set_export(on)
        return self

    def branches(self, x: torch.Tensor) -> tuple[dict, dict]:
        """The any-view and the metric branch's outputs for (S, 3, H, W) views (no alignment)."""
        return self.da3(x), self.da3_metric(x)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """(S, 3, H, W) normalised views of one scene -> metric outputs and every intermediate.

        Returns:
            'depth' (S, H, W) metres (sky = sky_fill), 'depth_conf' (sky = 1), 'extrinsics'
            (S, 3, 4) world-to-camera in metres, 'intrinsics', 'scale_factor', 'sky_fill',
            'median_conf', 'non_sky_mask', 'align_mask'; the any-view outputs as
            'depth_anyview', 'depth_conf_anyview', 'extrinsics_anyview', 'ray', 'ray_conf',
            'pose_enc', 'cam_token', 'ref_view'; the metric branch as 'metric_depth_raw',
            'metric_sky_logit', 'sky'.
        """
        av, mt = self.branches(x)
        out = align_to_metric(av['depth'], av['depth_conf'], av['extrinsics'], av['intrinsics'],
                              mt['depth'].float(), mt['sky'].float())
        out.update(intrinsics=av['intrinsics'], depth_anyview=av['depth'],
                   depth_conf_anyview=av['depth_conf'], extrinsics_anyview=av['extrinsics'],
                   ray=av['ray'], ray_conf=av['ray_conf'], pose_enc=av['pose_enc'],
                   cam_token=av['cam_token'], ref_view=av['ref_view'],
                   metric_depth_raw=mt['depth'], metric_sky_logit=mt['sky_logit'], sky=mt['sky'])
        return out


def load_nested_state_dict(model: NestedDA3, state: Mapping[str, object]) -> None:
    """Load a NESTED checkpoint (`model.da3.*`, `model.da3_metric.*`) strictly into `model`."""
    parts = split_nested(state)
    load_state_dict(model.da3, parts['da3'])
    load_state_dict(model.da3_metric, parts['da3_metric'])
