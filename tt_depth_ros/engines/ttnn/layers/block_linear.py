"""The ViT blocks' linears and LayerNorms with the structural levers' call forms.

TtBlockLinear is common.TtLinear plus what the levers of docs/ttnn-levers.md ask of a block's
q|k|v, proj, fc1 and fc2: an output memory and a program config given per call (a block-sharded
stream's shards and their 2D-multicast configs, config.BlockShard), and, built with a
`residual_gate`, the fused residual: residual + (x W^T + b) * gate in one
ttnn.experimental.dit_minimal_matmul_addcmul_fused call (Precision.fused_residual; the gate is
the LayerScale gamma or ones, uploaded float32 so the kernel multiplies it on the SFPU in fp32).
TtBlockNorm is common.TtLayerNorm taking a program config (a sharded LayerNorm's).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import TtLayerNorm, TtLinear, upload_weight
from tt_depth_ros.engines.ttnn.config import minimal_matmul_config


class TtBlockLinear(TtLinear):
    """TtLinear (its args) + residual_gate: (1, out), this linear adds a residual (fused)."""

    def __init__(self, ctx, w_t: torch.Tensor, b: torch.Tensor | None, activation=None,
                 group: str | None = None, out: str | None = None, role: str | None = None,
                 residual_gate: torch.Tensor | None = None):
        super().__init__(ctx, w_t, b, activation, group, out, role)
        # the weights' dtype against the residual's tile size: checked by Precision
        self.gate = None if residual_gate is None else upload_weight(
            ctx, residual_gate.reshape(1, -1), ctx.ttnn.float32)

    def __call__(self, x, program_config=None, rows: int | None = None, residual=None,
                 memory_config=None, grid: tuple[int, int] | None = None):
        """Apply to x (.., rows, in).

        rows: lets a program-config preset size the matmul; residual: return residual + this
        linear, fused (needs residual_gate); memory_config: instead of the output memory of
        `out`; grid: the cores of a block-sharded residual (fused only).
        """
        ttnn = self.ctx.ttnn
        mem = self.out_memory if memory_config is None else memory_config
        if residual is not None:
            return self._fused(x, residual, rows, mem, grid)
        activation = self.activation
        if program_config is None and rows and self.role and self.ctx.precision.program_configs:
            program_config = self.program_config(rows)
        if program_config is not None and activation == 'gelu':
            activation = None                  # the program configs fuse GELU (config.py)
        return ttnn.linear(x, self.weight, bias=self.bias, activation=activation,
                           dtype=self.out_dtype,
                           compute_kernel_config=self.ctx.matmul_config(self.role),
                           program_config=program_config, memory_config=mem)

    def _fused(self, x, residual, rows, memory_config, grid):
        """The residual plus (x W^T + b) * gate in one kernel (docs/ttnn-levers.md)."""
        if self.gate is None:
            raise ValueError(f'{self.role} linear: a fused residual needs residual_gate')
        ttnn = self.ctx.ttnn
        k, n = self.shape
        fp32_acc = self.ctx.precision.matmul_setting(self.role)[1]
        cfg = minimal_matmul_config(ttnn, grid or self.ctx.grid, rows, k, n, fp32_acc=fp32_acc)
        return ttnn.experimental.dit_minimal_matmul_addcmul_fused(
            x, self.weight, 1.0, residual, self.gate, self.bias, config=cfg,
            memory_config=memory_config, dtype=self.out_dtype,
            compute_kernel_config=self.ctx.matmul_config(self.role))

    def release(self) -> None:
        if self.gate is not None:
            self.ctx.ttnn.deallocate(self.gate)
            self.gate = None
        super().release()


class TtBlockNorm(TtLayerNorm):
    """TtLayerNorm; a block-sharded x takes its shards' program config and keeps its spec."""

    def __call__(self, x, residual=None, memory_config=None, program_config=None):
        """LN(x [+ residual]) into `memory_config` (None: DRAM) under `program_config`."""
        ttnn = self.ctx.ttnn
        return ttnn.layer_norm(x, epsilon=self.eps, weight=self.weight, bias=self.bias,
                               residual_input_tensor=residual,
                               memory_config=memory_config or ttnn.DRAM_MEMORY_CONFIG,
                               program_config=program_config,
                               compute_kernel_config=self.ctx.matmul_config())
