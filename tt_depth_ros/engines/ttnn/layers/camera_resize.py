"""The upstream camera -> network resize on the device (geometry/preprocess/resize_map.py).

Why here: on the host it is the largest per-frame cost the depth node has left (~0.8-1.3 ms at
640x480); on the card it is a few matmuls inside the frame's trace, and the host uploads the
camera frame as it came (uint8, 0.9 MB at 640x480).

Layout: the image is one (H, W*3) matrix of interleaved RGB - the persistent (1, 1, H*W, 3)
uint8 input cast to float32 and reshaped in ROW_MAJOR - so no tensor carries the 32-lane tile
padding a 3-channel NHWC layout would (10x the bytes). One resize step is
rows @ X (vertical) and then X @ kron(cols.T, I3) (horizontal, every channel at once: the kron
keeps channels apart). Weights are bf16-split (hi + lo, ~16 bits, as layers/resize.py), the
activations float32, HiFi4 with fp32 accumulation. After each step the host's uint8 store: round
half to even (tt-metal's SFPU round) and saturate to 0..255; the integer result is cast to bf16
exactly and tilized as `image_to_tile` does for a network-size input.

The FPU reads float32 operands as TF32 (10-bit mantissa): exact for the integers entering a
step's vertical matmul, but it would cut the weighted sums entering the horizontal one to 1/8 of
a level at 128..255 (measured on the CPU stand-in, which models it: ~9 % of the values one level
off the host bytes after the store). So those sums are split too, into their bf16 part and the
float32 remainder (|r| <= 0.5, read to ~5e-4 of a level), and the horizontal matmul runs as
hi.K_hi + hi.K_lo + r.K_hi: the device values then differ from the host bytes only where a
sum sits within ~1e-3 of a rounding tie (test_camera_resize_ttnn.py).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import exact_kernel_config, upload
from tt_depth_ros.engines.ttnn.layers.resize import split_bf16
from tt_depth_ros.geometry.preprocess.resize_map import ResizeMap


class TtCameraResize:
    """The device copy of one ResizeMap: persistent uint8 camera input -> bf16 TILE network image.

    Args:
        ctx: the engine's TtContext.
        resize: the ResizeMap (camera size -> network size) of the traced key.
    """

    def __init__(self, ctx, resize: ResizeMap):
        self.ctx, self.src_hw, self.net_hw = ctx, tuple(resize.src_hw), tuple(resize.net_hw)
        self.cfg = exact_kernel_config(ctx)
        self.steps = []
        for step in resize.steps:
            rows = torch.tensor(step.rows, dtype=torch.float32)                # (h, H)
            kron = torch.kron(torch.tensor(step.cols.T, dtype=torch.float32).contiguous(),
                              torch.eye(3))                                       # (3W, 3w)
            self.steps.append(([upload(ctx, m[None, None]) for m in split_bf16(rows)],
                               [upload(ctx, m) for m in split_bf16(kron)]))

    def __call__(self, image):
        """(1, 1, H*W, 3) uint8 ROW_MAJOR -> (1, 1, h*w, 3) bf16 TILE (integer-valued)."""
        ttnn = self.ctx.ttnn
        (src_h, src_w), (net_h, net_w) = self.src_hw, self.net_hw
        as_float = ttnn.typecast(image, ttnn.float32)   # reshape takes no uint8 (0.81.1)
        rows_rm = ttnn.reshape(as_float, (1, 1, src_h, src_w * 3))
        ttnn.deallocate(as_float, force=False)
        x = ttnn.to_layout(rows_rm, ttnn.TILE_LAYOUT)
        ttnn.deallocate(rows_rm)
        for rows, kron in self.steps:
            tall = self._sum([ttnn.matmul(m, x, dtype=ttnn.float32, compute_kernel_config=self.cfg)
                              for m in rows])
            ttnn.deallocate(x)
            hi, rest = self._split(tall)
            ttnn.deallocate(tall)
            k_hi, k_lo = kron
            wide = self._sum([ttnn.matmul(a, k, dtype=ttnn.float32, compute_kernel_config=self.cfg)
                              for a, k in ((hi, k_hi), (hi, k_lo), (rest, k_hi))])
            ttnn.deallocate(hi)
            ttnn.deallocate(rest)
            rounded = ttnn.round(wide)
            ttnn.deallocate(wide)
            x = ttnn.clamp(rounded, 0.0, 255.0)     # INTER_CUBIC overshoots; the store saturates
            ttnn.deallocate(rounded)
        rm = ttnn.to_layout(x, ttnn.ROW_MAJOR_LAYOUT)
        ttnn.deallocate(x)
        pixels = ttnn.reshape(rm, (1, 1, net_h * net_w, 3))
        bf16 = ttnn.typecast(pixels, ttnn.bfloat16)       # exact: integers 0..255
        ttnn.deallocate(pixels, force=False)
        ttnn.deallocate(rm, force=False)
        out = ttnn.to_layout(bf16, ttnn.TILE_LAYOUT)
        ttnn.deallocate(bf16)
        return out

    def _split(self, x):
        """X = hi + rest: hi its bf16 rounding (as float32: TF32 reads it exactly), rest exact."""
        ttnn = self.ctx.ttnn
        as_bf16 = ttnn.typecast(x, ttnn.bfloat16)
        hi = ttnn.typecast(as_bf16, ttnn.float32)
        ttnn.deallocate(as_bf16)
        return hi, ttnn.subtract(x, hi)

    def _sum(self, parts):
        ttnn = self.ctx.ttnn
        out = ttnn.add(parts[0], parts[1])
        for p in parts[2:]:
            added = ttnn.add(out, p)
            ttnn.deallocate(out)
            out = added
        for p in parts:
            ttnn.deallocate(p)
        return out

    def release(self) -> None:
        for rows, kron in self.steps:
            for m in rows + kron:
                self.ctx.ttnn.deallocate(m)
        self.steps = []
