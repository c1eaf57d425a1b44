"""DA3 network, every family member (upstream `model/da3.py`, net part).

* metric / mono: DINOv2 backbone + DPT head -> raw depth and sky. No sky post-process here:
  upstream's in-forward sky fill samples at random (docs/da3.md §3), so the raw maps are returned
  and sky is handled deterministically in `geometry/depth/metric_depth.py`.
* any-view: backbone with camera token and cross-view attention + DualDPT head (depth, conf, rays)
  + camera decoder (pose encoding -> world-to-camera extrinsics and intrinsics). The views of ONE
  scene are the leading axis.

One module per model: `set_fused(True)` switches it to the inference-only arithmetic (folded
LayerScale, fused residual GEMMs, channels_last head) with the same mathematics; `state_dict()` is
the checkpoint layout either way. `set_export(True)` is the export-friendly forward (for
torch.onnx, engines/export/): size-only tensors (pos-embed resample, RoPE tables, UV embeddings)
become per-size constants and the intrinsics are stacked, not index-assigned; same outputs. The
backbone may be cast to bf16 (`cast_backbone`); the head and camera decoder stay fp32, as upstream
runs them.
"""
from __future__ import annotations

import torch
from torch import nn

from tt_depth_ros.models.da3.backbone import DA3Backbone
from tt_depth_ros.models.da3.camera import CameraDecoder, fov_to_intrinsics, pose_to_extrinsics
from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.da3.dualdpt import DualDPTHead
from tt_depth_ros.models.da3.head import DA3Head


class DA3Model(nn.Module):
    """DA3 network; state_dict keys equal the HF checkpoint keys minus `model.`.

    Args:
        cfg: Model dimensions (config.CONFIGS / config.ANYVIEW_CONFIGS).
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = DA3Backbone(cfg)
        if cfg.anyview:
            self.head = DualDPTHead(cfg)
            self.cam_dec = CameraDecoder(cfg.head_dim_in)
        else:
            self.head = DA3Head(cfg)
        self.fused = False
        self.precision = 'float32'
        self.export = False

    def set_export(self, on: bool = True) -> 'DA3Model':
        """Export-friendly forward on or off (module docstring); call after loading weights."""
        self.backbone.pretrained.set_export(on)
        self.head.set_export(on)
        self.export = bool(on)
        return self

    def set_fused(self, on: bool = True, precision: str = 'float32',
                  head_dtype: torch.dtype = torch.float32) -> 'DA3Model':
        """Inference-only fused arithmetic on or off (module docstring); returns self.

        Args:
            on: The switch.
            precision: Matmul precision of the backbone blocks ('float32' exact, 'bfloat16',
                'int8'; layers/block.py); reversible.
            head_dtype: bf16 runs the metric DPT head in bf16 except its final 1x1 logit convs
                (engines/torch/presets.py 'cpu-fast'); a one-way cast like `cast_backbone`.
        """
        self.backbone.pretrained.set_fused(on, precision)
        if head_dtype != torch.float32:
            if not isinstance(self.head, DA3Head):
                raise ValueError(f'{self.cfg.name}: only the metric/mono DPT head runs in '
                                 f'{head_dtype}; the DualDPT head stays float32')
            self.head.set_fused(on, dtype=head_dtype)
        else:
            self.head.set_fused(on)
        self.fused = bool(on)
        self.precision = precision
        return self

    def cast_backbone(self, dtype: torch.dtype) -> 'DA3Model':
        """Cast the backbone (incl. folded buffers) to `dtype`; head / camera stay as they are."""
        self.backbone.to(dtype)
        vit = self.backbone.pretrained
        if vit._pos_cache is not None:
            vit._pos_cache.clear()
        if self.export:
            self.set_export(True)   # size constants of the old dtype are dropped
        return self

    @property
    def backbone_dtype(self) -> torch.dtype:
        """Dtype the backbone computes in (the input is cast to it)."""
        return self.backbone.pretrained.pos_embed.dtype

    def _check(self, x: torch.Tensor) -> tuple[int, int]:
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f'DA3Model expects (B, 3, H, W), got {tuple(x.shape)}')
        h, w = x.shape[-2:]
        p = self.cfg.patch_size
        if h < p or w < p or h % p or w % p:
            raise ValueError(f'DA3Model input {h}x{w}: both sides must be positive multiples of '
                             f'{p} (use geometry.preprocess.da3_preprocess.network_size)')
        return int(h), int(w)

    def forward(self, x: torch.Tensor, return_features: bool = False) -> dict[str, torch.Tensor]:
        """Run on ImageNet-normalised images.

        Args:
            x: (B, 3, H, W) float, H and W positive multiples of 14. Metric / mono: B independent
                images. Any-view: the B views of one scene (input order).
            return_features: Also return the four head inputs as 'feat0'..'feat3' (B, h0*w0, C).

        Returns:
            metric / mono: 'depth' (B, H, W) raw depth (exp), 'sky' (B, H, W) relu sky,
            'sky_logit' (B, H, W).
            any-view: 'depth', 'depth_conf' (B, H, W); 'ray' (B, hr, wr, 6), 'ray_conf'
            (B, hr, wr) with hr, wr = 8H/14, 8W/14; 'pose_enc' (B, 9); 'extrinsics' (B, 3, 4)
            world-to-camera; 'intrinsics' (B, 3, 3) at H x W; 'cam_token' (B, 2C);
            'ref_view' () int64.
        """
        h, w = self._check(x)
        feats, cam_token, ref = self.backbone(x.to(self.backbone_dtype))
        head_dtype = self.head.projects[0].weight.dtype
        out = self.head([f.to(head_dtype) for f in feats], h, w, patch_size=self.cfg.patch_size)
        if head_dtype != torch.float32:
            out = {k: v.float() for k, v in out.items()}
        if self.cfg.anyview:
            pose = self.cam_dec(cam_token)
            out.update(pose_enc=pose, extrinsics=pose_to_extrinsics(pose),
                       intrinsics=fov_to_intrinsics(pose, h, w), cam_token=cam_token,
                       ref_view=torch.tensor(ref, dtype=torch.int64))
        if return_features:
            out.update({f'feat{i}': f for i, f in enumerate(feats)})
        return out
