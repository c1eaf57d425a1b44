"""Per-channel residual scaling (LayerScale), as DINOv2 `layers/layer_scale.py`."""
from __future__ import annotations

import torch
from torch import nn


class LayerScale(nn.Module):
    """Multiply the last dimension by a learned per-channel `gamma`.

    Args:
        dim: Channel count.
        init_value: Initial value of every gamma entry (overwritten by checkpoints).
    """

    def __init__(self, dim: int, init_value: float = 1.0) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), float(init_value)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Scale x (..., dim) by gamma."""
        return x * self.gamma
