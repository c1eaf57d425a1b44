"""Pre-norm transformer block, as DINOv2 `layers/block.py` / timm `Block` (no drop-path at eval).

One implementation for DA3 (metric and any-view: QK-norm, RoPE, SwiGLU for ViT-g) and DUSt3R.
`set_fused(True)` switches a block to an inference-only arithmetic (the way timm keeps one ViT
with a `fused_attn` flag), with the same mathematics:

* LayerScale folded into the output projections: ls(W h + b) = (gamma W) h + gamma b.
* The residual add fused into the GEMM: y = addmm(x, h, (gamma W)^T), then y += gamma b in place
  (memory-bound passes cost as much as a GEMM slice on a 2-core CPU).

The folded weights are non-persistent buffers: `state_dict()` stays the checkpoint layout, and they
follow `.to(dtype)` casts. Rounding differs from the unfused path at the 1e-7 relative level.

`set_fused(True, precision=...)` also picks the precision of the four matmuls
(layers/linear_kernels.py): 'float32' (the exact path above), 'bfloat16' or 'int8'. With a reduced
precision only the matmuls (and the attention between them, in bf16) change: the residual stream,
LayerNorms and LayerScale stay fp32 (LayerScale folded into the prepared weights), because a bf16
residual stream loses the accuracy gate (engines/torch/presets.py).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from tt_depth_ros.models.layers.attention import Attention, RopeFn
from tt_depth_ros.models.layers.layer_scale import LayerScale
from tt_depth_ros.models.layers.linear_kernels import MATMUL_PRECISIONS, LinearKernel
from tt_depth_ros.models.layers.mlp import Mlp, SwiGLU

FFNS = ('mlp', 'swiglu')
_FOLDED = ('_proj_wf', '_proj_bf', '_out_wf', '_out_bf')


class Block(nn.Module):
    """x += ls1(attn(norm1(x))); x += ls2(ffn(norm2(x))).

    Args:
        dim: Token width.
        num_heads: Attention heads.
        mlp_ratio: FFN hidden width / dim (ignored when `ffn_hidden` is given).
        norm_eps: LayerNorm epsilon (1e-6 in DINOv2 and CroCo blocks, docs/da3.md §2).
        layer_scale: Use LayerScale (DINOv2) or not (CroCo: `ls1`/`ls2` are Identity).
        qkv_bias: Bias on the fused qkv projection.
        qk_norm: LayerNorm on q and k per head (DA3 any-view, from `qknorm_start`).
        ffn: 'mlp' (fc1-GELU-fc2) or 'swiglu' (w12/w3, DINOv2 ViT-g).
        ffn_hidden: FFN hidden width (SwiGLU: width of each half).
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, norm_eps: float = 1e-6,
                 layer_scale: bool = True, qkv_bias: bool = True, qk_norm: bool = False,
                 ffn: str = 'mlp', ffn_hidden: Optional[int] = None) -> None:
        super().__init__()
        if ffn not in FFNS:
            raise ValueError(f'Block: ffn={ffn!r}; allowed: {FFNS}')
        hidden = int(ffn_hidden) if ffn_hidden is not None else int(dim * mlp_ratio)
        self.norm1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn = Attention(dim, num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm)
        self.ls1 = LayerScale(dim) if layer_scale else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=norm_eps)
        self.mlp = Mlp(dim, hidden) if ffn == 'mlp' else SwiGLU(dim, hidden)
        self.ls2 = LayerScale(dim) if layer_scale else nn.Identity()
        self.fused = False
        self.precision = 'float32'
        self._kernels: Optional[dict[str, LinearKernel]] = None

    @torch.no_grad()
    def set_fused(self, on: bool, precision: str = 'float32') -> 'Block':
        """Switch the inference-only folded arithmetic on (from the current weights) or off.

        Args:
            on: Folded arithmetic on or off.
            precision: Matmul precision with `on` (module docstring); 'float32' when off.
        """
        if precision not in MATMUL_PRECISIONS:
            raise ValueError(f'Block: precision={precision!r}; allowed: {MATMUL_PRECISIONS}')
        if precision != 'float32' and not on:
            raise ValueError(f'Block: precision={precision!r} needs the fused path (on=True)')
        for name in _FOLDED:
            self._buffers.pop(name, None)
            self._non_persistent_buffers_set.discard(name)
        self.fused = bool(on)
        self.precision = precision
        self._kernels = None
        if not on:
            return self

        def gamma(ls: nn.Module, w: torch.Tensor) -> torch.Tensor:
            return ls.gamma if isinstance(ls, LayerScale) else torch.ones_like(w[:, 0])

        for prefix, lin, ls in (('_proj', self.attn.proj, self.ls1), ('_out', self.mlp.out,
                                                                        self.ls2)):
            g = gamma(ls, lin.weight)
            self.register_buffer(prefix + '_wf', lin.weight * g[:, None], persistent=False)
            self.register_buffer(prefix + '_bf', lin.bias * g, persistent=False)
        if precision != 'float32':
            first, fc = self.mlp.first
            qkv = self.attn.qkv
            self._kernels = {
                'qkv': LinearKernel(qkv.weight, qkv.bias, precision),
                'proj': LinearKernel(self._proj_wf, self._proj_bf, precision),
                first: LinearKernel(fc.weight, fc.bias, precision),
                'out': LinearKernel(self._out_wf, self._out_bf, precision)}
            for name in _FOLDED:   # the kernels hold their own copies
                self._buffers.pop(name, None)
                self._non_persistent_buffers_set.discard(name)
        return self

    def _forward_kernels(self, x: torch.Tensor, rope: Optional[RopeFn],
                         pos: Optional[torch.Tensor]) -> torch.Tensor:
        # reduced-precision matmuls around an fp32 residual stream (module docstring)
        k = self._kernels
        b, n, c = x.shape
        cd = k['qkv'].compute_dtype
        a = self.attn.attend(self.norm1(x).to(cd), rope, pos, kernels=k).reshape(b * n, c)
        y = k['proj'](a).float().add_(x.reshape(b * n, c))
        h = self.mlp.hidden(self.norm2(y).to(cd), kernels=k)
        return y.add_(k['out'](h)).view(b, n, c)

    def set_export(self, on: bool) -> 'Block':
        """The attention's export-friendly forward (layers/attention.py) on or off."""
        self.attn.set_export(on)
        return self

    def _forward_fused(self, x: torch.Tensor, rope: Optional[RopeFn],
                       pos: Optional[torch.Tensor]) -> torch.Tensor:
        b, n, c = x.shape
        a = self.attn.attend(self.norm1(x), rope, pos).reshape(b * n, c)
        y = torch.addmm(x.reshape(b * n, c), a, self._proj_wf.t()).add_(self._proj_bf)
        h = self.mlp.hidden(self.norm2(y))
        y.addmm_(h, self._out_wf.t()).add_(self._out_bf)
        return y.view(b, n, c)

    def forward(self, x: torch.Tensor, rope: Optional[RopeFn] = None,
                pos: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Run one block on x (B, N, C) (not modified); rope/pos are passed to the attention."""
        if self._kernels is not None:
            return self._forward_kernels(x, rope, pos)
        if self.fused:
            return self._forward_fused(x, rope, pos)
        x = x + self.ls1(self.attn(self.norm1(x), rope=rope, pos=pos))
        return x + self.ls2(self.mlp(self.norm2(x)))
