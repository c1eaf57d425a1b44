"""DPT output convolutions on device: path1 -> float32 logits at the input resolution.

Both heads end the same way (torch DA3 `output_conv1` -> interpolate to (H, W) -> `output_conv2`;
DUSt3R `head`: 3x3 -> x2 -> 3x3 -> ReLU -> 1x1): a 3x3 conv at path1's size, a bilinear resize
(align_corners=True) to the image, a 3x3 conv with ReLU fused, a 1x1 (linear) into float32 for
the model's own output activations. DUSt3R's x2 is the resize to the image (H = 16 grid = 2 *
path1). Which weights fill the convs (DA3 merges depth and sky) is the head's business. The 1x1
writes float32 itself: its sums accumulate in fp32 and a bf16 output would only be cast back
(a pass over the map).
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.common import TtLinear
from tt_depth_ros.engines.ttnn.config import TILE
from tt_depth_ros.engines.ttnn.layers.conv import TtConv2d
from tt_depth_ros.engines.ttnn.layers.resize import TtResize


class TtDPTOutput:
    """The four output stages.

    Args: first (weight, bias) of the 3x3 at path1, hidden (weight, bias) of the 3x3 + ReLU at
    full resolution, last (TtLinear params of the 1x1).
    """

    def __init__(self, ctx, first, hidden, last):
        self.ctx = ctx
        self.first = TtConv2d(ctx, *first, padding=1, group='head', role='out_first')
        self.hidden = TtConv2d(ctx, *hidden, padding=1, relu=True, group='head',
                               role='out_hidden')
        self.last = TtLinear(ctx, *last, group='head', out='float32')

    def shape_constants(self, sc, path1_hw) -> dict:
        image = (sc.height, sc.width)
        return {'path1_hw': path1_hw,
                'to_image': TtResize(self.ctx, path1_hw, image, image, self.first.out_ch,
                                     nhwc=True)}               # read by the hidden conv only

    def __call__(self, path1, sc, state):
        """Path1 (freed) -> (1, 1, H*W, C_out) float32."""
        ttnn = self.ctx.ttnn
        hw = state['path1_hw']
        # read by to_image only: row-major when its width is not whole tiles (resize.py)
        a = self.first(path1, hw, row_major_out=hw[1] % TILE != 0)
        ttnn.deallocate(path1)
        full = state['to_image'](a)
        ttnn.deallocate(a)
        hid = self.hidden(full, (sc.height, sc.width))
        ttnn.deallocate(full)
        logits = self.last(hid)                   # float32: module docstring
        ttnn.deallocate(hid)
        return logits

    @staticmethod
    def release_shape(state) -> None:
        state['to_image'].release()

    def release(self) -> None:
        for m in (self.first, self.hidden, self.last):
            m.release()
