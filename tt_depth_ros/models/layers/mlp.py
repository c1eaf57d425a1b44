"""Transformer feed-forward networks: `Mlp` (DINOv2 / timm) and `SwiGLU` (DINOv2 ViT-g).

Both expose `hidden(x)` (everything before the output projection) and `out` (that projection), so
a block can fold its LayerScale into `out` for inference (layers/block.py).
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import torch
import torch.nn.functional as F
from torch import nn


class Mlp(nn.Module):
    """Two-layer feed-forward network; output width equals input width.

    Args:
        in_features: Token width (input and output).
        hidden_features: Hidden width (4x for ViT-L/14 and CroCo).
    """

    def __init__(self, in_features: int, hidden_features: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        # exact erf GELU, not the tanh approximation (docs/da3.md §2)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    @property
    def out(self) -> nn.Linear:
        """The output projection."""
        return self.fc2

    @property
    def first(self) -> tuple[str, nn.Linear]:
        """Name and module of the input projection."""
        return 'fc1', self.fc1

    def hidden(self, x: torch.Tensor,
               kernels: Optional[Mapping[str, Callable]] = None) -> torch.Tensor:
        """GELU(fc1(x)); `kernels['fc1']` replaces fc1 if given (layers/linear_kernels.py)."""
        return self.act((self.fc1 if kernels is None else kernels['fc1'])(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply fc1, GELU, fc2."""
        return self.fc2(self.hidden(x))


class SwiGLU(nn.Module):
    """w3(silu(z1) * z2) with (z1, z2) = first / second half of w12(x) (DINOv2 SwiGLUFFN).

    Args:
        in_features: Token width (input and output).
        hidden_features: Width of each half (4096 for DA3-GIANT: w12 is (8192, 1536)).
    """

    def __init__(self, in_features: int, hidden_features: int) -> None:
        super().__init__()
        self.w12 = nn.Linear(in_features, 2 * hidden_features)
        self.w3 = nn.Linear(hidden_features, in_features)

    @property
    def out(self) -> nn.Linear:
        """The output projection."""
        return self.w3

    @property
    def first(self) -> tuple[str, nn.Linear]:
        """Name and module of the input projection."""
        return 'w12', self.w12

    def hidden(self, x: torch.Tensor,
               kernels: Optional[Mapping[str, Callable]] = None) -> torch.Tensor:
        """silu(z1) * z2; `kernels['w12']` replaces w12 if given (layers/linear_kernels.py)."""
        z1, z2 = (self.w12 if kernels is None else kernels['w12'])(x).chunk(2, dim=-1)
        return F.silu(z1) * z2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply w12, SwiGLU gate, w3."""
        return self.w3(self.hidden(x))
