"""DUSt3R DPT head on device (torch `models/dust3r/dpt_head.py`, docs/dust3r.md §3.6-§3.7).

act_postprocess -> fusion ('double_then_crop': x2 then crop to the next level, folded into the
resize matrices) -> head.0 (3x3) -> x2 -> head.2 (3x3, ReLU) -> head.4 (1x1) = raw (1,1,HW,4).
Output activations in fp32 on device: pts = r / max(|r|, 1e-8) * expm1(|r|), conf = 1 + exp(c);
the result packs [pts_x, pts_y, pts_z, conf, raw0..raw3] per pixel.
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import TtLinear, upload
from tt_depth_ros.engines.ttnn.conv import TtConv2d
from tt_depth_ros.engines.ttnn.dpt_fusion import TtDPTFusion, conv1x1_params
from tt_depth_ros.engines.ttnn.resize import TtResize


def level_sizes(h: int, w: int):
    return [(4 * h, 4 * w), (2 * h, 2 * w), (h, w), ((h + 1) // 2, (w + 1) // 2)]


class TtDust3rDPT:
    def __init__(self, ctx, sd, prefix: str, cfg):
        self.ctx, self.cfg = ctx, cfg
        a = prefix + 'act_postprocess.'
        self.proj = [TtLinear(ctx, *conv1x1_params(sd, f'{a}{i}.0.')) for i in range(4)]
        self.post = [
            TtConv2d(ctx, sd[a + '0.1.weight'], sd[a + '0.1.bias'], stride=4, transposed=True),
            TtConv2d(ctx, sd[a + '1.1.weight'], sd[a + '1.1.bias'], stride=2, transposed=True),
            None,
            TtConv2d(ctx, sd[a + '3.1.weight'], sd[a + '3.1.bias'], stride=2, padding=1)]
        self.fusion = TtDPTFusion(ctx, sd, prefix + 'scratch.', refinenet4_skip_unit=True)
        hd = prefix + 'head.'
        self.head0 = TtConv2d(ctx, sd[hd + '0.weight'], sd[hd + '0.bias'], padding=1)
        self.head2 = TtConv2d(ctx, sd[hd + '2.weight'], sd[hd + '2.bias'], padding=1, relu=True)
        self.head4 = TtLinear(ctx, *conv1x1_params(sd, hd + '4.'))

    @staticmethod
    def shape_constants(ctx, cfg, sc) -> dict:
        """Per-shape resizes (shared by both heads) and post-processing constants."""
        f = cfg.feature_dim
        hws = level_sizes(sc.grid_h, sc.grid_w)

        def up(t):
            return upload(ctx, t)

        def dbl(hw):
            return (2 * hw[0], 2 * hw[1])
        resizes = [TtResize(ctx, up, hws[0], dbl(hws[0]), dbl(hws[0]), f),
                   TtResize(ctx, up, hws[1], dbl(hws[1]), hws[0], f),
                   TtResize(ctx, up, hws[2], dbl(hws[2]), hws[1], f),
                   TtResize(ctx, up, hws[3], dbl(hws[3]), hws[2], f)]
        p1 = dbl(hws[0])
        head_up = TtResize(ctx, up, p1, dbl(p1), dbl(p1), f // 2)
        s = torch.zeros(4, 4)
        s[:3, :] = 1.0                                   # every column = |r|^2
        mr = torch.tensor([1.0, 1.0, 1.0, 0.0]).reshape(1, 1, 1, 4)
        f32 = ctx.ttnn.float32
        return {'hws': hws, 'p1': p1, 'resizes': resizes, 'head_up': head_up,
                'sum_xyz': upload(ctx, s, f32), 'm_pts': upload(ctx, mr, f32),
                'm_conf': upload(ctx, 1.0 - mr, f32)}

    def __call__(self, taps, sc, st):
        """4 taps (1, 1, N, C) -> (1, 1, H*W, 8) float32 [pts xyz, conf, raw 0..3]."""
        ttnn = self.ctx.ttnn
        hw = (sc.grid_h, sc.grid_w)
        levels = []
        for i, t in enumerate(taps):
            x = self.proj[i](t)
            if self.post[i] is not None:
                y = self.post[i](x, hw)
                ttnn.deallocate(x)
                x = y
            levels.append(x)
        p = self.fusion(levels, st['hws'], st['resizes'])
        h0 = self.head0(p, st['p1'])
        ttnn.deallocate(p)
        u = st['head_up'](h0)
        ttnn.deallocate(h0)
        h2 = self.head2(u, (sc.height, sc.width))
        ttnn.deallocate(u)
        raw = self.head4(h2)
        ttnn.deallocate(h2)
        r = ttnn.typecast(raw, ttnn.float32)
        ttnn.deallocate(raw)
        return self._activate(r, st)

    def _activate(self, r, st):
        ttnn = self.ctx.ttnn
        cfg = self.ctx.matmul_config()
        sq = ttnn.multiply(r, r)
        n2 = ttnn.matmul(sq, st['sum_xyz'], compute_kernel_config=cfg)
        n = ttnn.sqrt(n2)
        nc = ttnn.maximum(n, 1e-8)
        inv = ttnn.reciprocal(nc)
        em = ttnn.expm1(n)
        scale = ttnn.multiply(em, inv)
        pts = ttnn.multiply(r, scale)
        e = ttnn.exp(r)
        conf = ttnn.add(e, 1.0)
        a = ttnn.multiply(pts, st['m_pts'])
        b = ttnn.multiply(conf, st['m_conf'])
        act = ttnn.add(a, b)
        out = ttnn.concat([act, r], dim=3)
        for t in (sq, n2, n, nc, inv, em, scale, pts, e, conf, a, b, act, r):
            ttnn.deallocate(t)
        return out

    @staticmethod
    def release_shape(ctx, st) -> None:
        for r in st['resizes'] + [st['head_up']]:
            r.release()
        for k in ('sum_xyz', 'm_pts', 'm_conf'):
            ctx.ttnn.deallocate(st[k])

    def release(self) -> None:
        for m in self.proj + [p for p in self.post if p is not None] + [
                self.fusion, self.head0, self.head2, self.head4]:
            m.release()
