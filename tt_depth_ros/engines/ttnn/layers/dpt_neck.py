"""DPT neck on device: four token taps -> path1, shared by the DA3 and DUSt3R heads.

Reassemble (torch DA3 `projects` + `resize_layers`, DUSt3R `act_postprocess`: the same layers
under other keys): per tap a 1x1 projection (linear), then ConvT x4, ConvT x2, identity or a 3x3
stride-2 conv to strides 4/8/16/32; then the DPT fusion (dpt_fusion.py). The torch fusion's
upsample modes ('to_skip_size' DA3, 'double_then_crop' DUSt3R; models/layers/dpt_fusion.py) are
per-shape resize matrices here (`fusion_resizes`), so one neck serves both models. All of the neck
is the precision preset's 'head' group.
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.common import TtLinear
from tt_depth_ros.engines.ttnn.layers.conv import TtConv2d, conv1x1_params
from tt_depth_ros.engines.ttnn.layers.dpt_fusion import TtDPTFusion
from tt_depth_ros.engines.ttnn.layers.resize import TtResize
from tt_depth_ros.models.layers.dpt_fusion import UPSAMPLE_MODES

# (stride, padding, transposed) of the level resizes; None = identity (stride 16 stays)
LEVEL_RESIZES = ((4, 0, True), (2, 0, True), None, (2, 1, False))


def level_sizes(h0: int, w0: int) -> list[tuple[int, int]]:
    """Spatial sizes of the four levels (ConvT x4, ConvT x2, identity, conv s2 p1)."""
    return [(4 * h0, 4 * w0), (2 * h0, 2 * w0), (h0, w0), ((h0 + 1) // 2, (w0 + 1) // 2)]


def doubled(hw: tuple[int, int]) -> tuple[int, int]:
    return 2 * hw[0], 2 * hw[1]


def fusion_resizes(ctx, hws, channels: int, upsample: str) -> list[TtResize]:
    """refinenet{i+1}'s resize: hws[i] -> hws[i-1] (refinenet1: -> 2*hws[0] = path1).

    'to_skip_size' interpolates straight to the target; 'double_then_crop' interpolates to 2x and
    keeps the target's first rows/columns (the same matrices when the sizes agree). refinenet1's
    result, path1, is read by the output's first conv only: it stays an NHWC map (resize.py).
    """
    outs = [doubled(hws[0])] + list(hws[:3])
    scaled = outs if upsample == 'to_skip_size' else [doubled(hw) for hw in hws]
    return [TtResize(ctx, hws[i], scaled[i], outs[i], channels, nhwc=i == 0) for i in range(4)]


class TtDPTNeck:
    """Reassemble + fusion.

    Args: sd, project_keys (4 prefixes of the 1x1 projections), resize_keys (4 prefixes of the
    level resizes, None at the identity level), scratch (prefix of `layer*_rn` / `refinenet*`),
    upsample (one of UPSAMPLE_MODES).
    """

    def __init__(self, ctx, sd, project_keys, resize_keys, scratch: str, upsample: str):
        if upsample not in UPSAMPLE_MODES:
            raise ValueError(f'TtDPTNeck: upsample={upsample!r}; allowed: {UPSAMPLE_MODES}')
        self.ctx, self.upsample = ctx, upsample
        self.projects = [TtLinear(ctx, *conv1x1_params(sd, k), group='head', out='head')
                         for k in project_keys]
        self.resize_layers = [
            None if spec is None else TtConv2d(ctx, sd[k + 'weight'], sd[k + 'bias'],
                                               stride=spec[0], padding=spec[1],
                                               transposed=spec[2], group='head',
                                               role='reassemble',
                                               row_major_out=True)     # read by layer_rn only
            for k, spec in zip(resize_keys, LEVEL_RESIZES)]
        self.fusion = TtDPTFusion(ctx, sd, scratch)
        self.features = int(sd[scratch + 'layer1_rn.weight'].shape[0])

    def shape_constants(self, sc) -> dict:
        """Level sizes, path1's size and the fusion resizes of one input shape."""
        hws = level_sizes(sc.grid_h, sc.grid_w)
        return {'hws': hws, 'path1_hw': doubled(hws[0]),
                'resizes': fusion_resizes(self.ctx, hws, self.features, self.upsample)}

    def __call__(self, taps, sc, state):
        """4 taps (1, 1, h0*w0, C), consumed (freed) -> path1 (1, H1, W1, features), NHWC."""
        ttnn = self.ctx.ttnn
        hw0 = (sc.grid_h, sc.grid_w)
        levels = []
        for project, resize, t in zip(self.projects, self.resize_layers, taps):
            x = project(t)
            ttnn.deallocate(t)
            if resize is not None:
                y = resize(x, hw0)
                ttnn.deallocate(x)
                x = y
            levels.append(x)
        return self.fusion(levels, state['hws'], state['resizes'])

    @staticmethod
    def release_shape(state) -> None:
        for r in state['resizes']:
            r.release()

    def release(self) -> None:
        for m in self.projects + [r for r in self.resize_layers if r is not None]:
            m.release()
        self.fusion.release()
