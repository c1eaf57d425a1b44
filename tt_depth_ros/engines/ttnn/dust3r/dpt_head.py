"""DUSt3R DPT head on device (torch `models/dust3r/dpt_head.py`, docs/dust3r.md §3.6-§3.7).

The shared DPT neck (dpt_neck.py, 'double_then_crop': x2 then crop to the next level, folded into
the resize matrices) and output convs (dpt_output.py: head.0 -> x2 -> head.2 + ReLU -> head.4 =
raw (1, 1, HW, 4)) with DUSt3R's weights; what is DUSt3R's own is the postprocess, in fp32 on
device: pts = r / max(|r|, 1e-8) * expm1(|r|), conf = 1 + exp(c), on the raw map packed k
pixels to a tile row (pixel_pack.py; |r|^2 sums each pixel's xyz through a block-diagonal
matrix). Each row of the result holds k pixels' [pts_x, pts_y, pts_z, conf], then the same k
pixels' [raw0..raw3] (`unpack_rows` reads it).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import upload
from tt_depth_ros.engines.ttnn.layers.conv import conv1x1_params
from tt_depth_ros.engines.ttnn.layers.dpt_neck import TtDPTNeck
from tt_depth_ros.engines.ttnn.layers.dpt_output import TtDPTOutput
from tt_depth_ros.engines.ttnn.layers.pixel_pack import lane_pattern, pack, pixels_per_row


def unpack_rows(out, views: int, h: int, w: int):
    """(views * h*w/k, 8k) rows of `TtDust3rDPT` -> (views, h, w, 4) activated, (.., 4) raw."""
    k = pixels_per_row(h * w, 4)
    v = out.reshape(views, h * w // k, 2, k, 4)
    return v[:, :, 0].reshape(views, h, w, 4), v[:, :, 1].reshape(views, h, w, 4)


class TtDust3rDPT:
    def __init__(self, ctx, sd, prefix: str, cfg):
        self.ctx, self.cfg = ctx, cfg
        a = prefix + 'act_postprocess.'
        self.neck = TtDPTNeck(ctx, sd, [f'{a}{i}.0.' for i in range(4)],
                              [f'{a}{i}.1.' for i in range(4)], prefix + 'scratch.',
                              upsample='double_then_crop')
        hd = prefix + 'head.'
        self.output = TtDPTOutput(ctx, (sd[hd + '0.weight'], sd[hd + '0.bias']),
                                  (sd[hd + '2.weight'], sd[hd + '2.bias']),
                                  conv1x1_params(sd, hd + '4.'))

    def shape_constants(self, sc) -> dict:
        """Per-shape constants; they depend on the config only, so both heads share one set."""
        neck = self.neck.shape_constants(sc)
        k = pixels_per_row(sc.height * sc.width, 4)
        s = torch.zeros(4, 4)
        s[:3, :] = 1.0                                   # every column of a pixel = its |r|^2
        mr = lane_pattern((1.0, 1.0, 1.0, 0.0), k)
        f32 = self.ctx.ttnn.float32
        return {'neck': neck, 'output': self.output.shape_constants(sc, neck['path1_hw']),
                'pack': k, 'sum_xyz': upload(self.ctx, torch.kron(torch.eye(k), s), f32),
                'm_pts': upload(self.ctx, mr, f32), 'm_conf': upload(self.ctx, 1.0 - mr, f32)}

    def __call__(self, taps, sc, st):
        """4 taps (1, 1, N, C), consumed -> (1, 1, H*W/k, 8k) float32 (module docstring)."""
        path1 = self.neck(taps, sc, st['neck'])
        raw = pack(self.ctx.ttnn, self.output(path1, sc, st['output']), sc.height * sc.width,
                   4, st['pack'])
        return self._activate(raw, st)

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

    def release_shape(self, st) -> None:
        self.neck.release_shape(st['neck'])
        self.output.release_shape(st['output'])
        for k in ('sum_xyz', 'm_pts', 'm_conf'):
            self.ctx.ttnn.deallocate(st[k])

    def release(self) -> None:
        self.neck.release()
        self.output.release()
