"""DPT fusion ("scratch") on device (torch `models/layers/dpt_fusion.py`).

RCU(x) = x + conv2(relu(conv1(relu(x)))) with conv1's ReLU fused; a fusion block adds RCU1(skip),
applies RCU2, resizes (bilinear, align_corners=True, per-shape TtResize) and applies out_conv
(1x1 = linear). Feature maps are flattened NHWC (1, 1, H*W, C).

out_conv runs BEFORE the resize, on a quarter of the pixels: a 1x1 conv mixes channels per pixel
and the resize mixes pixels per channel with weights that sum to 1 in every output pixel, so
resize(W y + b) = W resize(y) + b, the same sums in another order. It saves 3/4 of out_conv's
MACs and of its DRAM traffic at the resolution where the head is largest.
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.common import TtLinear
from tt_depth_ros.engines.ttnn.layers.conv import TtConv2d, conv1x1_params


class TtResidualConvUnit:
    def __init__(self, ctx, sd, prefix: str):
        self.ctx = ctx
        self.conv1 = TtConv2d(ctx, sd[prefix + 'conv1.weight'], sd[prefix + 'conv1.bias'],
                              padding=1, relu=True, group='head', row_major_out=True,
                              role='rcu')
        self.conv2 = TtConv2d(ctx, sd[prefix + 'conv2.weight'], sd[prefix + 'conv2.bias'],
                              padding=1, group='head', role='rcu')

    def __call__(self, x, hw):
        ttnn = self.ctx.ttnn
        r = ttnn.relu(x)
        h = self.conv1(r, hw)
        ttnn.deallocate(r)
        h2 = self.conv2(h, hw)
        ttnn.deallocate(h)
        out = ttnn.add(x, h2)
        ttnn.deallocate(h2)
        return out

    def release(self) -> None:
        self.conv1.release()
        self.conv2.release()


class TtFeatureFusionBlock:
    def __init__(self, ctx, sd, prefix: str, with_skip_unit: bool):
        self.ctx = ctx
        self.rcu1 = TtResidualConvUnit(ctx, sd, prefix + 'resConfUnit1.') if with_skip_unit \
            else None
        self.rcu2 = TtResidualConvUnit(ctx, sd, prefix + 'resConfUnit2.')
        self.out_conv = TtLinear(ctx, *conv1x1_params(sd, prefix + 'out_conv.'), group='head')

    def __call__(self, x, hw, resize, skip=None):
        """x, skip at hw; `resize` is this block's per-shape TtResize."""
        ttnn = self.ctx.ttnn
        if skip is not None:
            s = self.rcu1(skip, hw)
            x2 = ttnn.add(x, s)
            ttnn.deallocate(s)
            y = self.rcu2(x2, hw)
            ttnn.deallocate(x2)
        else:
            y = self.rcu2(x, hw)
        z = self.out_conv(y)                      # before the resize: module docstring
        ttnn.deallocate(y)
        out = resize(z)
        ttnn.deallocate(z)
        return out

    def release(self) -> None:
        for m in (self.rcu1, self.rcu2, self.out_conv):
            if m is not None:
                m.release()


class TtDPTFusion:
    """layer{1..4}_rn + refinenet4..1. `resizes[i]` (per shape) belongs to refinenet{i+1}.

    The upsample modes of the torch module live in the resizes (dpt_neck.fusion_resizes).
    """

    def __init__(self, ctx, sd, prefix: str):
        self.ctx = ctx
        self.rn = [TtConv2d(ctx, sd[f'{prefix}layer{i}_rn.weight'], None, padding=1,
                            group='head', role='rn') for i in range(1, 5)]
        self.refine = [TtFeatureFusionBlock(ctx, sd, f'{prefix}refinenet{i}.', True)
                       for i in range(1, 4)]
        # refinenet4 never receives a skip (DUSt3R keeps unused RCU1 keys; not converted)
        self.refine.append(TtFeatureFusionBlock(ctx, sd, f'{prefix}refinenet4.', False))

    def __call__(self, levels, hws, resizes):
        """Levels l1..l4 at hws[0..3] -> path1 (the caller's resizes decide its size)."""
        ttnn = self.ctx.ttnn
        r = []
        for conv, x, hw in zip(self.rn, levels, hws):
            r.append(conv(x, hw))
            ttnn.deallocate(x)
        p = self.refine[3](r[3], hws[3], resizes[3])
        for i in (2, 1, 0):
            nxt = self.refine[i](p, hws[i], resizes[i], skip=r[i])
            ttnn.deallocate(p)
            p = nxt
        for t in r:
            ttnn.deallocate(t)
        return p

    def release(self) -> None:
        for m in self.rn + self.refine:
            m.release()
