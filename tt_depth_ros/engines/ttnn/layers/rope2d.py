"""2-D RoPE on device (torch `models/layers/rope2d.py`, docs/dust3r.md §3.2).

t' = t * cos + rot(t) * sin, with rot = [u_y, v_y, u_x, v_x] -> [-v_y, u_y, -v_x, u_x] done as a
matmul with a constant signed permutation R (exact: one +-1 per column) and the cos/sin tables
(1, 1, S, head_dim) computed per shape at prepare time from fp32 angles. Padded head lanes and
padded tokens get cos 0 / sin 0 (they stay zero / are masked anyway).
"""
from __future__ import annotations

import torch


def rope_tables(rows: int, cols: int, seq: int, dh: int, dhp: int, base: float,
                f0: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (1, 1, seq, dhp) for an rows x cols grid (token n = r*cols + c) padded to seq."""
    d_axis = dh // 2
    inv = 1.0 / (base ** (torch.arange(0, d_axis, 2, dtype=torch.float32) / d_axis))
    r = torch.arange(rows).repeat_interleave(cols).to(torch.float32)
    c = torch.arange(cols).repeat(rows).to(torch.float32)
    halves = []
    for p in (r, c):
        ang = f0 * p[:, None] * inv                         # (N, d_axis/2) fp32
        halves.append(torch.cat((ang, ang), -1))
    ang = torch.cat(halves, -1)                             # (N, dh)
    cos = torch.zeros(1, 1, seq, dhp)
    sin = torch.zeros(1, 1, seq, dhp)
    cos[0, 0, :rows * cols, :dh] = ang.cos()
    sin[0, 0, :rows * cols, :dh] = ang.sin()
    return cos, sin


def rotation_matrix(dh: int, dhp: int) -> torch.Tensor:
    """R (dhp, dhp) with t @ R = rot(t) on the first dh lanes."""
    q = dh // 4
    rmat = torch.zeros(dhp, dhp)
    for half in (0, 2 * q):
        for j in range(q):
            rmat[half + q + j, half + j] = -1.0      # out u_j = -v_j
            rmat[half + j, half + q + j] = 1.0       # out v_j = u_j
    return rmat


class TtRoPE:
    """Applies the per-shape tables; `__call__(t)` consumes t (1, H, S, dhp)."""

    def __init__(self, ctx, rmat, cos, sin):
        self.ctx, self.rmat, self.cos, self.sin = ctx, rmat, cos, sin

    def __call__(self, t):
        """Rotated t, where the preset keeps q/k (L1 under 'fast', else DRAM)."""
        ttnn = self.ctx.ttnn
        mem = self.ctx.precision.inner_memory(ttnn) or ttnn.DRAM_MEMORY_CONFIG
        r = ttnn.matmul(t, self.rmat, compute_kernel_config=self.ctx.matmul_config(),
                        memory_config=mem)
        a = ttnn.multiply(t, self.cos, memory_config=mem)
        b = ttnn.multiply(r, self.sin, memory_config=mem)
        out = ttnn.add(a, b, memory_config=mem)
        for x in (t, r, a, b):
            ttnn.deallocate(x)
        return out
