"""Input image validation shared by preprocessing and the engines (one message for one mistake)."""
from __future__ import annotations

import numpy as np


def check_rgb_u8(image: np.ndarray, name: str = 'image') -> None:
    """Raise TypeError/ValueError unless `image` is a uint8 (H, W, 3) array."""
    if not isinstance(image, np.ndarray):
        raise TypeError(f'{name}: expected a numpy array, got {type(image).__name__}')
    if image.dtype != np.uint8:
        raise ValueError(f'{name}: expected dtype uint8 RGB, got {image.dtype}')
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f'{name}: expected shape (H, W, 3) RGB, got {image.shape}')
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f'{name}: empty image {image.shape}')
