"""DUSt3R checkpoint keys -> our module keys (docs/dust3r.md §6), and strict loading.

The module tree already uses the checkpoint names, so the mapping is small and pure (dict in,
dict out, no I/O): the in-memory DPT alias `...scratch.layer_rn.{K-1}.weight` (present in
training `.pth` files) becomes `...scratch.layer{K}_rn.weight`, and the unused `mask_token` is
dropped. Reading files is here too (safetensors preferred; `.pth` only with weights_only=True);
finding and downloading them is engines/weights.py's job.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from torch import nn

_ALIAS = re.compile(r'^(.*\.scratch)\.layer_rn\.([0-3])\.weight$')
IGNORED_KEYS = ('mask_token',)


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit the model; the message says which keys."""


def map_state_dict(state: Mapping[str, object]) -> dict[str, torch.Tensor]:
    """Rename checkpoint keys to module keys; pure function (no I/O).

    Args:
        state: checkpoint tensors (torch or numpy) keyed by upstream names.

    Returns:
        A new dict with aliases resolved and ignored keys removed.

    Raises:
        CheckpointError: an alias and its canonical key are both present but differ.
    """
    out: dict[str, torch.Tensor] = {}
    aliases: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        t = value
        if isinstance(value, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(value))
        if key in IGNORED_KEYS:
            continue
        m = _ALIAS.match(key)
        if m:
            aliases[f'{m.group(1)}.layer{int(m.group(2)) + 1}_rn.weight'] = t
        else:
            out[key] = t
    for key, t in aliases.items():
        if key in out:
            if out[key].shape != t.shape or not torch.equal(out[key], t):
                raise CheckpointError(f'checkpoint alias of {key} (scratch.layer_rn.N) differs '
                                      'from the tensor itself; the file is inconsistent')
        else:
            out[key] = t
    return out


def load_into(model: nn.Module, state: Mapping[str, object], assign: bool = False) -> None:
    """Map and load a checkpoint strictly into `model`.

    Args:
        model: a `Dust3r` (possibly built on the meta device when `assign` is True).
        state: checkpoint tensors keyed by upstream names.
        assign: adopt the checkpoint tensors instead of copying (no second copy in memory).

    Raises:
        CheckpointError: listing missing keys, unexpected keys and shape mismatches.
    """
    mapped = map_state_dict(state)
    own = model.state_dict()
    missing = sorted(set(own) - set(mapped))
    unexpected = sorted(set(mapped) - set(own))
    shapes = [f'{k}: checkpoint {tuple(mapped[k].shape)} vs model {tuple(own[k].shape)}'
              for k in own if k in mapped and tuple(mapped[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or shapes:
        def _fmt(keys, n=12):
            return ', '.join(keys[:n]) + (f' ... (+{len(keys) - n} more)' if len(keys) > n else '')
        raise CheckpointError(
            'DUSt3R checkpoint does not fit the model '
            f'({getattr(getattr(model, "cfg", None), "name", type(model).__name__)}): '
            f'{len(missing)} missing [{_fmt(missing)}]; {len(unexpected)} unexpected '
            f'[{_fmt(unexpected)}]; {len(shapes)} shape mismatches [{_fmt(shapes)}]. '
            'Is this the right checkpoint for this config?')
    for k, t in mapped.items():
        if not torch.is_floating_point(t):
            raise CheckpointError(f'checkpoint tensor {k} has dtype {t.dtype}; expected floats')
    model.load_state_dict(mapped, strict=True, assign=assign)


def read_checkpoint(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a `.safetensors` or `.pth` file into CPU tensors (no key mapping).

    `.pth` is read with torch.load(weights_only=True): tensors and plain containers only, never
    arbitrary objects; argparse.Namespace (the `args` entry of upstream training checkpoints) is
    the one allowed class. A `{'model': state_dict}` wrapper is unwrapped.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: unknown suffix, or the file is corrupt/truncated.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'DUSt3R checkpoint not found: {path}')
    suffix = path.suffix.lower()
    if suffix == '.safetensors':
        from safetensors.torch import load_file
        try:
            return load_file(str(path), device='cpu')
        except Exception as e:  # safetensors raises its own error types
            raise CheckpointError(f'cannot read {path} as safetensors ({e}); the file is corrupt '
                                  'or truncated: delete it and fetch it again') from e
    if suffix in ('.pth', '.pt', '.bin'):
        try:
            with torch.serialization.safe_globals([argparse.Namespace]):
                obj = torch.load(str(path), map_location='cpu', weights_only=True)
        except Exception as e:
            raise CheckpointError(f'cannot read {path} with torch.load(weights_only=True) ({e}); '
                                  'it is corrupt or holds non-tensor objects: use the '
                                  'model.safetensors file instead') from e
        if isinstance(obj, dict) and isinstance(obj.get('model'), dict):
            obj = obj['model']
        if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
            raise CheckpointError(f'{path} does not hold a state dict of tensors')
        return obj
    raise CheckpointError(f'unknown checkpoint format {path.name!r}: expected .safetensors or .pth')
