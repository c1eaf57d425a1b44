"""Golden weight rules "rule-v1" and "rule-v1 + X1" with a per-run disk cache (tests, dev tools).

`x1=True` adds rule X1 (test/data/da3_anyview/README.md). Full-size checkpoints take 5-25 s each
to generate and several tests (torch, ttnn stand-in, real-library dry run) need the same one: when
TT_DEPTH_ROS_RULE_CACHE names a folder (scripts/run_tests.sh makes one per `make test` and removes
it at the end), a state dict of at least CACHE_MIN_VALUES values is generated once per run and the
other tests and processes read it back (one generates while the others wait). Without the
variable every call generates anew.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

from tt_depth_ros.models.weight_rule import rule_v1_state_dict as _generate

CACHE_MIN_VALUES = 50_000_000
"""Smaller state dicts (the tiny models) are generated in well under a second: not cached."""


def rule_v1_state_dict(key_shapes: dict[str, tuple[int, ...]],
                       x1: bool = False) -> dict[str, np.ndarray]:
    """rule-v1 (+ X1) tensors for every (key, shape), in the given order; cached when large."""
    shapes = {k: tuple(int(s) for s in v) for k, v in key_shapes.items()}
    folder = os.environ.get('TT_DEPTH_ROS_RULE_CACHE', '').strip()
    if not folder or sum(math.prod(s) for s in shapes.values()) < CACHE_MIN_VALUES:
        return _generate(shapes, x1=x1)
    digest = hashlib.sha256(json.dumps([list(shapes.items()), x1]).encode()).hexdigest()[:20]
    data, index, lock = (Path(folder) / f'rule_v1_{digest}{ext}'
                         for ext in ('.bin', '.json', '.lock'))
    if index.exists():
        return _read(data, json.loads(index.read_text()), shapes)
    lock.parent.mkdir(parents=True, exist_ok=True)
    # Tests on other workers often want the same checkpoint at once: one generates, the others
    # wait for it (the CPU goes to other tests) and read it back.
    with open(lock, 'a') as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if index.exists():
            return _read(data, json.loads(index.read_text()), shapes)
        sd = _generate(shapes, x1=x1)
        _write(data, index, sd)
    return sd


def _write(data: Path, index: Path, sd: dict[str, np.ndarray]) -> None:
    """Raw float32 bytes, then the index: its appearance (atomic rename) says the data is whole."""
    data.parent.mkdir(parents=True, exist_ok=True)
    tag = f'.{os.getpid()}.tmp'
    offsets, pos = {}, 0
    with open(str(data) + tag, 'wb') as f:
        for k, v in sd.items():
            a = np.ascontiguousarray(v, dtype=np.float32)
            f.write(memoryview(a).cast('B'))   # no copy of the array
            offsets[k] = pos
            pos += a.nbytes
    os.replace(str(data) + tag, data)
    Path(str(index) + tag).write_text(json.dumps(offsets))
    os.replace(str(index) + tag, index)


def _read(data: Path, offsets: dict[str, int], shapes) -> dict[str, np.ndarray]:
    """Each tensor read straight into its own array (no second copy of the file in memory)."""
    out = {}
    with open(data, 'rb') as f:
        for k, s in shapes.items():
            f.seek(offsets[k])
            out[k] = np.fromfile(f, dtype=np.float32, count=math.prod(s)).reshape(s)
    return out
