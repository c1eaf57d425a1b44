"""Bilinear resize with align_corners=True as two constant matmuls (torch F.interpolate).

ttnn.upsample's bilinear mode is half-pixel (align_corners=False) and integer-scale only
(spec/ttnn.md §5), so DPT's resizes are separable matrices: out = A_h . X . A_w^T. A crop after
a x2 upsample (DUSt3R's odd grids) is folded in by keeping the first rows of A. Input and output
are flattened NHWC (1, 1, H*W, C) TILE tensors.
"""
from __future__ import annotations

import torch


def interp_matrix(n_in: int, n_out: int, keep: int | None = None) -> torch.Tensor:
    """(keep or n_out, n_in) weights of 1-D linear interpolation with align_corners=True."""
    a = torch.zeros(n_out, n_in, dtype=torch.float64)
    if n_in == 1 or n_out == 1:
        a[:, 0] = 1.0
    else:
        src = torch.arange(n_out, dtype=torch.float64) * (n_in - 1) / (n_out - 1)
        i0 = src.floor().long().clamp(max=n_in - 1)
        i1 = (i0 + 1).clamp(max=n_in - 1)
        f = src - i0.to(torch.float64)
        a[torch.arange(n_out), i0] += 1.0 - f
        a[torch.arange(n_out), i1] += f
    return a[:keep].to(torch.float32) if keep is not None else a.to(torch.float32)


class TtResize:
    """Per-shape resize (H, W, C) -> (Ho, Wo, C); `out_hw` = the size after the optional crop."""

    def __init__(self, ctx, upload, in_hw, scaled_hw, out_hw, channels: int):
        self.ctx = ctx
        (self.h, self.w), (self.ho, self.wo), self.c = in_hw, out_hw, channels
        ah = interp_matrix(in_hw[0], scaled_hw[0], out_hw[0])           # (Ho, H)
        aw = interp_matrix(in_hw[1], scaled_hw[1], out_hw[1])           # (Wo, W)
        self.ah = upload(ah[None, None])
        self.aw_t = upload(aw.t().contiguous())                         # (W, Wo)

    def __call__(self, x):
        ttnn = self.ctx.ttnn
        cfg = self.ctx.matmul_config()
        t = ttnn.reshape(x, (1, self.h, self.w, self.c), pad_value=0.0)
        tt = ttnn.transpose(t, -2, -1)                                   # (1, H, C, W)
        ttnn.deallocate(t)
        y = ttnn.matmul(tt, self.aw_t, compute_kernel_config=cfg)        # (1, H, C, Wo)
        ttnn.deallocate(tt)
        yt = ttnn.transpose(y, -2, -1)                                   # (1, H, Wo, C)
        ttnn.deallocate(y)
        flat = ttnn.reshape(yt, (1, 1, self.h, self.wo * self.c), pad_value=0.0)
        ttnn.deallocate(yt)
        z = ttnn.matmul(self.ah, flat, compute_kernel_config=cfg)        # (1, 1, Ho, Wo*C)
        ttnn.deallocate(flat)
        out = ttnn.reshape(z, (1, 1, self.ho * self.wo, self.c), pad_value=0.0)
        ttnn.deallocate(z)
        return out

    def release(self) -> None:
        self.ctx.ttnn.deallocate(self.ah)
        self.ctx.ttnn.deallocate(self.aw_t)
