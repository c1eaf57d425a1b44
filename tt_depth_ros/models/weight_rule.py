"""Golden weight rule "rule-v1" (docs/golden.md): deterministic synthetic checkpoints.

Runtime home of the rule (numpy only): the demo needs it when real weights cannot be had, and
devtools/rule_weights.py caches it per test run. Every value depends only on the checkpoint key
name and shape, so full-size checkpoints with the real key layout can be built without any
download, and the tiny golden weights regenerate exactly.
"""
from __future__ import annotations

import math
import zlib

import numpy as np

X1_FOV_WEIGHT = '.cam_dec.fc_fov.0.weight'
X1_FOV_BIAS = '.cam_dec.fc_fov.0.bias'


def rule_v1_tensor(key: str, shape: tuple[int, ...], x1: bool = False) -> np.ndarray:
    """The rule-v1 value of one checkpoint tensor (float32).

    `x1` adds the extra rule X1 of test/data/da3_anyview/README.md, tested first: the any-view
    camera decoder's FOV layer (Linear -> ReLU) gets 0.1 x the rule-v1 weight and a bias
    1 + 0.02 r, so the FOV does not collapse to 0 behind the ReLU (a degenerate camera).
    """
    shape = tuple(int(s) for s in shape)
    r = np.random.RandomState(zlib.crc32(key.encode('utf-8'))).standard_normal(size=shape)
    if x1 and key.endswith(X1_FOV_WEIGHT):
        v = 0.1 * r / math.sqrt(math.prod(shape[1:]))
    elif x1 and key.endswith(X1_FOV_BIAS):
        v = 1.0 + 0.02 * r
    elif key.endswith('.gamma'):
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


def rule_v1_state_dict(key_shapes: dict[str, tuple[int, ...]],
                       x1: bool = False) -> dict[str, np.ndarray]:
    """rule-v1 (+ X1 if `x1`) tensors for every (key, shape), in the given order."""
    return {k: rule_v1_tensor(k, s, x1=x1) for k, s in key_shapes.items()}
