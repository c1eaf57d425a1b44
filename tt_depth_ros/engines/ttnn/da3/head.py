"""DA3 DPT head on device (torch `models/da3/head.py`, docs/da3.md §2.2).

The shared DPT neck (dpt_neck.py) and output convs (dpt_output.py) with DA3's weights; what is
DA3's own is the sky branch. The depth and sky branches are merged: output_conv2.0 and
sky_output_conv2.0 become one 3x3 conv (128 -> 2*32, ReLU fused) and the two 1x1 convs one
block-diagonal linear (64 -> 2), exactly the same sums. Activations run in fp32 on device, on
the logits packed k pixels to a tile row (pixel_pack.py): column 0 -> exp (depth), column 1 ->
relu (sky). Head activations and weights follow the preset's
'head' dtype / weight group (precision.py).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import linear_params, upload
from tt_depth_ros.engines.ttnn.layers.dpt_neck import TtDPTNeck
from tt_depth_ros.engines.ttnn.layers.dpt_output import TtDPTOutput
from tt_depth_ros.engines.ttnn.layers.pixel_pack import lane_pattern, pack, pixels_per_row

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


class TtDA3Head:
    def __init__(self, ctx, sd, cfg):
        self.ctx, self.cfg = ctx, cfg
        self.neck = TtDPTNeck(ctx, sd, [f'{H}projects.{i}.' for i in range(4)],
                              [f'{H}resize_layers.{i}.' for i in range(4)], S,
                              upsample='to_skip_size')
        hidden, last = merged_output_params(sd)
        self.output = TtDPTOutput(ctx, (sd[S + 'output_conv1.weight'],
                                        sd[S + 'output_conv1.bias']), hidden, last)

    def shape_constants(self, sc) -> dict:
        """Neck and output-conv constants; the lane masks that pick depth / sky when packed."""
        neck = self.neck.shape_constants(sc)
        k = pixels_per_row(sc.height * sc.width, 2)
        cols = lane_pattern((1.0, 0.0), k)
        return {'neck': neck, 'output': self.output.shape_constants(sc, neck['path1_hw']),
                'pack': k, 'm_depth': upload(self.ctx, cols, self.ctx.ttnn.float32),
                'm_sky': upload(self.ctx, 1.0 - cols, self.ctx.ttnn.float32)}

    def __call__(self, taps, sc, state):
        """4 taps (1, 1, h0*w0, D), consumed -> (1, 1, H*W/k, 2k) float32 [depth, sky] per pixel.

        k = state['pack'] pixels per row; row-major it is the (H*W, 2) map.
        """
        ttnn = self.ctx.ttnn
        path1 = self.neck(taps, sc, state['neck'])
        lg = pack(ttnn, self.output(path1, sc, state['output']), sc.height * sc.width, 2,
                  state['pack'])
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
        self.neck.release_shape(state['neck'])
        self.output.release_shape(state['output'])
        self.ctx.ttnn.deallocate(state['m_depth'])
        self.ctx.ttnn.deallocate(state['m_sky'])

    def release(self) -> None:
        self.neck.release()
        self.output.release()
