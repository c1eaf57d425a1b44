"""Bilinear resize with align_corners=True as two constant matmuls (torch F.interpolate).

ttnn.upsample's bilinear mode is half-pixel (align_corners=False) and integer-scale only
(docs/ttnn.md §5), so DPT's resizes are separable matrices: out = A_h . X . A_w^T. A crop after
a x2 upsample (DUSt3R's odd grids) is folded in by keeping the first rows of A.

Both steps are left products of a batch-1 matrix with a batched map, which the library runs by
reusing the matrix across the batches (its matmul's documented in0 broadcast; with its own
program config it accepts that only for DRAM-interleaved operands and result): the height step
A_h (1, 1, Ho, H) @ X (1, W, H, C), then the width step A_w (1, 1, Wo, W) @ (1, Ho, W, C). So
no transpose and no (H, W*C) reshape moves a map: a permute of dims 1 and 2 before each step
(of the input, then of the height-resized map: height first moves the smaller maps) and, when
W % 32 == 0 (DUSt3R), the input reshape (1, 1, H*W, C) -> (1, H, W, C) is a view. A row-major
input (a conv's result handed over as such when W % 32 != 0, dpt_output.py) is reshaped and
permuted row-major and tilized once instead of reshaped tile-padded and permuted.

Under a preset's `l1_resize` a single-matrix resize whose intermediates fit L1_RESIZE_BYTES keeps
them in L1: the permuted input, the height step's result and its permute. Both steps then take
an explicit 1D program config (config.resize_program_config): the library reuses the batch-1
matrix across L1 batches only under that config. The result goes to DRAM for its reader.

Interpolation weights such as 159/279 are not bf16 numbers: next to bf16 activations each
matrix is split into A_hi + A_lo (both bf16, A_lo = bf16(A - A_hi)) and applied as two
matmuls, which keeps the weights to ~16 bits. A float32 head (the DA3 presets) takes one
float32 matrix and one matmul: the FPU reads float32 operands as TF32, the activations
included, so a split weight would buy nothing the activation's own 10-bit mantissa does not
already lose, at the price of a second matmul and a full-size add. A preset with
`resize_hi_lo` off (DUSt3R 'fast') takes one bf16 matrix: its gate holds without the split.
Input: flattened NHWC (1, 1, H*W, C); output the same, or the (1, Ho, Wo, C) map (`nhwc`).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import pad_to, upload
from tt_depth_ros.engines.ttnn.config import resize_program_config

# L1 a resize may hold at once for its intermediates (a preset's l1_resize): 32 MiB is ~300 KB
# of each core's 1.5 MB on 110 cores, freed before the next op (a conv) needs its buffers
L1_RESIZE_BYTES = 32 << 20


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


def split_bf16(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split a into hi = bf16(a) and lo = bf16(a - hi) (float32 tensors holding bf16 values)."""
    hi = a.to(torch.bfloat16).to(torch.float32)
    lo = (a - hi).to(torch.bfloat16).to(torch.float32)
    return hi, lo


class TtResize:
    """Per-shape resize (H, W, C) -> (Ho, Wo, C); `out_hw` = the size after the optional crop.

    The result is flattened (1, 1, Ho*Wo, C), or with `nhwc` the (1, Ho, Wo, C) map itself, for
    a conv, which takes [N, H, W, C] as it is: flattening it would be a pass over the map when
    Wo % 32 != 0 (DA3's widths), and the conv would undo it with another.
    """

    def __init__(self, ctx, in_hw, scaled_hw, out_hw, channels: int, nhwc: bool = False):
        self.ctx, self.nhwc = ctx, nhwc
        (self.h, self.w), (self.ho, self.wo), self.c = in_hw, out_hw, channels
        ah = interp_matrix(in_hw[0], scaled_hw[0], out_hw[0])           # (Ho, H)
        aw = interp_matrix(in_hw[1], scaled_hw[1], out_hw[1])           # (Wo, W)
        head = ctx.precision.act(ctx.ttnn, 'head')                     # module docstring
        one = head == ctx.ttnn.float32 or not ctx.precision.resize_hi_lo
        parts = (lambda a: [a]) if one else split_bf16                   # the matrix, or hi + lo
        self.ah = [upload(ctx, m[None, None], dtype=head) for m in parts(ah)]   # (1, 1, Ho, H)
        self.aw = [upload(ctx, m[None, None], dtype=head) for m in parts(aw)]   # (1, 1, Wo, W)
        self.l1 = None
        if one and ctx.precision.l1_resize:
            size = 4 if head == ctx.ttnn.float32 else 2
            (h, w), ho, c = in_hw, out_hw[0], channels
            tp, u, up = w * pad_to(h) * c, w * pad_to(ho) * c, ho * pad_to(w) * c
            # both steps batched (a 1-wide map is a plain matmul: the config is for reuse)
            if min(w, ho) > 1 and max(tp + u, u + up) * size <= L1_RESIZE_BYTES:
                fp32_acc = ctx.precision.matmul_setting()[1]
                self.l1 = (resize_program_config(ctx.ttnn, ctx.grid, ho, h, c, w,
                                                 fp32_acc=fp32_acc),
                           resize_program_config(ctx.ttnn, ctx.grid, out_hw[1], w, c, ho,
                                                 fp32_acc=fp32_acc))

    def __call__(self, x):
        ttnn = self.ctx.ttnn
        mid, (cfg_h, cfg_w) = ((ttnn.L1_MEMORY_CONFIG, self.l1) if self.l1 else
                               (ttnn.DRAM_MEMORY_CONFIG, (None, None)))
        t = ttnn.reshape(x, (1, self.h, self.w, self.c), pad_value=0.0)  # a view if W % 32 == 0
        tp = ttnn.permute(t, (0, 2, 1, 3), memory_config=mid)            # (1, W, H, C)
        ttnn.deallocate(t, force=False)
        if tp.layout != ttnn.TILE_LAYOUT:              # a row-major conv result (module doc)
            tt = ttnn.to_layout(tp, ttnn.TILE_LAYOUT, memory_config=mid, pad_value=0.0)
            ttnn.deallocate(tp)
            tp = tt
        u = self._matmul2(tp, self.ah, mid, cfg_h)                       # (1, W, Ho, C)
        ttnn.deallocate(tp)
        up = ttnn.permute(u, (0, 2, 1, 3), memory_config=mid)            # (1, Ho, W, C)
        ttnn.deallocate(u)
        y = self._matmul2(up, self.aw, ttnn.DRAM_MEMORY_CONFIG, cfg_w)   # (1, Ho, Wo, C)
        ttnn.deallocate(up)
        if self.nhwc:
            return y
        # no pad_value: nothing contracts over the rows of the result (a fill-pad op fewer)
        out = ttnn.reshape(y, (1, 1, self.ho * self.wo, self.c))
        ttnn.deallocate(y, force=False)
        return out

    def _matmul2(self, x, mats, memory_config, program_config):
        """M @ x, M one matrix (broadcast over x's batch) or M_hi + M_lo (two matmuls, an add)."""
        ttnn = self.ctx.ttnn
        cfg = self.ctx.matmul_config()
        parts = [ttnn.matmul(m, x, dtype=x.dtype, compute_kernel_config=cfg,
                             memory_config=memory_config, program_config=program_config)
                 for m in mats]
        if len(parts) == 1:
            return parts[0]
        out = ttnn.add(parts[0], parts[1])
        for p in parts:
            ttnn.deallocate(p)
        return out

    def release(self) -> None:
        for m in self.ah + self.aw:
            self.ctx.ttnn.deallocate(m)
