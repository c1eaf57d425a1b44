"""The ViT blocks' linears with the fused residual lever.

TtBlockLinear is common.TtLinear (which takes an output memory and a program config per call:
a block-sharded stream's shards and their 2D-multicast configs, config.BlockShard) plus, for a
block's proj and fc2 under Precision.fused_residual, the fused residual: residual +
(x W^T + b) * gate in one ttnn.experimental.dit_minimal_matmul_addcmul_fused call (the gate is
the LayerScale gamma or ones, uploaded float32 so the kernel multiplies it on the SFPU in fp32).
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.common import TtLinear, upload_weight
from tt_depth_ros.engines.ttnn.config import minimal_matmul_config


class TtBlockLinear(TtLinear):
    """TtLinear (its args) + adds_residual: the linear adds the residual itself.

    Only under Precision.fused_residual, scaled by `gate` ((out,), None: ones).
    """

    def __init__(self, ctx, w_t: torch.Tensor, b: torch.Tensor | None, activation=None,
                 group: str | None = None, out: str | None = None, role: str | None = None,
                 adds_residual: bool = False, gate: torch.Tensor | None = None):
        super().__init__(ctx, w_t, b, activation, group, out, role)
        self.gate = None
        if adds_residual and ctx.precision.fused_residual:
            # the weights' dtype against the residual's tile size: checked by Precision
            gate = torch.ones(w_t.shape[1]) if gate is None else gate
            self.gate = upload_weight(ctx, gate.reshape(1, -1), ctx.ttnn.float32)

    def __call__(self, x, program_config=None, rows: int | None = None, memory_config=None,
                 residual=None, grid: tuple[int, int] | None = None):
        """TtLinear's call; with `residual`, residual + this linear, fused.

        program_config is then unused; grid: the cores of a block-sharded residual.
        """
        if residual is None:
            return super().__call__(x, program_config, rows, memory_config)
        mem = self.out_memory if memory_config is None else memory_config
        return self._fused(x, residual, rows, mem, grid)

    def _fused(self, x, residual, rows, memory_config, grid):
        """The residual plus (x W^T + b) * gate in one kernel (docs/ttnn-levers.md)."""
        if self.gate is None:
            raise ValueError(f'{self.role} linear: a fused residual needs adds_residual under '
                             'Precision.fused_residual')
        ttnn = self.ctx.ttnn
        k, n = self.shape
        cfg = minimal_matmul_config(ttnn, grid or self.ctx.grid, rows, k, n,
                                    fp32_acc=self.fp32_acc)
        return ttnn.experimental.dit_minimal_matmul_addcmul_fused(
            x, self.weight, 1.0, residual, self.gate, self.bias, config=cfg,
            memory_config=memory_config, dtype=self.out_dtype,
            compute_kernel_config=self.ctx.matmul_config(self.role))

    def release(self) -> None:
        if self.gate is not None:
            self.ctx.ttnn.deallocate(self.gate)
            self.gate = None
        super().release()

