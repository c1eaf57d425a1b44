"""Golden weight rule "rule-v1" (shared/golden/README.md): deterministic synthetic checkpoints.

Runtime home of the rule (numpy only): the demo needs it when real weights cannot be had, and the
tests' `support.weight_rule` re-exports it. Every value depends only on the checkpoint key name and
shape, so full-size checkpoints with the real key layout can be built without any download, and the
tiny golden weights regenerate exactly.
"""
from __future__ import annotations

import math
import zlib

import numpy as np


def rule_v1_tensor(key: str, shape: tuple[int, ...]) -> np.ndarray:
    """The rule-v1 value of one checkpoint tensor (float32)."""
    shape = tuple(int(s) for s in shape)
    r = np.random.RandomState(zlib.crc32(key.encode('utf-8'))).standard_normal(size=shape)
    if key.endswith('.gamma'):
        v = 0.5 + 0.1 * r
    elif key.endswith('.weight') and len(shape) == 1:
        v = 1.0 + 0.1 * r
    elif key.endswith('.bias'):
        v = 0.02 * r
    elif key.endswith(('cls_token', 'pos_embed', 'mask_token')):
        v = 0.1 * r
    else:
        v = r / math.sqrt(math.prod(shape[1:]))
    return v.astype(np.float32)


def rule_v1_state_dict(key_shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """rule-v1 tensors for every (key, shape), in the given order."""
    return {k: rule_v1_tensor(k, s) for k, s in key_shapes.items()}
