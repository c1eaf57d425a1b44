"""Finding model weights: explicit path -> Hugging Face cache -> download (pinned, hashed).

Resolution order for `resolve_weights(model_name, path, revision, offline)`, with the pins of
engines/registry.py:

1. An explicit `path` is used as is (it must be an existing file; it is not hashed - the caller
   chose it).
2. The Hugging Face hub cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub) at
   the requested revision, else the pinned one, else - for a model whose content hash is known -
   the default branch ('main').
3. `huggingface_hub.hf_hub_download` at that revision - unless offline (`offline=True`, or
   HF_HUB_OFFLINE set when `offline` is None), or the hub host (HF_ENDPOINT, or the proxy that
   carries it) does not resolve or connect: engines/hub_reach.py probes that once per process
   in <= 1.5 s, and the lookup then logs one line ("offline: ...") and raises at once instead
   of running huggingface_hub's retry loop (five retries with back-off, ~25 s per file).

A cached or downloaded file is checked against the registry's SHA-256 whenever one is known,
whatever the revision (the hash pins the file; cheap when the blob is named by its hash, as
huggingface_hub stores LFS files). For most DA3 models only a published 12-digit prefix of the
hash is known, and only that prefix is checked. A mismatch is an error naming the file and what to
do; nothing is deleted. Anything else raises `WeightsUnavailableError` saying what to do. Reading
a resolved file into a state dict is `read_state_dict` (safetensors; `.pth` only via
torch.load(weights_only=True)).
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Optional

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.hub_reach import hub_endpoint, hub_reach
from tt_depth_ros.engines.registry import WeightSpec

DEFAULT_BRANCH = 'main'
"""Downloaded when a model's hash is known but no revision is pinned or requested."""

_log = logging.getLogger(__name__)


class WeightsUnavailableError(RuntimeError):
    """Weights cannot be found or verified; the message says what to do."""


class CorruptCheckpointError(ValueError):
    """A weights file that cannot be parsed as a checkpoint."""


def _env_offline() -> bool:
    return os.environ.get('HF_HUB_OFFLINE', '').strip().lower() in ('1', 'true', 'yes', 'on')


def hub_cache_dir() -> Path:
    """The hub cache huggingface_hub would use, read from the environment at call time."""
    if os.environ.get('HF_HUB_CACHE'):
        return Path(os.environ['HF_HUB_CACHE'])
    if os.environ.get('HF_HOME'):
        return Path(os.environ['HF_HOME']) / 'hub'
    return Path.home() / '.cache' / 'huggingface' / 'hub'


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, streamed."""
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 22), b''):
            h.update(chunk)
    return h.hexdigest()


def _verify(path: Path, spec: WeightSpec, revision: str) -> None:
    """Check `path` against the registry hash (full digest or prefix); nothing is deleted."""
    where = f'{spec.repo_id}/{spec.filename}@{revision}'
    if spec.sha256 is None:
        _log.warning(f'{path}: no SHA-256 known for {where}; not verified')
        return
    want = spec.sha256.lower()
    blob = Path(os.path.realpath(path)).name
    got = blob if len(blob) == 64 and blob.startswith(want) else sha256_file(path)
    scope = (f'only the first {len(want)} hex digits of the SHA-256 are published and checked'
             if spec.sha256_is_prefix else 'the full SHA-256 is checked')
    if not got.startswith(want):
        raise WeightsUnavailableError(
            f'{path} has SHA-256 {got}, expected one starting with {want} for {where} ({scope}). '
            'The file is corrupt or not the published release; nothing was deleted: delete it '
            'from the cache and retry, or pass an explicit weights path to use this file as is.')
    _log.info(f'{path}: SHA-256 verified for {where} ({scope})')


def _cached(spec: WeightSpec, revision: str, cache_dir: Path) -> Optional[Path]:
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(spec.repo_id, spec.filename, cache_dir=str(cache_dir),
                                 revision=revision)
    return Path(hit) if isinstance(hit, str) and Path(hit).is_file() else None


def resolve_weights(model_name: str, path: Optional[str | os.PathLike] = None,
                    revision: Optional[str] = None, offline: Optional[bool] = None,
                    cache_dir: Optional[str | os.PathLike] = None) -> Path:
    """Find the weights file for `model_name`.

    Args:
        model_name: Registry name, e.g. 'da3metric-large'.
        path: Explicit weights file; wins over everything else.
        revision: Hub revision; default the pinned one, else the default branch when the
            file's hash is known.
        offline: Never download; None = honour HF_HUB_OFFLINE.
        cache_dir: Hub cache directory; default as huggingface_hub (HF_HUB_CACHE / HF_HOME).

    Returns:
        Path of an existing weights file.

    Raises:
        WeightsUnavailableError: With what to do (path, cache, download command).
    """
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise WeightsUnavailableError(f'weights file {p} does not exist (explicit path)')
        return p
    entry = registry.MODELS.get(model_name)
    if entry is None:
        raise WeightsUnavailableError(
            f'no published weights registered for {model_name!r} (known: '
            f'{sorted(registry.names(published=True))}); pass a weights path')
    spec = entry.weights
    if spec is None:
        raise WeightsUnavailableError(f'{model_name!r} is a test configuration without '
                                      'published weights: pass a weights path or a state_dict')
    offline = _env_offline() if offline is None else bool(offline)
    rev = revision or spec.revision or (DEFAULT_BRANCH if spec.sha256 else None)
    cache = Path(cache_dir) if cache_dir is not None else hub_cache_dir()
    how = (f'`huggingface-cli download {spec.repo_id} {spec.filename}'
           + (f' --revision {rev}`' if rev else '`'))
    if rev is not None:
        hit = _cached(spec, rev, cache)
        if hit is not None:
            _verify(hit, spec, rev)
            return hit
    if offline:
        raise WeightsUnavailableError(
            f'{spec.repo_id}/{spec.filename}@{rev or "?"} is not in the Hugging Face cache '
            f'{cache} and offline mode is on (HF_HUB_OFFLINE or offline=True). Fetch it on a '
            f'connected machine with {how} and copy the cache, or pass weights=/path/to/'
            f'{spec.filename}.')
    if rev is None:
        raise WeightsUnavailableError(
            f'{model_name}: {spec.note}. Pass revision=<commit of {spec.repo_id}> or an explicit '
            'weights path.')
    endpoint = hub_endpoint()
    reach = hub_reach(endpoint)
    if not reach.ok:
        line = (f'offline: the Hugging Face hub {endpoint} is unreachable ({reach.target}: '
                f'{reach.reason}, decided in {reach.seconds:.1f} s); using the local cache only, '
                'no download retries (HF_HUB_OFFLINE=1 skips this check)')
        if not reach.cached:
            _log.warning(line)
        raise WeightsUnavailableError(
            f'{line}. {spec.repo_id}/{spec.filename}@{rev} is not in the cache {cache}: fetch it '
            f'on a connected machine with {how} and copy the cache, or pass weights=/path/to/'
            f'{spec.filename}.')
    try:
        from huggingface_hub import hf_hub_download

        _log.info(f'downloading {spec.repo_id}/{spec.filename}@{rev} into {cache}')
        got = Path(hf_hub_download(spec.repo_id, spec.filename, revision=rev,
                                   cache_dir=str(cache), endpoint=endpoint))
    except Exception as e:  # network, auth, missing revision: all end the same way
        raise WeightsUnavailableError(
            f'could not download {spec.repo_id}/{spec.filename}@{rev}: '
            f'{type(e).__name__}: {e}. Check the network / HF token, run {how}, or pass '
            'weights=/path/to/model.safetensors.') from e
    _verify(got, spec, rev)
    return got


def read_state_dict(path: str | os.PathLike) -> dict:
    """Read a checkpoint file into a dict of CPU tensors (no key mapping).

    `.safetensors` is read with safetensors; `.pth`/`.pt`/`.bin` with torch.load(weights_only=True)
    (never unpickles code), unwrapping a top-level 'model' or 'state_dict' entry.

    Raises:
        CorruptCheckpointError: Unreadable or not a tensor mapping.
    """
    import torch

    p = Path(path)
    try:
        if p.suffix == '.safetensors':
            from safetensors.torch import load_file

            state = load_file(str(p), device='cpu')
        elif p.suffix in ('.pth', '.pt', '.bin'):
            state = torch.load(str(p), map_location='cpu', weights_only=True)
            for wrap in ('model', 'state_dict'):
                if isinstance(state, dict) and isinstance(state.get(wrap), dict):
                    state = state[wrap]
        else:
            raise CorruptCheckpointError(f'{p}: unknown checkpoint format {p.suffix!r} '
                                         '(use .safetensors or .pth)')
    except CorruptCheckpointError:
        raise
    except Exception as e:
        raise CorruptCheckpointError(
            f'{p}: cannot read checkpoint ({type(e).__name__}: {e})') from e
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CorruptCheckpointError(f'{p}: not a mapping of tensor names to tensors')
    return state
