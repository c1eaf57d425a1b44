"""2-D rotary position embedding "RoPE100" as used by CroCo/DUSt3R (docs/dust3r.md §3.2).

Mirrors the behaviour of croco `models/pos_embed.py` (RoPE2D, pytorch path), written from the spec:
the head vector is split in two halves, the first rotated by the patch row (y) and the second by
the patch column (x); each half is rotated "rotate-half" style in 16-wide quarters
[u_Y | v_Y | u_X | v_X] for a 64-wide head — not interleaved pairs.
"""
from __future__ import annotations

from collections import OrderedDict

import torch


class RoPE2D:
    """Callable `rope(t, pos)` for the `Attention`/`CrossAttention` hooks.

    Angles are computed in fp32 (spec §3.2: bf16 angles cost up to 0.06 rad) and the cos/sin tables
    gathered for a positions tensor are cached while that tensor is alive (the model reuses one
    positions tensor per patch grid, so every block of a forward shares one table).

    Args:
        base: frequency base (100 for "RoPE100").
        f0: frequency multiplier F0 (1 upstream).
        cache_size: how many positions tensors to keep tables for.
    """

    def __init__(self, base: float = 100.0, f0: float = 1.0, cache_size: int = 8):
        if not base > 0:
            raise ValueError(f'RoPE2D base must be > 0, got {base}')
        self.base = float(base)
        self.f0 = float(f0)
        self._cache_size = int(cache_size)
        # id(pos) -> (pos, head_dim, cos, sin); holding `pos` keeps its id from being reused.
        self._cache: OrderedDict[int, tuple] = OrderedDict()

    def clear(self) -> None:
        """Forget every cached table (new weights, device or export mode)."""
        self._cache.clear()

    def _tables(self, pos: torch.Tensor, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        key = id(pos)
        hit = self._cache.get(key)
        if hit is not None and hit[1] == head_dim:
            self._cache.move_to_end(key)
            return hit[2], hit[3]
        d_axis = head_dim // 2  # channels per axis
        inv_freq = 1.0 / (self.base ** (torch.arange(0, d_axis, 2, dtype=torch.float32,
                                                     device=pos.device) / d_axis))
        tabs = []
        for axis in (0, 1):  # 0 = row (y) -> first half, 1 = column (x) -> second half
            p = pos[..., axis].to(torch.float32)                    # (B, N)
            ang = self.f0 * p[..., None] * inv_freq                 # (B, N, d_axis/2) fp32
            tabs.append(torch.cat((ang, ang), dim=-1))              # (B, N, d_axis)
        ang = torch.cat(tabs, dim=-1)[:, None]                      # (B, 1, N, head_dim)
        # the rotate-half sign [-1 | +1 | -1 | +1] per quarter folded into sin: (-v) s = v (-s)
        # exactly, so `__call__` needs a quarter swap only (no negation pass)
        sign = torch.ones(head_dim, dtype=torch.float32, device=pos.device)
        sign.view(2, 2, -1)[:, 0] = -1.0
        cos, sin = ang.cos(), ang.sin() * sign
        self._cache[key] = (pos, head_dim, cos, sin)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return cos, sin

    def __call__(self, t: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Rotate `t` (B, heads, N, head_dim) by integer positions `pos` (B, N, 2) = (row, col).

        Args:
            t: queries or keys, head_dim a multiple of 4.
            pos: int64 positions; batch 1 broadcasts over t's batch.

        Returns:
            The rotated tensor, same shape and dtype as `t`.
        """
        head_dim = t.shape[-1]
        if head_dim % 4:
            raise ValueError(f'RoPE2D needs head_dim % 4 == 0, got {head_dim}')
        if pos.ndim != 3 or pos.shape[-1] != 2 or pos.shape[1] != t.shape[-2]:
            raise ValueError(f'RoPE2D: pos must be (B, N={t.shape[-2]}, 2), got {tuple(pos.shape)}')
        cos, sin = self._tables(pos, head_dim)
        cos, sin = cos.to(t.dtype), sin.to(t.dtype)
        # rotate-half within each axis half: [u, v] -> [-v, u]; the sign lives in `sin`, so
        # the quarters [u_Y | v_Y | u_X | v_X] are only swapped to [v_Y | u_Y | v_X | u_X]
        # (split + cat keeps every tensor 4-D: the LiteRT GPU delegate takes no more, export/)
        u_y, v_y, u_x, v_x = t.split(head_dim // 4, dim=-1)
        rot = torch.cat((v_y, u_y, v_x, u_x), dim=-1)
        return torch.addcmul(t * cos, rot, sin)


def grid_positions(h: int, w: int, batch: int = 1, device=None) -> torch.Tensor:
    """Patch positions (batch, h*w, 2) int64 = (row, col), token n = row*w + col (spec §3.1)."""
    rows = torch.arange(h, device=device).repeat_interleave(w)
    cols = torch.arange(w, device=device).repeat(h)
    return torch.stack((rows, cols), dim=-1)[None].expand(batch, h * w, 2)
