"""DA3 checkpoint keys -> module keys and strict loading (docs/da3.md §6, golden any-view README).

The module tree uses the checkpoint names, so the mapping is a pure dict-to-dict rename: strip
`model.` (legacy `module.`), legacy `.net.` -> `.backbone.` and `output_conv2_additional.sky_mask`
-> `sky_output_conv2`.

* Metric / mono (`anyview=False`): keys of the any-view variants (camera token, QK-norm, head
  pre-norm, aux ray branch, camera encoder/decoder) are rejected by name: such a file is not a
  metric/mono model, whatever its shapes.
* Any-view (`anyview=True`), handled explicitly:
  - the tied aux LayerNorm: the file holds it once as `head.scratch.output_conv2_aux.0.2.*`; the
    aliases `.1.2.*`, `.2.2.*`, `.3.2.*` (written by a plain `state_dict()` save) are accepted only
    if equal to it, and `load_state_dict` fills every alias from `.0.2`;
  - `cam_enc.*` (only runs with given camera poses) and `gs_head.*` (3-D Gaussian head, GIANT) are
    dropped by name (UNUSED_BRANCHES): those branches are not implemented here.

Finding, downloading and hashing files is engines/weights.py's job.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

FOREIGN_PATTERNS = (
    (re.compile(r'(^|\.)camera_token$'), 'camera token (DA3 any-view)'),
    (re.compile(r'\.attn\.(q|k)_norm\.'), 'QK-norm (DA3 any-view)'),
    (re.compile(r'^head\.norm\.'), 'head pre-norm (DualDPT)'),
    (re.compile(r'_aux\.'), 'aux ray branch (DualDPT)'),
    (re.compile(r'(^|\.)cam_(enc|dec)\.'), 'camera encoder/decoder'),
)
UNUSED_BRANCHES = ('cam_enc.', 'gs_head.')
"""Any-view checkpoint branches that are not implemented (pose-conditioned inference, 3-D GS)."""
AUX_LN = 'head.scratch.output_conv2_aux.0.2.'
AUX_LN_ALIASES = tuple(f'head.scratch.output_conv2_aux.{i}.2.' for i in (1, 2, 3))
_LIST = 12


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit the model; the message names the keys."""


def _listing(keys: list[str]) -> str:
    keys = sorted(keys)
    more = f' ... (+{len(keys) - _LIST} more)' if len(keys) > _LIST else ''
    return ', '.join(keys[:_LIST]) + more


def map_state_dict(state: Mapping[str, object], anyview: bool = False) -> dict[str, torch.Tensor]:
    """Rename DA3 checkpoint keys to DA3Model keys; pure function (no I/O).

    Args:
        state: Checkpoint tensors (torch or numpy) keyed by upstream names (with `model.`).
        anyview: The checkpoint is an any-view model (module docstring).

    Returns:
        A new dict keyed like `DA3Model.state_dict()`.

    Raises:
        CheckpointError: Keys of another DA3 variant, or two keys mapping to one name.
    """
    out: dict[str, torch.Tensor] = {}
    foreign: list[str] = []
    for key, value in state.items():
        k = key
        for prefix in ('model.', 'module.'):
            if k.startswith(prefix):
                k = k[len(prefix):]
                break
        k = re.sub(r'(^|\.)net\.', r'\1backbone.', k, count=1)
        k = k.replace('output_conv2_additional.sky_mask', 'sky_output_conv2')
        if anyview and k.startswith(UNUSED_BRANCHES):
            continue
        for pattern, what in (() if anyview else FOREIGN_PATTERNS):
            if pattern.search(k):
                foreign.append(f'{key} [{what}]')
                break
        if k in out:
            raise CheckpointError(f'checkpoint has two keys for {k!r} (one is a legacy alias)')
        t = value
        if isinstance(value, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(value))
        if not isinstance(t, torch.Tensor):
            raise CheckpointError(f'checkpoint entry {key!r} is a {type(value).__name__}, '
                                  'not a tensor')
        out[k] = t
    if anyview:
        for k in [k for k in out if k.startswith(AUX_LN_ALIASES)]:
            main = AUX_LN + k.rsplit('.', 1)[1]
            if main not in out or not torch.equal(out[k], out[main]):
                raise CheckpointError(f'{k!r} is a tied alias of {main!r} (one shared LayerNorm) '
                                      'but its value differs or the main key is missing')
            del out[k]
    if foreign:
        raise CheckpointError('checkpoint is another DA3 variant, not DA3METRIC/DA3MONO-LARGE: '
                              f'unexpected keys {_listing(foreign)}')
    return out


def fit_state_dict(model: nn.Module, state: Mapping[str, object]) -> dict[str, torch.Tensor]:
    """Map a checkpoint and check it strictly against `model` without loading it.

    Works on a model built on the meta device (key/shape checks of full-size layouts, no memory).

    Returns:
        The mapped dict, keyed exactly like `model.state_dict()` (tied aliases filled).

    Raises:
        CheckpointError: Listing missing keys, unexpected keys and shape mismatches.
    """
    anyview = model.cfg.anyview
    mapped = map_state_dict(state, anyview=anyview)
    own = model.state_dict()
    if anyview:   # the shared aux LayerNorm is listed under every alias
        for k in own:
            if k.startswith(AUX_LN_ALIASES):
                main = AUX_LN + k.rsplit('.', 1)[1]
                if main in mapped:
                    mapped[k] = mapped[main]
    missing = [k for k in own if k not in mapped]
    unexpected = [k for k in mapped if k not in own]
    shapes = [f'{k} {tuple(mapped[k].shape)} (model {tuple(own[k].shape)})'
              for k in own if k in mapped and mapped[k].shape != own[k].shape]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f'{len(missing)} missing keys: {_listing(missing)}')
        if unexpected:
            parts.append(f'{len(unexpected)} unexpected keys: {_listing(unexpected)}')
        if shapes:
            parts.append(f'{len(shapes)} shape mismatches: {_listing(shapes)}')
        raise CheckpointError('checkpoint does not fit this DA3 model: ' + '; '.join(parts))
    bad = [k for k, t in mapped.items() if not t.is_floating_point()]
    if bad:
        raise CheckpointError(f'non-float tensors in checkpoint: {_listing(bad)}')
    return mapped


def load_state_dict(model: nn.Module, state: Mapping[str, object]) -> None:
    """Map and load a checkpoint strictly into `model`, casting to the model's dtypes.

    Args:
        model: A DA3Model (any config).
        state: Checkpoint tensors keyed by upstream names.

    Raises:
        CheckpointError: Listing missing keys, unexpected keys and shape mismatches.
    """
    model.load_state_dict(fit_state_dict(model, state), strict=True)  # copy_ casts dtypes


NESTED_BRANCHES = {'da3': 'model.da3.', 'da3_metric': 'model.da3_metric.'}
"""NESTED checkpoint: branch attribute -> key prefix (any-view giant, metric large)."""


def split_nested(state: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """Split a NESTED checkpoint into {'da3': ..., 'da3_metric': ...} with plain `model.` keys.

    Raises:
        CheckpointError: Keys outside both branches (e.g. a plain DA3 checkpoint).
    """
    parts: dict[str, dict[str, object]] = {b: {} for b in NESTED_BRANCHES}
    other = []
    for key, value in state.items():
        # longest prefix first: 'model.da3_metric.' also starts with 'model.da3'
        for branch, prefix in sorted(NESTED_BRANCHES.items(), key=lambda kv: -len(kv[1])):
            if key.startswith(prefix):
                parts[branch]['model.' + key[len(prefix):]] = value
                break
        else:
            other.append(key)
    if other:
        raise CheckpointError('not a DA3NESTED checkpoint: keys outside model.da3.* / '
                              f'model.da3_metric.*: {_listing(other)}')
    return parts
