"""On-disk cache of converted device weights, keyed by checkpoint hash, precision and code.

Converting weights (tilize, bfloat8_b packing) costs seconds to tens of seconds for the large
models; ttnn's own `as_tensor(cache_file_name=...)` stores the converted host tensor as a
.tensorbin and reloads it on the next run. Our key is the directory:
`<root>/<model>-<checkpoint sha256[:16]>-<precision>-<engine code hash[:8]>/`, and inside it each
weight is named by its upload order (deterministic for a given code + config) and shape, so a
different checkpoint, precision or engine version never reads a stale file.
Root: $TT_DEPTH_ROS_TTNN_CACHE (set it to 'off' to disable), else ~/.cache/tt_depth_ros/ttnn.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Mapping, Optional

import torch


def cache_root() -> Optional[Path]:
    """The cache root, or None when disabled."""
    env = os.environ.get('TT_DEPTH_ROS_TTNN_CACHE')
    if env == 'off':
        return None
    return Path(env) if env else Path.home() / '.cache' / 'tt_depth_ros' / 'ttnn'


def state_fingerprint(sd: Mapping[str, torch.Tensor]) -> str:
    """sha256 over the sorted keys, dtypes, shapes and bytes of a state dict."""
    h = hashlib.sha256()
    for k in sorted(sd):
        t = sd[k].detach().contiguous().cpu()
        h.update(f'{k}|{t.dtype}|{tuple(t.shape)}|'.encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b'')
    return h.hexdigest()


def code_fingerprint() -> str:
    """Hash of this package's sources: a conversion change invalidates the cache."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.rglob('*.py')):   # with layers/, da3/, dust3r/
        h.update(p.read_bytes())
    return h.hexdigest()


class WeightCache:
    """Hands out stable cache file names in upload order."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.count = 0

    def next_name(self, shape) -> str:
        self.count += 1
        dims = 'x'.join(str(int(s)) for s in shape)
        return str(self.directory / f'w{self.count:05d}_{dims}')

    @property
    def files(self) -> list[Path]:
        return sorted(self.directory.glob('*.tensorbin')) if self.directory.exists() else []


def weight_cache_for(model: str, sd, precision_name: str) -> Optional[WeightCache]:
    root = cache_root()
    if root is None:
        return None
    key = f'{model}-{state_fingerprint(sd)[:16]}-{precision_name}-{code_fingerprint()[:8]}'
    return WeightCache(root / key)
