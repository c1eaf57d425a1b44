"""conv2d / conv_transpose2d on device (torch nn.Conv2d / ConvTranspose2d), prepared per shape.

ttnn re-prepares and re-uploads host weights on every conv call, which is host I/O and illegal in
a trace capture (docs/ttnn.md §5): the warm-up call passes the host weights with
`return_weights_and_bias=True` and keeps the returned device weights for that shape; warmed shapes
(and the capture) then use those. 1x1 convs are plain linears (TtLinear) instead.

Layout (seen in the real library's graph, ttnn 0.81.1): a conv reshapes a TILE input from
(1, 1, H*W, C) to (H, W, C) and its TILE output back, each a DRAM pass over a tile-padded map
(W = 148 pads to 160); a ROW_MAJOR input is read as it is, and `row_major_out` has the conv
untilize each slice in L1 instead, so a conv feeding only another conv (RCU conv1 -> conv2, a
level resize -> its layer_rn conv) hands over ROW_MAJOR and skips both reshapes.
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import linear_params


def conv1x1_params(sd, prefix: str):
    """1x1 conv weight (O, I, 1, 1) + bias -> TtLinear params (a 1x1 conv is a linear)."""
    w = sd[prefix + 'weight']
    return linear_params(w.reshape(w.shape[0], w.shape[1]), sd.get(prefix + 'bias'))


class TtConv2d:
    """A 2-D (transposed) convolution.

    Args: weight OIHW (IOHW if transposed), bias or None, stride, padding, transposed, relu,
    group (weight group of precision.py), out (output dtype: 'head' or 'residual' activations),
    row_major_out (ROW_MAJOR output for a conv whose only reader is another conv), role (its
    matmul role in precision.ROLES: fidelity and accumulation; None = the preset's own).
    """

    def __init__(self, ctx, weight: torch.Tensor, bias, stride=1, padding=0,
                 transposed: bool = False, relu: bool = False, group: str | None = None,
                 out: str = 'head', row_major_out: bool = False, role: str | None = None):
        ttnn = ctx.ttnn
        self.ctx, self.role = ctx, role
        self.transposed = transposed
        w = ctx.precision.host_weight(weight, group, role).contiguous()   # debias, rounding
        self.in_ch, self.out_ch = (w.shape[0], w.shape[1]) if transposed else (w.shape[1],
                                                                                w.shape[0])
        self.k = (int(w.shape[2]), int(w.shape[3]))
        self.stride, self.padding = (stride, stride), (padding, padding)
        self.host_w = ttnn.from_torch(w, dtype=ttnn.float32)                  # host, ROW_MAJOR
        self.host_b = None if bias is None else ttnn.from_torch(
            bias.detach().to(torch.float32).reshape(1, 1, 1, -1), dtype=ttnn.float32)
        self.relu = relu
        self.weights_dtype = ctx.precision.weights_dtype(ttnn, group)
        self.out_dtype = ctx.precision.act(ttnn, out)
        self.out_layout = ttnn.ROW_MAJOR_LAYOUT if row_major_out else ttnn.TILE_LAYOUT
        self.prepared: dict[tuple[int, int], tuple] = {}

    def out_hw(self, h: int, w: int) -> tuple[int, int]:
        (kh, kw), (sh, sw), (ph, pw) = self.k, self.stride, self.padding
        if self.transposed:
            return (h - 1) * sh - 2 * ph + kh, (w - 1) * sw - 2 * pw + kw
        return (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1

    def __call__(self, x, hw: tuple[int, int], row_major_out: bool | None = None):
        """X (1, 1, H*W, Cin) or (1, H, W, Cin) -> (1, 1, Ho*Wo, Cout).

        `row_major_out` overrides the constructor's choice for this call (None: keep it).
        """
        ttnn = self.ctx.ttnn
        layout = self.out_layout if row_major_out is None else (
            ttnn.ROW_MAJOR_LAYOUT if row_major_out else ttnn.TILE_LAYOUT)
        cfg = ttnn.Conv2dConfig(
            weights_dtype=self.weights_dtype, output_layout=layout,
            activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU) if self.relu else None)
        ready = self.prepared.get(hw)
        w, b = ready if ready is not None else (self.host_w, self.host_b)
        op = ttnn.conv_transpose2d if self.transposed else ttnn.conv2d
        out, (w_dev, b_dev) = op(
            input_tensor=x, weight_tensor=w, bias_tensor=b, device=self.ctx.device,
            in_channels=self.in_ch, out_channels=self.out_ch, batch_size=1,
            input_height=hw[0], input_width=hw[1], kernel_size=self.k, stride=self.stride,
            padding=self.padding, dtype=self.out_dtype, conv_config=cfg,
            compute_config=self.ctx.matmul_config(self.role), return_weights_and_bias=True)
        if ready is None:
            self.prepared[hw] = (w_dev, b_dev)
        self.ctx.shape_uses.setdefault(self.ctx.active_shape, set()).add((self, hw))
        return out

    def release_hw(self, hw) -> None:
        """Free the device weights prepared for input size `hw` (an evicted shape's)."""
        ready = self.prepared.pop(hw, None)
        if ready is not None:
            self.ctx.ttnn.deallocate(ready[0])
            if ready[1] is not None:
                self.ctx.ttnn.deallocate(ready[1])

    def release(self) -> None:
        for w, b in self.prepared.values():
            self.ctx.ttnn.deallocate(w)
            if b is not None:
                self.ctx.ttnn.deallocate(b)
        self.prepared.clear()
