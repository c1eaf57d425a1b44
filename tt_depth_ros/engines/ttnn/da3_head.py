"""DA3 DPT head on device (torch `models/da3/head.py`, docs/da3.md §2.2).

The depth and sky branches are merged: output_conv2.0 and sky_output_conv2.0 become one 3x3 conv
(128 -> 2*32, ReLU fused) and the two 1x1 convs one block-diagonal linear (64 -> 2), exactly the
same sums. Activations run in fp32 on device: column 0 -> exp (depth), column 1 -> relu (sky).
Head activations and weights follow the preset's 'head' dtype / weight group (precision.py).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import TtLinear, linear_params, upload
from tt_depth_ros.engines.ttnn.conv import TtConv2d
from tt_depth_ros.engines.ttnn.dpt_fusion import TtDPTFusion, conv1x1_params
from tt_depth_ros.engines.ttnn.resize import TtResize

H = 'head.'
S = 'head.scratch.'


def merged_output_params(sd):
    """(3x3 weight, bias) of both branches stacked, and the block-diagonal 1x1 as linear."""
    a, b = S + 'output_conv2.', S + 'sky_output_conv2.'
    w3 = torch.cat([sd[a + '0.weight'], sd[b + '0.weight']], 0)
    b3 = torch.cat([sd[a + '0.bias'], sd[b + '0.bias']], 0)
    hid = sd[a + '0.weight'].shape[0]
    w1 = torch.zeros(2, 2 * hid)
    w1[0, :hid] = sd[a + '2.weight'].reshape(-1)
    w1[1, hid:] = sd[b + '2.weight'].reshape(-1)
    b1 = torch.cat([sd[a + '2.bias'], sd[b + '2.bias']])
    return (w3, b3), linear_params(w1, b1)


def level_sizes(h0: int, w0: int):
    """Spatial sizes of the four levels (ConvT x4, ConvT x2, identity, conv s2 p1)."""
    return [(4 * h0, 4 * w0), (2 * h0, 2 * w0), (h0, w0), ((h0 + 1) // 2, (w0 + 1) // 2)]


class TtDA3Head:
    def __init__(self, ctx, sd, cfg):
        self.ctx, self.cfg = ctx, cfg
        self.projects = [TtLinear(ctx, *conv1x1_params(sd, f'{H}projects.{i}.'), group='head',
                                  out='head') for i in range(4)]
        self.resize_layers = [
            TtConv2d(ctx, sd[H + 'resize_layers.0.weight'], sd[H + 'resize_layers.0.bias'],
                     stride=4, transposed=True, group='head'),
            TtConv2d(ctx, sd[H + 'resize_layers.1.weight'], sd[H + 'resize_layers.1.bias'],
                     stride=2, transposed=True, group='head'),
            None,
            TtConv2d(ctx, sd[H + 'resize_layers.3.weight'], sd[H + 'resize_layers.3.bias'],
                     stride=2, padding=1, group='head')]
        self.fusion = TtDPTFusion(ctx, sd, S, refinenet4_skip_unit=False)
        self.output_conv1 = TtConv2d(ctx, sd[S + 'output_conv1.weight'],
                                     sd[S + 'output_conv1.bias'], padding=1, group='head')
        (w3, b3), lin = merged_output_params(sd)
        self.out3 = TtConv2d(ctx, w3, b3, padding=1, relu=True, group='head')
        self.out1 = TtLinear(ctx, *lin, group='head', out='head')

    def shape_constants(self, sc) -> dict:
        """Resize matrices ('to_skip_size': l4->l3->l2->l1, then x2, then to (H, W)); masks."""
        f = self.cfg.features
        hws = level_sizes(sc.grid_h, sc.grid_w)
        up = (2 * hws[0][0], 2 * hws[0][1])
        resizes = [TtResize(self.ctx, self._up, hws[0], up, up, f),
                   TtResize(self.ctx, self._up, hws[1], hws[0], hws[0], f),
                   TtResize(self.ctx, self._up, hws[2], hws[1], hws[1], f),
                   TtResize(self.ctx, self._up, hws[3], hws[2], hws[2], f)]
        final = TtResize(self.ctx, self._up, up, (sc.height, sc.width), (sc.height, sc.width),
                         self.cfg.output_conv1_out)
        cols = torch.tensor([[1.0, 0.0]]).reshape(1, 1, 1, 2)
        return {'hws': hws, 'up': up, 'resizes': resizes, 'final': final,
                'm_depth': upload(self.ctx, cols, self.ctx.ttnn.float32),
                'm_sky': upload(self.ctx, 1.0 - cols, self.ctx.ttnn.float32)}

    def _up(self, t):
        return upload(self.ctx, t)

    def __call__(self, taps, sc, state):
        """4 taps (1, 1, h0*w0, D) -> (1, 1, H*W, 2) float32 [depth, sky]."""
        ttnn = self.ctx.ttnn
        hw0 = (sc.grid_h, sc.grid_w)
        levels = []
        for i, t in enumerate(taps):
            x = self.projects[i](t)
            ttnn.deallocate(t)
            if self.resize_layers[i] is not None:
                y = self.resize_layers[i](x, hw0)
                ttnn.deallocate(x)
                x = y
            levels.append(x)
        path1 = self.fusion(levels, state['hws'], state['resizes'])
        o1 = self.output_conv1(path1, state['up'])
        ttnn.deallocate(path1)
        full = state['final'](o1)
        ttnn.deallocate(o1)
        hid = self.out3(full, (sc.height, sc.width))
        ttnn.deallocate(full)
        logits = self.out1(hid)
        ttnn.deallocate(hid)
        if logits.dtype == ttnn.float32:          # float32 head presets
            lg = logits
        else:
            lg = ttnn.typecast(logits, ttnn.float32)
            ttnn.deallocate(logits)
        e, r = ttnn.exp(lg), ttnn.relu(lg)
        ttnn.deallocate(lg)
        a, b = ttnn.multiply(e, state['m_depth']), ttnn.multiply(r, state['m_sky'])
        ttnn.deallocate(e)
        ttnn.deallocate(r)
        out = ttnn.add(a, b)
        ttnn.deallocate(a)
        ttnn.deallocate(b)
        return out

    def release_shape(self, state) -> None:
        for r in state['resizes'] + [state['final']]:
            r.release()
        self.ctx.ttnn.deallocate(state['m_depth'])
        self.ctx.ttnn.deallocate(state['m_sky'])

    def release(self) -> None:
        mods = self.projects + [m for m in self.resize_layers if m is not None]
        for m in mods + [self.fusion, self.output_conv1, self.out3, self.out1]:
            m.release()
