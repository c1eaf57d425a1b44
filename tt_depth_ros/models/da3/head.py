"""DA3 DPT heads (upstream `model/dpt.py`, `model/dualdpt.py`).

`DA3Head` (metric / mono, docs/da3.md §2.2): tokens -> per-level 1x1 projection -> resize (ConvT x4,
ConvT x2, identity, conv s2) -> the shared DPT fusion -> output_conv1 -> bilinear
(align_corners=True) to the input size -> depth = exp(output_conv2), sky = relu(sky_output_conv2).

`set_fused(True)` (inference only): the head runs channels_last (oneDNN's native CPU layout) and
the two full-resolution branches (depth, sky) share one 3x3 conv with 2x the channels and a grouped
1x1 conv (each output channel sees exactly the weights it had); folded weights are non-persistent
buffers, so `state_dict()` keeps the checkpoint layout. Module names equal the `head.*` keys.

`set_export(True)` (the export-friendly forward, engines/export/; both DA3 heads): the x4 / x2
ConvTranspose2d (kernel == stride) run as a 1x1 conv and a 4-D pixel shuffle
(layers/stride_upsample.py: no TRANSPOSE_CONV, nothing over 4-D), and the head stays in the
contiguous layout even when fused (litert-torch 0.10 miscompiles the channels_last head: depth PCC
0.42 on the tiny model). Same products, same outputs.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.layers.dpt_fusion import DPTFusion
from tt_depth_ros.models.layers.stride_upsample import as_conv1x1, is_patch_convt, stride_upsample

Upsamplers = dict[int, tuple[torch.Tensor, torch.Tensor, int]]


def out_conv2(cin: int, hidden: int, cout: int) -> nn.Sequential:
    """Keys .0 (3x3) and .2 (1x1); index 1 is the ReLU."""
    return nn.Sequential(nn.Conv2d(cin, hidden, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(hidden, cout, 1))


def projects_and_resizes(cin: int, oc: tuple[int, ...]) -> tuple[nn.ModuleList, nn.ModuleList]:
    """`projects` (1x1 convs) and `resize_layers` (ConvT x4, ConvT x2, identity, conv s2)."""
    projects = nn.ModuleList(nn.Conv2d(cin, c, 1) for c in oc)
    resize = nn.ModuleList([
        nn.ConvTranspose2d(oc[0], oc[0], kernel_size=4, stride=4),
        nn.ConvTranspose2d(oc[1], oc[1], kernel_size=2, stride=2),
        nn.Identity(),
        nn.Conv2d(oc[3], oc[3], kernel_size=3, stride=2, padding=1),
    ])
    return projects, resize


def export_upsamplers(resize: nn.ModuleList) -> Upsamplers:
    """Level -> (1x1 weight, bias, stride) of every kernel == stride ConvTranspose2d in `resize`."""
    return {i: (*as_conv1x1(m), m.stride[0]) for i, m in enumerate(resize) if is_patch_convt(m)}


def resize_level(resize: nn.ModuleList, i: int, x: torch.Tensor,
                 upsamplers: Upsamplers | None) -> torch.Tensor:
    """`resize[i](x)`, or its 1x1-conv + pixel-shuffle form when `upsamplers` holds level i."""
    if upsamplers is not None and i in upsamplers:
        return stride_upsample(x, *upsamplers[i])
    return resize[i](x)


def head_layout(head: nn.Module, fused: bool, export: bool) -> None:
    """channels_last for the fused eager head, contiguous otherwise (export: module docstring)."""
    head.to(memory_format=torch.channels_last if fused and not export
            else torch.contiguous_format)


def token_map(f: torch.Tensor, h0: int, w0: int) -> torch.Tensor:
    """(B, h0*w0, C) tokens -> (B, C, h0, w0)."""
    b, _, c = f.shape
    return f.transpose(1, 2).reshape(b, c, h0, w0)


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
        self.output_conv2 = out_conv2(half, cfg.head_features_2, 1)
        self.sky_output_conv2 = out_conv2(half, cfg.head_features_2, 1)


class DA3Head(nn.Module):
    """DPT head: four token maps -> raw depth, sky and the sky logit at input resolution.

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.projects, self.resize_layers = projects_and_resizes(cfg.embed_dim, cfg.out_channels)
        self.scratch = DA3Scratch(cfg)
        self.fused = False
        self.export = False
        self._up: Upsamplers | None = None

    def set_export(self, on: bool) -> 'DA3Head':
        """Export-friendly forward (module docstring) on or off; call after loading weights."""
        self.export = bool(on)
        self._up = export_upsamplers(self.resize_layers) if on else None
        head_layout(self, self.fused, self.export)
        return self

    @torch.no_grad()
    def set_fused(self, on: bool, dtype: torch.dtype = torch.float32) -> 'DA3Head':
        """channels_last and the merged depth/sky output convs (inference only) on or off.

        `dtype` bf16 (with `on`) casts the head to bf16 (one way) except the final 1x1 logit
        convs, which read the bf16 hidden map in fp32 (the logits feed exp()).
        """
        if dtype != torch.float32 and not on:
            raise ValueError(f'DA3Head: dtype={dtype} needs the fused path (on=True)')
        for name in ('_oa_w', '_oa_b', '_ob_w', '_ob_b'):
            self._buffers.pop(name, None)
            self._non_persistent_buffers_set.discard(name)
        self.fused = bool(on)
        if dtype != torch.float32:
            self.to(dtype)
        if on:
            d, s = self.scratch.output_conv2, self.scratch.sky_output_conv2
            for name, t in (('_oa_w', torch.cat([d[0].weight, s[0].weight])),
                            ('_oa_b', torch.cat([d[0].bias, s[0].bias])),
                            ('_ob_w', torch.cat([d[2].weight, s[2].weight])),
                            ('_ob_b', torch.cat([d[2].bias, s[2].bias]))):
                if name.startswith('_ob'):
                    t = t.float()    # logit conv in fp32
                self.register_buffer(name, t.contiguous(), persistent=False)
        head_layout(self, self.fused, self.export)
        return self

    def forward(self, feats: list[torch.Tensor], h: int, w: int,
                patch_size: int = 14) -> dict[str, torch.Tensor]:
        """Decode taps (B, h0*w0, C) for an (h, w) input into (B, h, w) maps.

        Returns:
            {'depth': exp(logit), 'sky': relu(sky logit), 'sky_logit': sky logit}.
        """
        h0, w0 = h // patch_size, w // patch_size
        levels = [resize_level(self.resize_layers, i, self.projects[i](token_map(f, h0, w0)),
                               self._up) for i, f in enumerate(feats)]
        s = self.scratch
        out = s.output_conv1(s(*levels))
        out = F.interpolate(out, size=(h, w), mode='bilinear', align_corners=True)
        if self.fused:
            hid = F.relu(F.conv2d(out, self._oa_w, self._oa_b, padding=1))
            logits = F.conv2d(hid.to(self._ob_w.dtype), self._ob_w, self._ob_b, groups=2)
            depth_logit, sky_logit = logits[:, 0], logits[:, 1]
        else:
            depth_logit = s.output_conv2(out)[:, 0]
            sky_logit = s.sky_output_conv2(out)[:, 0]
        return {'depth': torch.exp(depth_logit), 'sky': torch.relu(sky_logit),
                'sky_logit': sky_logit}
