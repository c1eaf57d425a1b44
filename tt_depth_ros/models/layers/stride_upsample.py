"""ConvTranspose2d with kernel == stride, rewritten as a 1x1 convolution and a 4-D pixel shuffle.

Why: LiteRT's mobile GPU delegate takes no TRANSPOSE_CONV and no tensor over 4-D, and the DA3
heads upsample their two finest levels with ConvTranspose2d(k=s, stride=s) (x4, x2). With k = s the
output patches do not overlap, so out[b, o, y*s+i, x*s+j] = bias[o] + sum_c W[c, o, i, j] x[b, c,
y, x]: a 1x1 convolution to Cout*s*s channels (ordered o, i, j) whose channels are then moved into
space. `pixel_shuffle` would do that move through a 6-D view; `stride_upsample` does it in two 4-D
steps (columns, then rows). Pure data movement after the same products: the export-friendly forward
(engines/export/) uses it with the same outputs as the ConvTranspose2d.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def is_patch_convt(m: nn.Module) -> bool:
    """A ConvTranspose2d whose patches do not overlap (k == stride, no padding, groups 1)."""
    return (isinstance(m, nn.ConvTranspose2d) and m.kernel_size == m.stride and m.groups == 1
            and m.padding == (0, 0) and m.output_padding == (0, 0) and m.dilation == (1, 1)
            and m.kernel_size[0] == m.kernel_size[1])


@torch.no_grad()
def as_conv1x1(m: nn.ConvTranspose2d) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight (Cout*s*s, Cin, 1, 1), bias (Cout*s*s,)) of the 1x1 conv, channels (o, i, j)."""
    if not is_patch_convt(m):
        raise ValueError(f'as_conv1x1: {m} is not a ConvTranspose2d with kernel == stride')
    cin, cout, s, _ = m.weight.shape
    w = m.weight.permute(1, 2, 3, 0).reshape(cout * s * s, cin, 1, 1)   # [o,i,j] <- W[c,o,i,j]
    b = m.bias if m.bias is not None else torch.zeros(cout, dtype=w.dtype, device=w.device)
    return w.contiguous(), b.repeat_interleave(s * s).contiguous()


def stride_upsample(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                    s: int) -> torch.Tensor:
    """Upsample x (B, Cin, H, W) to (B, Cout, H*s, W*s) as the ConvTranspose2d of `as_conv1x1`."""
    b, _, h, w = x.shape
    z = F.conv2d(x, weight, bias)                     # (B, Cout*s*s, H, W), channels (o, i, j)
    cout = z.shape[1] // (s * s)
    # columns: (B*Cout*s, s_j, H, W) -> (B*Cout*s, H, W, s_j) -> (B*Cout*s, H, W*s)
    z = z.reshape(b * cout * s, s, h, w).permute(0, 2, 3, 1).reshape(b * cout * s, h, w * s)
    # rows: (B*Cout, s_i, H, W*s) -> (B*Cout, H, s_i, W*s) -> (B, Cout, H*s, W*s)
    z = z.reshape(b * cout, s, h, w * s).permute(0, 2, 1, 3)
    return z.reshape(b, cout, h * s, w * s)
