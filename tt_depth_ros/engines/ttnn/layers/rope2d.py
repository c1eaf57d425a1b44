"""2-D RoPE on device (torch `models/layers/rope2d.py`, docs/dust3r.md §3.2).

t' = t * cos + rot(t) * sin, with rot = [u_y, v_y, u_x, v_x] -> [-v_y, u_y, -v_x, u_x] done as a
matmul with a constant signed permutation R (exact: one +-1 per column) and the cos/sin tables
(1, 1, S, head_dim) computed per shape at prepare time from fp32 angles. Padded head lanes and
padded tokens get cos 0 / sin 0 (they stay zero / are masked anyway).

Single-kernel form (Precision.rope_kernel): ttnn.experimental.rotary_embedding_llama computes
t * cos + (t @ T) * sin with T the pairwise rotation (t @ T)[2i] = -t[2i+1], (t @ T)[2i+1] =
t[2i] inside every 32-wide tile. Interleaving each half's quarters, [u0, v0, u1, v1, ...], makes
the pairs (u_j, v_j), so with the q/k projection's output columns and the tables reordered by
that permutation P the kernel computes P(RoPE(t)) exactly: the same products and sums per lane
(-v * sin is v * -sin). q.k is a sum over the head's lanes, the same under any shared order, so
attention is unchanged up to float32 summation order; v and the output projection keep their
order. test/engines/ttnn_backend/test_ttnn_levers.py checks it against models/layers/rope2d.py.
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import exact_kernel_config


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


def llama_permutation(dh: int) -> torch.Tensor:
    """P (dh,): new lane c holds model lane P[c]; each half's quarters interleaved pairwise."""
    q = dh // 4
    return torch.tensor([half + j + s for half in (0, 2 * q) for j in range(q)
                         for s in (0, q)])


def permute_rope_columns(w_t: torch.Tensor, b, rotated: tuple[bool, ...], heads: int, dh: int):
    """Reorder a projection's output columns [g][h][dh] by llama_permutation, per head.

    Only the groups g flagged `rotated` (q and k; never v). A column gather: exact.
    """
    assert w_t.shape[1] == len(rotated) * heads * dh
    perm = llama_permutation(dh)
    idx = torch.arange(w_t.shape[1]).reshape(len(rotated), heads, dh)
    for g, rot in enumerate(rotated):
        if rot:
            idx[g] = idx[g][:, perm]
    idx = idx.reshape(-1)
    return w_t[:, idx].contiguous(), None if b is None else b[:, idx].contiguous()


def llama_tables(cos: torch.Tensor, sin: torch.Tensor, dh: int):
    """The rope_tables reordered by llama_permutation (padded lanes stay 0)."""
    perm = llama_permutation(dh)
    c, s = cos.clone(), sin.clone()
    c[..., :dh], s[..., :dh] = cos[..., perm], sin[..., perm]
    return c, s


def pair_rotation_matrix() -> torch.Tensor:
    """T (1, 1, 32, 32) of rotary_embedding_llama: (t @ T)[2i] = -t[2i+1], [2i+1] = t[2i]."""
    t = torch.zeros(1, 1, 32, 32)
    t[..., torch.arange(1, 32, 2), torch.arange(0, 32, 2)] = -1.0
    t[..., torch.arange(0, 32, 2), torch.arange(1, 32, 2)] = 1.0
    return t


class TtRoPE:
    """Applies the per-shape tables; `__call__(t)` consumes t (1, H, S, dhp).

    kernel=True: rmat is pair_rotation_matrix(), the tables llama_tables and the q/k weights
    permuted (module doc); one rotary_embedding_llama call instead of a matmul and three
    eltwise ops.
    """

    def __init__(self, ctx, rmat, cos, sin, kernel: bool = False):
        self.ctx, self.rmat, self.cos, self.sin = ctx, rmat, cos, sin
        self.kernel = kernel

    def __call__(self, t):
        """Rotated t, where the preset keeps q/k (L1 under 'fast', else DRAM)."""
        ttnn = self.ctx.ttnn
        mem = self.ctx.precision.inner_memory(ttnn) or ttnn.DRAM_MEMORY_CONFIG
        if self.kernel:
            # HiFi4: t @ T moves bf16 lanes exactly, the products are exact bf16 x bf16
            out = ttnn.experimental.rotary_embedding_llama(
                t, self.cos, self.sin, self.rmat, is_decode_mode=False, memory_config=mem,
                compute_kernel_config=exact_kernel_config(self.ctx))
            ttnn.deallocate(t)
            return out
        r = ttnn.matmul(t, self.rmat, compute_kernel_config=self.ctx.matmul_config(),
                        memory_config=mem)
        a = ttnn.multiply(t, self.cos, memory_config=mem)
        b = ttnn.multiply(r, self.sin, memory_config=mem)
        out = ttnn.add(a, b, memory_config=mem)
        for x in (t, r, a, b):
            ttnn.deallocate(x)
        return out
