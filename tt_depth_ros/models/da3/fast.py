"""Inference-only DA3 forward with exact algebraic folds, for the torch engine.

Same mathematics as `DA3Model` (which stays the readable reference and the checkpoint layout);
only the arithmetic is rearranged:

* LayerScale folded into the output projections: ls(W h + b) = (gamma W) h + gamma b.
* Residual adds fused into the GEMM: x.addmm_(h, (gamma W)^T) then x += gamma b, in place, instead
  of bias copy, GEMM, multiply and add as separate passes (memory-bound passes cost as much as a
  GEMM slice on a 2-core CPU).
* The two full-resolution output branches (depth, sky) share one 3x3 conv with 2x the channels and
  a grouped 1x1 conv (each output channel sees exactly the weights it had).
* The DPT head runs in channels_last memory format (oneDNN's native layout on CPU).

Rounding differs from the reference at the 1e-7 relative level; the engine tests hold it to the
golden fixtures with the same tolerances as the reference.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tt_depth_ros.models.da3.model import DA3Model
from tt_depth_ros.models.layers.pos_embed import resample_pos_embed


class _FastBlock(nn.Module):
    def __init__(self, blk: nn.Module) -> None:
        super().__init__()
        g1, g2 = blk.ls1.gamma.detach(), blk.ls2.gamma.detach()
        self.num_heads = blk.attn.num_heads
        self.scale = blk.attn.scale
        self.norm1, self.norm2 = blk.norm1, blk.norm2
        # weights stored transposed (in, out) so GEMMs read them without a copy
        self.qkv_wt = nn.Parameter(blk.attn.qkv.weight.detach().t().contiguous(), False)
        self.qkv_b = nn.Parameter(blk.attn.qkv.bias.detach().clone(), False)
        self.proj_wt = nn.Parameter((blk.attn.proj.weight.detach() * g1[:, None]).t().contiguous(),
                                    False)
        self.proj_b = nn.Parameter(blk.attn.proj.bias.detach() * g1, False)
        self.fc1_wt = nn.Parameter(blk.mlp.fc1.weight.detach().t().contiguous(), False)
        self.fc1_b = nn.Parameter(blk.mlp.fc1.bias.detach().clone(), False)
        self.fc2_wt = nn.Parameter((blk.mlp.fc2.weight.detach() * g2[:, None]).t().contiguous(),
                                   False)
        self.fc2_b = nn.Parameter(blk.mlp.fc2.bias.detach() * g2, False)

    def forward(self, x: torch.Tensor, b: int, n: int) -> torch.Tensor:
        """x: (B*N, C) residual stream, updated in place and returned."""
        c = x.shape[1]
        hd = c // self.num_heads
        h = self.norm1(x)
        qkv = torch.addmm(self.qkv_b, h, self.qkv_wt)
        # (B*N, 3C) -> (3, B, heads, N, hd)
        q, k, v = qkv.view(b, n, 3, self.num_heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v, scale=self.scale)
        a = a.transpose(1, 2).reshape(b * n, c)
        x.addmm_(a, self.proj_wt).add_(self.proj_b)
        h = F.gelu(torch.addmm(self.fc1_b, self.norm2(x), self.fc1_wt))
        x.addmm_(h, self.fc2_wt).add_(self.fc2_b)
        return x


class FastDA3(nn.Module):
    """Inference forward of a loaded DA3Model; returns {'depth', 'sky'} (B, H, W) like DA3Model.

    Args:
        model: A DA3Model with its weights loaded (its tensors are reused, not copied, where the
            layout is unchanged).
    """

    def __init__(self, model: DA3Model) -> None:
        super().__init__()
        self.cfg = model.cfg
        vit = model.backbone.pretrained
        self.patch_embed = vit.patch_embed
        self.cls_token = vit.cls_token
        self.pos_embed = vit.pos_embed
        self.norm = vit.norm
        last = max(self.cfg.out_layers)
        self.blocks = nn.ModuleList(_FastBlock(b) for b in list(vit.blocks)[:last + 1])
        head = model.head
        self.projects, self.resize_layers = head.projects, head.resize_layers
        s = head.scratch
        self.fusion = s
        self.output_conv1 = s.output_conv1
        d0, s0 = s.output_conv2[0], s.sky_output_conv2[0]
        d2, s2 = s.output_conv2[2], s.sky_output_conv2[2]
        hid = d0.out_channels
        self.out_conv_a = nn.Conv2d(d0.in_channels, 2 * hid, 3, padding=1)
        self.out_conv_b = nn.Conv2d(2 * hid, 2, 1, groups=2)
        with torch.no_grad():
            self.out_conv_a.weight.copy_(torch.cat([d0.weight, s0.weight]))
            self.out_conv_a.bias.copy_(torch.cat([d0.bias, s0.bias]))
            self.out_conv_b.weight.copy_(torch.cat([d2.weight, s2.weight]))
            self.out_conv_b.bias.copy_(torch.cat([d2.bias, s2.bias]))
        self._pos_cache: dict = {}
        self.requires_grad_(False)
        for m in (self.projects, self.resize_layers, self.fusion, self.output_conv1,
                  self.out_conv_a, self.out_conv_b):
            m.to(memory_format=torch.channels_last)

    def cast_backbone(self, dtype: torch.dtype) -> 'FastDA3':
        """Cast the backbone (patch embed to final norm) to `dtype`; the head stays as it is."""
        for m in (self.patch_embed, self.norm, self.blocks):
            m.to(dtype)
        self.cls_token.data = self.cls_token.data.to(dtype)
        self.pos_embed.data = self.pos_embed.data.to(dtype)
        self._pos_cache.clear()
        return self

    @property
    def backbone_dtype(self) -> torch.dtype:
        """Dtype the input must have."""
        return self.pos_embed.dtype

    def _pos(self, h0: int, w0: int) -> torch.Tensor:
        key = (h0, w0, self.pos_embed.dtype, self.pos_embed.device)
        if key not in self._pos_cache:
            self._pos_cache[key] = resample_pos_embed(
                self.pos_embed, h0, w0, num_prefix=1, offset=self.cfg.interpolate_offset,
                antialias=self.cfg.interpolate_antialias)
        return self._pos_cache[key]

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """x: normalised (B, 3, H, W), sides multiples of the patch; cast to the backbone dtype."""
        x = x.to(self.backbone_dtype)
        head_dtype = self.output_conv1.weight.dtype
        b, _, h, w = x.shape
        p = self.cfg.patch_size
        h0, w0 = h // p, w // p
        tok = self.patch_embed(x)                                   # (B, h0*w0, C)
        tok = torch.cat([self.cls_token.expand(b, -1, -1), tok], dim=1) + self._pos(h0, w0)
        n, c = tok.shape[1], tok.shape[2]
        xs = tok.reshape(b * n, c).contiguous()
        taps = []
        wanted = set(self.cfg.out_layers)
        for i, blk in enumerate(self.blocks):
            xs = blk(xs, b, n)
            if i in wanted:
                taps.append(self.norm(xs).view(b, n, c)[:, 1:])
        levels = []
        for i, t in enumerate(taps):
            # (B, h0*w0, C) -> (B, C, h0, w0), channels_last in memory
            m = t.to(head_dtype).reshape(b, h0, w0, c).permute(0, 3, 1, 2)
            levels.append(self.resize_layers[i](self.projects[i](m)))
        out = self.output_conv1(self.fusion(*levels))
        out = F.interpolate(out, size=(h, w), mode='bilinear', align_corners=True)
        logits = self.out_conv_b(F.relu(self.out_conv_a(out)))
        return {'depth': torch.exp(logits[:, 0]), 'sky': torch.relu(logits[:, 1])}
