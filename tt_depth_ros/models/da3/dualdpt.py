"""DualDPT head of the DA3 any-view models (upstream `model/dualdpt.py`).

Spec: test/data/da3_anyview/README.md "DualDPT head".

Per view: head LayerNorm(2C) on the taps -> the DPT stages (1x1 projection + UV position embedding
+ resize) -> `layer{k}_rn` shared by two independent fusion chains: main (`refinenet1..4`) -> depth
and confidence at H x W, aux (`refinenet1_aux..4_aux`) -> 6 ray channels and a ray confidence at
8*(H/14) x 8*(W/14) (not upsampled). Upstream also decodes aux levels 0-2 and discards them: their
weights are held (checkpoint layout) but not run. The aux LayerNorm(32) is ONE module shared by the
4 aux output stacks (the checkpoint stores it once, as `output_conv2_aux.0.2`; checkpoint.py maps
the tie). Module names equal the checkpoint's `head.*` keys. `set_export(True)` (export-friendly
forward): the UV embeddings, which depend only on the map sizes, are computed once per size and
reused, so a traced graph holds them as constants (no linspace / trig ops) - two thin per-axis
tables added to the two channel halves, not a full-resolution map - and the ConvTranspose2d
upsamplers and the layout are those of head.py's export form; values are identical.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tt_depth_ros.models.da3.config import DA3Config
from tt_depth_ros.models.da3.head import (
    Upsamplers,
    export_upsamplers,
    head_layout,
    out_conv2,
    projects_and_resizes,
    resize_level,
    token_map,
)
from tt_depth_ros.models.layers.dpt_fusion import DPTFusion, FeatureFusionBlock

AUX_LEVELS = 4
RAY_CHANNELS = 7    # 6 ray values + confidence
UV_RATIO = 0.1
UV_OMEGA0 = 100.0


def uv_pos_tables(c: int, h: int, w: int, aspect: float,
                  device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """`uv_pos_embed`'s halves unbroadcast: (c/2, 1, w) varying along x, (c/2, h, 1) along y.

    Channels [sin(u w_j), cos(u w_j)] and [sin(v w_j), cos(v w_j)], w_j = 100^(-j/(c/4)), times
    0.1; u spans +-sx (w-1)/w along x and v +-sy (h-1)/h along y, sx = ar/sqrt(ar^2+1),
    sy = 1/sqrt(ar^2+1).
    """
    q = c // 4
    norm = math.sqrt(aspect * aspect + 1.0)
    sx, sy = aspect / norm, 1.0 / norm
    u = torch.linspace(-sx * (w - 1) / w, sx * (w - 1) / w, w, dtype=torch.float32, device=device)
    v = torch.linspace(-sy * (h - 1) / h, sy * (h - 1) / h, h, dtype=torch.float32, device=device)
    omega = 1.0 / UV_OMEGA0 ** (torch.arange(q, dtype=torch.float32, device=device) / q)
    uw = (u[None] * omega[:, None])[:, None, :]     # (q, 1, w)
    vw = (v[None] * omega[:, None])[:, :, None]     # (q, h, 1)
    return (torch.cat([uw.sin(), uw.cos()]) * UV_RATIO, torch.cat([vw.sin(), vw.cos()]) * UV_RATIO)


def uv_pos_embed(c: int, h: int, w: int, aspect: float, device=None) -> torch.Tensor:
    """(c, h, w) fp32 UV embedding of an h x w map of an image with W/H = aspect, times 0.1.

    Channels [sin(u w_j), cos(u w_j), sin(v w_j), cos(v w_j)] (`uv_pos_tables`, broadcast).
    """
    ux, vy = uv_pos_tables(c, h, w, aspect, device)
    return torch.cat([ux.expand(-1, h, w), vy.expand(-1, h, w)])


class _Permute(nn.Module):
    def __init__(self, *dims: int) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(*self.dims)


class DualScratch(DPTFusion):
    """`head.scratch`: shared `layer{k}_rn`, main and aux fusion chains, output convs.

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        f, half, hid = cfg.features, cfg.output_conv1_out, cfg.head_features_2
        super().__init__(cfg.out_channels, f, refinenet4_skip_unit=False, upsample='to_skip_size')
        self.refinenet1_aux = FeatureFusionBlock(f)
        self.refinenet2_aux = FeatureFusionBlock(f)
        self.refinenet3_aux = FeatureFusionBlock(f)
        self.refinenet4_aux = FeatureFusionBlock(f, with_skip_unit=False)
        self.output_conv1 = nn.Conv2d(f, half, 3, padding=1)
        self.output_conv2 = out_conv2(half, hid, 2)
        # five 3x3 convs, no activation in between: F -> F/2 -> F -> F/2 -> F -> F/2
        self.output_conv1_aux = nn.ModuleList(
            nn.Sequential(*(nn.Conv2d(f if j % 2 == 0 else half, half if j % 2 == 0 else f, 3,
                                      padding=1) for j in range(5)))
            for _ in range(AUX_LEVELS))
        shared_ln = nn.LayerNorm(hid, eps=1e-5)
        # keys .0 conv, .2 the shared LayerNorm (channel-last), .5 the 1x1 conv
        self.output_conv2_aux = nn.ModuleList(
            nn.Sequential(nn.Conv2d(half, hid, 3, padding=1), _Permute(0, 2, 3, 1), shared_ln,
                          _Permute(0, 3, 1, 2), nn.ReLU(), nn.Conv2d(hid, RAY_CHANNELS, 1))
            for _ in range(AUX_LEVELS))


class DualDPTHead(nn.Module):
    """Taps (S, h0*w0, 2C) -> depth, depth_conf (S, H, W); ray (S, hr, wr, 6), ray_conf (S, hr, wr).

    Args:
        cfg: Model dimensions.
    """

    def __init__(self, cfg: DA3Config) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(cfg.head_dim_in, eps=1e-5)
        self.projects, self.resize_layers = projects_and_resizes(cfg.head_dim_in,
                                                                 cfg.out_channels)
        self.scratch = DualScratch(cfg)
        self._uv_consts: dict | None = None
        self._uv_cache: dict | None = None     # fused mode: the same embeddings per size
        self._up: Upsamplers | None = None
        self.fused = False
        self.export = False

    def set_export(self, on: bool) -> 'DualDPTHead':
        """Export-friendly forward (module docstring) on or off; call after loading weights."""
        self._uv_consts = {} if on else None
        self._up = export_upsamplers(self.resize_layers) if on else None
        self.export = bool(on)
        head_layout(self, self.fused, self.export)
        return self

    def _uv(self, c: int, h: int, w: int, aspect: float, device):
        """The (c, h, w) UV embedding; export: its two (c/2, 1, w) / (c/2, h, 1) tables."""
        c, h, w = int(c), int(h), int(w)   # python ints, also under a tracer (export)
        key = (c, h, w, aspect, str(device))
        for cache in (self._uv_consts, self._uv_cache):
            if cache is not None and key in cache:
                return cache[key]
        if self._uv_consts is not None:
            uv = uv_pos_tables(c, h, w, aspect, device)
        else:
            uv = uv_pos_embed(c, h, w, aspect, device)
        for cache in (self._uv_consts, self._uv_cache):
            if cache is not None:
                cache[key] = uv
        return uv

    def _add_uv(self, x: torch.Tensor, aspect: float) -> torch.Tensor:
        """Add the UV embedding of its own (h, w) grid to x (B, C, h, w).

        Export form: each channel half plus its table, broadcast along the other axis (the same
        additions, exact), so the file holds two thin tables instead of a (c, h, w) constant
        (58 MB at full resolution for 896x504) and no BROADCAST_TO.
        """
        uv = self._uv(x.shape[1], x.shape[2], x.shape[3], aspect, x.device)
        if isinstance(uv, tuple):
            ux, vy = uv
            half = ux.shape[0]
            return torch.cat([x[:, :half] + ux, x[:, half:] + vy], dim=1)
        return x + uv

    def set_fused(self, on: bool) -> 'DualDPTHead':
        """channels_last convolutions and a per-size UV embedding cache (inference) on or off."""
        self.fused = bool(on)
        self._uv_cache = {} if on else None
        head_layout(self, self.fused, self.export)
        return self

    def forward(self, feats: list[torch.Tensor], h: int, w: int,
                patch_size: int = 14) -> dict[str, torch.Tensor]:
        """Decode the four taps of an (h, w) input; see the class docstring for the outputs."""
        h0, w0 = h // patch_size, w // patch_size
        ar = w / h
        levels = []
        for i, f in enumerate(feats):
            x = self.projects[i](token_map(self.norm(f), h0, w0))
            x = self._add_uv(x, ar)
            levels.append(resize_level(self.resize_layers, i, x, self._up))
        s = self.scratch
        r = s.project(*levels)
        main = s.fuse_to_skip_size(r, (s.refinenet1, s.refinenet2, s.refinenet3, s.refinenet4))
        aux = s.fuse_to_skip_size(r, (s.refinenet1_aux, s.refinenet2_aux, s.refinenet3_aux,
                                      s.refinenet4_aux))
        out = F.interpolate(s.output_conv1(main), size=(h, w), mode='bilinear',
                            align_corners=True)
        out = self._add_uv(out, ar)
        logits = s.output_conv2(out)
        a = s.output_conv1_aux[-1](aux)
        a = self._add_uv(a, ar)
        ray = s.output_conv2_aux[-1](a).permute(0, 2, 3, 1)          # (S, hr, wr, 7)
        return {'depth': torch.exp(logits[:, 0]), 'depth_conf': torch.exp(logits[:, 1]) + 1.0,
                'ray': ray[..., :6], 'ray_conf': torch.exp(ray[..., 6]) + 1.0}
