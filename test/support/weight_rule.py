"""Golden weight rules "rule-v1" and "rule-v1 + X1" for the tests, with a per-run disk cache.

`x1=True` adds rule X1 (test/data/da3_anyview/README.md). Full-size checkpoints take 5-15 s each
to generate and several tests (torch, ttnn stand-in, real-library dry run) need the same one: when
TT_DEPTH_ROS_RULE_CACHE names a folder (scripts/run_tests.sh makes one per `make test` and removes
it at the end), a state dict of at least CACHE_MIN_VALUES values is generated once per run and the
other tests and processes read it back. Without the variable every call generates anew.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

from tt_depth_ros.models.weight_rule import rule_v1_state_dict as _generate
from tt_depth_ros.models.weight_rule import rule_v1_tensor  # noqa: F401

CACHE_MIN_VALUES = 50_000_000


def rule_v1_state_dict(key_shapes: dict[str, tuple[int, ...]],
                       x1: bool = False) -> dict[str, np.ndarray]:
    """rule-v1 (+ X1) tensors for every (key, shape), in the given order; cached when large."""
    shapes = {k: tuple(int(s) for s in v) for k, v in key_shapes.items()}
    folder = os.environ.get('TT_DEPTH_ROS_RULE_CACHE', '').strip()
    if not folder or sum(math.prod(s) for s in shapes.values()) < CACHE_MIN_VALUES:
        return _generate(shapes, x1=x1)
    from safetensors.numpy import load_file, save_file
    digest = hashlib.sha256(json.dumps([list(shapes.items()), x1]).encode()).hexdigest()[:20]
    path = Path(folder) / f'rule_v1_{digest}.safetensors'
    if path.exists():
        loaded = load_file(str(path))
        return {k: loaded[k] for k in shapes}
    sd = _generate(shapes, x1=x1)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f'.{os.getpid()}.tmp')
    save_file(sd, str(tmp))
    os.replace(tmp, path)          # atomic: a concurrent reader sees the whole file or none
    return sd
