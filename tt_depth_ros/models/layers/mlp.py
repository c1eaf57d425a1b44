"""Transformer MLP (Linear - exact-erf GELU - Linear), as DINOv2 `layers/mlp.py` / timm `Mlp`."""
from __future__ import annotations

import torch
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
        # exact erf GELU, not the tanh approximation (spec/da3.md §2)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply fc1, GELU, fc2."""
        return self.fc2(self.act(self.fc1(x)))
