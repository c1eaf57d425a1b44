"""Finding model weights: explicit path -> Hugging Face cache -> download, checked against the pin.

Resolution order for `resolve_weights(model_name, path, revision, offline)`, with the pins of
engines/registry.py (repository, commit, full SHA-256 and size of the file at that commit):

1. An explicit `path` (it must be an existing file).
2. The Hugging Face hub cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub) at
   the requested revision, else the pinned one.
3. `huggingface_hub.hf_hub_download` at that revision - unless offline (`offline=True`, or
   HF_HUB_OFFLINE set when `offline` is None), or the hub host (HF_ENDPOINT, or the proxy that
   carries it) does not resolve or connect: engines/hub_reach.py probes that once per process
   in <= 1.5 s, and the lookup then logs one line ("offline: ...") and raises at once instead
   of running huggingface_hub's retry loop (five retries with back-off, ~25 s per file).

Checking a file against its pin: the size first (a truncated or foreign file is refused without
reading it), then the SHA-256. Hashing a 5 GB file takes seconds, so the digest is remembered on
disk by (real path, size, mtime) (`file_sha256`, `hash_cache_file`): a restart hashes nothing
unless the file changed. A cached or downloaded file that does not match is an error naming the
file, the expected and the found size or digest; nothing is deleted. An explicit file is checked
the same way, but a mismatch is a warning with the same content and the file is used: an
explicit path is how a fine-tuned or converted checkpoint is loaded. The pin describes one
commit: a file from another revision (`revision=` overrides the pin) is reported as "not pinned
for this revision" and used unchecked. Anything else raises `WeightsUnavailableError` saying what
to do. Reading a resolved file into a state dict is `read_state_dict` (safetensors; `.pth` only
via torch.load(weights_only=True)).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Optional

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.hub_reach import hub_endpoint, hub_reach
from tt_depth_ros.engines.registry import WeightSpec

HASH_CACHE_ENV = 'TT_DEPTH_ROS_HASH_CACHE'
"""File that remembers digests ('off' = remember nothing); default
~/.cache/tt_depth_ros/sha256.json."""

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


def hash_cache_file() -> Optional[Path]:
    """Where digests are remembered (HASH_CACHE_ENV at call time), or None when disabled."""
    env = os.environ.get(HASH_CACHE_ENV, '').strip()
    if env == 'off':
        return None
    return Path(env) if env else Path.home() / '.cache' / 'tt_depth_ros' / 'sha256.json'


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, streamed: always reads the whole file (see `file_sha256`)."""
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 22), b''):
            h.update(chunk)
    return h.hexdigest()


def _read_digests(store: Path) -> dict:
    try:
        files = json.loads(store.read_text()).get('files', {})
    except (OSError, ValueError, AttributeError):
        return {}   # absent, unreadable or not ours: start afresh (costs one hash per file)
    return files if isinstance(files, dict) else {}


def _remember(store: Path, real: str, size: int, mtime_ns: int, digest: str) -> None:
    """Add one digest to the store: re-read, prune vanished files, replace atomically."""
    files = {k: v for k, v in _read_digests(store).items() if os.path.exists(k)}
    files[real] = [size, mtime_ns, digest]
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix='.sha256-', dir=store.parent)
        with os.fdopen(fd, 'w') as f:
            json.dump({'format': 1, 'files': files}, f, indent=0)
        os.replace(tmp, store)
    except OSError as e:   # a read-only home costs a re-hash next time, nothing else
        _log.warning(f'could not remember the SHA-256 of {real} in {store}: {e}')


def file_sha256(path: str | os.PathLike) -> tuple[str, bool]:
    """SHA-256 of a file, remembered on disk by (real path, size, mtime).

    The store (`hash_cache_file`) trusts that a file whose size and modification time are
    unchanged has unchanged content, as build tools do; a rewritten file gets a new mtime.

    Returns:
        (hex digest, whether it came from the store rather than from reading the file).
    """
    real = os.path.realpath(path)
    before = os.stat(real)
    store = hash_cache_file()
    if store is not None:
        hit = _read_digests(store).get(real)
        if (isinstance(hit, list) and len(hit) == 3
                and hit[:2] == [before.st_size, before.st_mtime_ns]):
            return str(hit[2]), True
    digest = sha256_file(real)
    after = os.stat(real)
    if store is not None and (after.st_size, after.st_mtime_ns) == (before.st_size,
                                                                     before.st_mtime_ns):
        _remember(store, real, before.st_size, before.st_mtime_ns, digest)
    return digest, False


def _mismatch(path: Path, spec: WeightSpec, where: str) -> Optional[str]:
    """Why `path` is not the pinned file (size first, then hash), or None when it is."""
    size = os.stat(path).st_size
    if spec.size is not None and size != spec.size:
        what = ('truncated or not the published file' if size < spec.size
                else 'not the published file')
        return (f'{path} is {size:,} bytes, expected {spec.size:,} bytes with SHA-256 '
                f'{spec.sha256} for {where}: {what} (its SHA-256 was not computed: the size '
                'already differs)')
    if spec.sha256 is None:
        return None
    got, remembered = file_sha256(path)
    if got != spec.sha256:
        return (f'{path} has SHA-256 {got}, expected {spec.sha256} for {where} ({size:,} '
                f'bytes): corrupt or not the published file'
                + (' (digest remembered from an earlier check of this unchanged file)'
                   if remembered else ''))
    what = 'size and SHA-256' if spec.size is not None else 'SHA-256 (no size published)'
    _log.info(f'{path}: {what} verified for {where}'
              + (' (digest remembered from an earlier check)' if remembered else ''))
    return None


def _snapshot_commit(path: Path, spec: WeightSpec) -> Optional[str]:
    """The commit a hub-cache file belongs to: .../snapshots/<commit>/<filename>."""
    parts = Path(path).parts
    depth = len(Path(spec.filename).parts) + 2
    if len(parts) >= depth and parts[-depth] == 'snapshots':
        return parts[-depth + 1]
    return None


def _check(path: Path, spec: WeightSpec, revision: Optional[str], explicit: bool) -> None:
    """Check `path` against the pin when it is the pinned commit's file; nothing is deleted.

    Args:
        path: The file.
        spec: The model's pin.
        revision: The commit (or the revision the caller named) the file comes from; None for
            an explicit file without `revision=`, which is checked against the pin.
        explicit: The caller passed the file: a mismatch is a warning, not an error.
    """
    if revision is not None and revision != spec.revision:
        _log.warning(f'{path}: SHA-256 and size not pinned for this revision ({spec.repo_id}@'
                     f'{revision}; the registry pins {spec.revision}): the file is used '
                     'unchecked')
        return
    where = f'{spec.repo_id}/{spec.filename}@{spec.revision}'
    if spec.sha256 is None and spec.size is None:
        _log.warning(f'{path}: no SHA-256 or size known for {where}; not verified')
        return
    why = _mismatch(path, spec, where)
    if why is None:
        return
    if explicit:
        _log.warning(f'{why}. Used as given because it was passed explicitly (a fine-tuned or '
                     'converted checkpoint is the caller\'s choice).')
        return
    blob = os.path.realpath(path)
    also = f' and its blob {blob}' if blob != str(path) else ''
    raise WeightsUnavailableError(
        f'{why}. Nothing was deleted: delete {path}{also} from the Hugging Face cache and run '
        f'again to download it anew, or pass weights=/path/to/{spec.filename} to use another '
        'file.')


def _cached(spec: WeightSpec, revision: str, cache_dir: Path) -> Optional[Path]:
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(spec.repo_id, spec.filename, cache_dir=str(cache_dir),
                                 revision=revision)
    return Path(hit) if isinstance(hit, str) and Path(hit).is_file() else None


def resolve_weights(model_name: str, path: Optional[str | os.PathLike] = None,
                    revision: Optional[str] = None, offline: Optional[bool] = None,
                    cache_dir: Optional[str | os.PathLike] = None) -> Path:
    """Find the weights file for `model_name` and check it against the registry's pin.

    Args:
        model_name: Registry name, e.g. 'da3metric-large'.
        path: Explicit weights file; wins over everything else.
        revision: Hub revision; default the pinned commit. Another revision is used unchecked
            (logged as "not pinned for this revision").
        offline: Never download; None = honour HF_HUB_OFFLINE.
        cache_dir: Hub cache directory; default as huggingface_hub (HF_HUB_CACHE / HF_HOME).

    Returns:
        Path of an existing weights file.

    Raises:
        WeightsUnavailableError: With what to do (path, cache, download command), or a cached
            or downloaded file that is not the pinned one (size or SHA-256).
    """
    entry = registry.MODELS.get(model_name)
    spec = entry.weights if entry is not None else None
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise WeightsUnavailableError(f'weights file {p} does not exist (explicit path)')
        if spec is not None:
            _check(p, spec, revision, explicit=True)
        return p
    if entry is None:
        raise WeightsUnavailableError(
            f'no published weights registered for {model_name!r} (known: '
            f'{sorted(registry.names(published=True))}); pass a weights path')
    if spec is None:
        raise WeightsUnavailableError(f'{model_name!r} is a test configuration without '
                                      'published weights: pass a weights path or a state_dict')
    offline = _env_offline() if offline is None else bool(offline)
    rev = revision or spec.revision
    cache = Path(cache_dir) if cache_dir is not None else hub_cache_dir()
    how = (f'`huggingface-cli download {spec.repo_id} {spec.filename}'
           + (f' --revision {rev}`' if rev else '`'))
    if rev is not None:
        hit = _cached(spec, rev, cache)
        if hit is not None:
            _check(hit, spec, _snapshot_commit(hit, spec) or rev, explicit=False)
            return hit
    if offline:
        raise WeightsUnavailableError(
            f'{spec.repo_id}/{spec.filename}@{rev or "?"} is not in the Hugging Face cache '
            f'{cache} and offline mode is on (HF_HUB_OFFLINE or offline=True). Fetch it on a '
            f'connected machine with {how} and copy the cache, or pass weights=/path/to/'
            f'{spec.filename}.')
    if rev is None:
        raise WeightsUnavailableError(
            f'{model_name}: no revision of {spec.repo_id} is pinned. Pass revision=<commit of '
            f'{spec.repo_id}> or an explicit weights path.')
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

        _log.info(f'downloading {spec.repo_id}/{spec.filename}@{rev} into {cache}'
                  + (f' ({spec.size / 1e9:.2f} GB)' if spec.size else ''))
        got = Path(hf_hub_download(spec.repo_id, spec.filename, revision=rev,
                                   cache_dir=str(cache), endpoint=endpoint))
    except Exception as e:  # network, auth, missing revision: all end the same way
        raise WeightsUnavailableError(
            f'could not download {spec.repo_id}/{spec.filename}@{rev}: '
            f'{type(e).__name__}: {e}. Check the network / HF token, run {how}, or pass '
            'weights=/path/to/model.safetensors.') from e
    _check(got, spec, _snapshot_commit(got, spec) or rev, explicit=False)
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
