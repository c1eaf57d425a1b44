"""Weight resolution: explicit path, HF cache (real hub layout), offline, SHA-256, download.

There is no network to the hub here: the cache is a temporary directory laid out exactly like
huggingface_hub's (blobs named by SHA-256, snapshot symlinks, refs), and the download step is
replaced by a stand-in only where a download would be attempted.
"""
import dataclasses
import hashlib
import os
import shutil
from pathlib import Path

import huggingface_hub
import numpy as np
import pytest

from support.da3_fixtures import load_png_rgb, tiny_state_dict, write_safetensors
from tt_depth_ros.engines import registry as R
from tt_depth_ros.engines import weights as W
from tt_depth_ros.engines.hub_reach import Reach
from tt_depth_ros.engines.registry import WeightSpec
from tt_depth_ros.engines.weights import WeightsUnavailableError, resolve_weights

REV = '0123456789abcdef0123456789abcdef01234567'
REPO = 'depth-anything/DA3METRIC-LARGE'


def _lay_out(cache: Path, repo: str, rev: str, src: Path, symlink: bool = True) -> Path:
    """Put `src` into a hub cache the way huggingface_hub stores a downloaded LFS file."""
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    root = cache / ('models--' + repo.replace('/', '--'))
    (root / 'blobs').mkdir(parents=True, exist_ok=True)
    (root / 'refs').mkdir(exist_ok=True)
    (root / 'snapshots' / rev).mkdir(parents=True, exist_ok=True)
    blob = root / 'blobs' / sha
    shutil.copyfile(src, blob)
    (root / 'refs' / 'main').write_text(rev)
    snap = root / 'snapshots' / rev / 'model.safetensors'
    if symlink:
        snap.symlink_to(os.path.relpath(blob, snap.parent))
    else:
        shutil.copyfile(src, snap)
    return snap


@pytest.fixture()
def tiny_file(tmp_path):
    return write_safetensors(tiny_state_dict(), tmp_path / 'tiny.safetensors')


@pytest.fixture(autouse=True)
def hub_up(monkeypatch):
    """The hub counts as reachable: the download stand-ins below replace the network.

    The offline probe itself is tested in test_hub_reach.py.
    """
    monkeypatch.setattr(W, 'hub_reach', lambda endpoint=None: Reach(True, 'stand-in:443'))


def _set_weights(monkeypatch, name: str, spec: WeightSpec) -> None:
    monkeypatch.setitem(R.MODELS, name, dataclasses.replace(R.MODELS[name], weights=spec))


@pytest.fixture()
def pinned(monkeypatch, tiny_file):
    """Registry entry for da3metric-large pinned to REV and the tiny file's hash."""
    sha = hashlib.sha256(tiny_file.read_bytes()).hexdigest()
    spec = WeightSpec(REPO, 'model.safetensors', revision=REV, sha256=sha)
    _set_weights(monkeypatch, 'da3metric-large', spec)
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    return spec


@pytest.fixture()
def no_download(monkeypatch):
    def fail(*a, **k):
        raise AssertionError('hf_hub_download must not be called')
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fail)


def test_explicit_path_wins(tmp_path, tiny_file, no_download):
    got = resolve_weights('da3metric-large', path=tiny_file, offline=True, cache_dir=tmp_path)
    assert got == tiny_file
    with pytest.raises(WeightsUnavailableError, match='does not exist'):
        resolve_weights('da3metric-large', path=tmp_path / 'nope.safetensors')


@pytest.mark.parametrize('symlink', [True, False])
def test_cache_hit_verified(tmp_path, tiny_file, pinned, no_download, symlink):
    cache = tmp_path / 'hub'
    snap = _lay_out(cache, REPO, REV, tiny_file, symlink=symlink)
    assert resolve_weights('da3metric-large', cache_dir=cache) == snap


def test_cache_from_environment(tmp_path, tiny_file, pinned, no_download, monkeypatch):
    snap = _lay_out(tmp_path / 'home' / 'hub', REPO, REV, tiny_file)
    monkeypatch.delenv('HF_HUB_CACHE', raising=False)
    monkeypatch.setenv('HF_HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    assert resolve_weights('da3metric-large') == snap


def test_sha_mismatch_is_an_error(tmp_path, tiny_file, pinned, no_download, monkeypatch):
    other = tmp_path / 'other.safetensors'
    other.write_bytes(tiny_file.read_bytes()[:-4] + b'\0\0\0\0')
    _lay_out(tmp_path / 'hub', REPO, REV, other)
    with pytest.raises(WeightsUnavailableError, match='SHA-256') as e:
        resolve_weights('da3metric-large', cache_dir=tmp_path / 'hub')
    assert 'delete it from the cache' in str(e.value)


def test_offline_not_cached_says_what_to_do(tmp_path, pinned, no_download, monkeypatch):
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    with pytest.raises(WeightsUnavailableError) as e:
        resolve_weights('da3metric-large', cache_dir=tmp_path / 'empty')
    msg = str(e.value)
    assert 'offline' in msg and f'huggingface-cli download {REPO} model.safetensors' in msg
    assert f'--revision {REV}' in msg and 'weights=' in msg


def test_other_revision_in_cache_is_not_used(tmp_path, tiny_file, pinned, no_download):
    _lay_out(tmp_path / 'hub', REPO, 'f' * 40, tiny_file)
    with pytest.raises(WeightsUnavailableError, match='not in the Hugging Face cache'):
        resolve_weights('da3metric-large', cache_dir=tmp_path / 'hub', offline=True)
    # asking for that revision explicitly finds it (the hash pins the file whatever the revision)
    got = resolve_weights('da3metric-large', revision='f' * 40, cache_dir=tmp_path / 'hub')
    assert got.is_file()


def test_download_failure_and_success(tmp_path, tiny_file, pinned, monkeypatch):
    cache = tmp_path / 'hub'

    def unreachable(*a, **k):
        raise OSError('Network is unreachable')
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', unreachable)
    with pytest.raises(WeightsUnavailableError, match='could not download.*unreachable'):
        resolve_weights('da3metric-large', cache_dir=cache, offline=False)

    calls = []

    def fake_download(repo_id, filename, revision, cache_dir, **_):
        calls.append((repo_id, filename, revision))
        return str(_lay_out(Path(cache_dir), repo_id, revision, tiny_file))
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fake_download)
    got = resolve_weights('da3metric-large', cache_dir=cache, offline=False)
    assert got.is_file() and calls == [(REPO, 'model.safetensors', REV)]


def test_names_without_published_weights(tmp_path, no_download):
    with pytest.raises(WeightsUnavailableError, match='test configuration'):
        resolve_weights('da3metric-tiny')
    with pytest.raises(WeightsUnavailableError, match='no published weights'):
        resolve_weights('da3-giant')
    # neither a revision nor a hash known: a download needs a revision (da3mono-large used to be
    # the example; it now has a published hash and downloads the default branch, tested below)
    with pytest.raises(WeightsUnavailableError, match='revision='):
        resolve_weights('da3-base', cache_dir=tmp_path, offline=False)


def test_cached_weights_reach_the_engine(tmp_path, tiny_file, pinned, no_download, monkeypatch):
    """HF cache -> read -> strict load -> engine, end to end (tiny config stands in for Large)."""
    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.models.da3.config import TINY

    cache = tmp_path / 'hub'
    _lay_out(cache, REPO, REV, tiny_file)
    monkeypatch.setenv('HF_HUB_CACHE', str(cache))
    eng = build_engine('da3metric-large', backend='torch-cpu', config=TINY)
    out = eng.infer(load_png_rgb('tiny_378x504.png'))
    assert out['depth'].shape == (378, 504) and np.isfinite(out['depth']).all()
    eng.close()


# ---------------------------------------------------------------------------------------------
# Published hash prefixes (docs/da3.md "Published weight hashes"): no revision needed
# ---------------------------------------------------------------------------------------------
MONO_REPO = 'depth-anything/DA3MONO-LARGE'


@pytest.fixture()
def prefix_only(monkeypatch, tiny_file):
    """da3mono-large as registered (no revision, a 12-digit hash prefix), the tiny file's prefix."""
    prefix = hashlib.sha256(tiny_file.read_bytes()).hexdigest()[:12]
    spec = dataclasses.replace(R.model('da3mono-large').weights, sha256=prefix)
    assert spec.revision is None and spec.sha256_is_prefix
    _set_weights(monkeypatch, 'da3mono-large', spec)
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    return spec


def _corrupt(tiny_file: Path, tmp_path: Path) -> Path:
    other = tmp_path / 'other.safetensors'
    other.write_bytes(tiny_file.read_bytes()[:-4] + b'\0\0\0\0')
    return other


def _cache_files(cache: Path) -> set[Path]:
    return {p for p in cache.rglob('*') if p.is_file() or p.is_symlink()}


def test_registry_holds_the_published_hash_prefixes():
    published = {'da3metric-large': 'bbea5b0b3ee3', 'da3mono-large': '7a799a7f95eb',
                 'da3-large-1.1': '739905c423cf', 'da3-giant-1.1': '1e47a08338ca',
                 'da3nested-giant-large-1.1': '8ebe871a022e'}
    for name, prefix in published.items():
        assert R.model(name).weights.sha256.startswith(prefix), name
    # DA3METRIC-LARGE keeps its full digest and pinned commit; the others are prefixes only
    assert not R.model('da3metric-large').weights.sha256_is_prefix
    assert R.model('da3metric-large').weights.revision is not None
    assert all(R.model(n).weights.sha256 == p and R.model(n).weights.revision is None
               for n, p in published.items() if n != 'da3metric-large')
    assert R.model('da3-small').weights.sha256 is None is R.model('da3-base').weights.sha256


@pytest.mark.parametrize('symlink', [True, False])
def test_prefix_cache_hit_on_the_default_branch(tmp_path, tiny_file, prefix_only, no_download,
                                                symlink):
    cache = tmp_path / 'hub'
    snap = _lay_out(cache, MONO_REPO, REV, tiny_file, symlink=symlink)   # refs/main -> REV
    assert resolve_weights('da3mono-large', cache_dir=cache) == snap
    assert resolve_weights('da3mono-large', cache_dir=cache, offline=True) == snap


def test_prefix_mismatch_in_cache_names_the_file_and_deletes_nothing(tmp_path, tiny_file,
                                                                     prefix_only, no_download):
    cache = tmp_path / 'hub'
    snap = _lay_out(cache, MONO_REPO, REV, _corrupt(tiny_file, tmp_path))
    before = _cache_files(cache)
    with pytest.raises(WeightsUnavailableError, match='SHA-256') as e:
        resolve_weights('da3mono-large', cache_dir=cache)
    msg = str(e.value)
    assert str(snap) in msg and prefix_only.sha256 in msg
    assert 'only the first 12 hex digits' in msg and 'delete it from the cache' in msg
    assert 'nothing was deleted' in msg
    assert _cache_files(cache) == before and all(p.is_file() for p in before)


def test_prefix_model_downloads_the_default_branch_and_verifies(tmp_path, tiny_file,
                                                                prefix_only, monkeypatch):
    calls = []

    def fake_download(repo_id, filename, revision, cache_dir, **_):
        calls.append((repo_id, filename, revision))
        return str(_lay_out(Path(cache_dir), repo_id, REV, tiny_file))
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fake_download)
    got = resolve_weights('da3mono-large', cache_dir=tmp_path / 'hub', offline=False)
    assert got.is_file() and calls == [(MONO_REPO, 'model.safetensors', 'main')]


def test_prefix_mismatch_after_download_is_an_error(tmp_path, tiny_file, prefix_only,
                                                    monkeypatch):
    other = _corrupt(tiny_file, tmp_path)
    cache = tmp_path / 'hub'
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download',
                        lambda repo_id, filename, revision, cache_dir, **_:
                        str(_lay_out(Path(cache_dir), repo_id, REV, other)))
    with pytest.raises(WeightsUnavailableError, match='only the first 12 hex digits') as e:
        resolve_weights('da3mono-large', cache_dir=cache, offline=False)
    snap = cache / 'models--depth-anything--DA3MONO-LARGE' / 'snapshots' / REV / 'model.safetensors'
    assert str(snap) in str(e.value) and snap.is_file()


def test_published_prefix_rejects_another_file(tmp_path, tiny_file, monkeypatch):
    """The real registry entry: a file that is not the authors' is refused, naming the prefix."""
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download',
                        lambda repo_id, filename, revision, cache_dir, **_:
                        str(_lay_out(Path(cache_dir), repo_id, REV, tiny_file)))
    with pytest.raises(WeightsUnavailableError, match='7a799a7f95eb') as e:
        resolve_weights('da3mono-large', cache_dir=tmp_path / 'hub', offline=False)
    assert 'model.safetensors' in str(e.value) and 'only the first 12' in str(e.value)


def test_full_hash_is_checked_whatever_the_revision(tmp_path, tiny_file, pinned, no_download):
    _lay_out(tmp_path / 'hub', REPO, 'f' * 40, _corrupt(tiny_file, tmp_path))
    with pytest.raises(WeightsUnavailableError, match='full SHA-256 is checked'):
        resolve_weights('da3metric-large', revision='f' * 40, cache_dir=tmp_path / 'hub')


# ---------------------------------------------------------------------------------------------
# DA3 family licences (engines/registry.py) and the non-commercial opt-in (engines/licence.py)
# ---------------------------------------------------------------------------------------------
def test_family_table_is_registered_with_licences():
    family = [R.model(n) for n in R.names(family='da3', published=True)]
    for m in family:
        assert m.weights.filename == 'model.safetensors'
        assert m.weights.repo_id.startswith('depth-anything/')
    nc = sorted(m.name for m in family if m.needs_licence_opt_in)
    assert nc == ['da3-giant-1.1', 'da3-large-1.1', 'da3nested-giant-large-1.1']
    assert R.model('da3-small').license == R.model('da3-base').license == 'Apache-2.0'


def test_family_without_pin_needs_a_revision(tmp_path):
    with pytest.raises(WeightsUnavailableError, match='revision='):
        resolve_weights('da3-small', cache_dir=tmp_path, offline=False)


@pytest.fixture
def anyview_tiny_file(tmp_path):
    from support.da3_fixtures import anyview_state_dict
    return write_safetensors(anyview_state_dict(), tmp_path / 'model.safetensors')


def test_non_commercial_model_needs_opt_in(anyview_tiny_file, monkeypatch):
    """DA3-LARGE-1.1 (CC-BY-NC-4.0) from a file; the tiny config stands in for its size."""
    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.engines.licence import ACCEPT_ENV, LicenseNotAcceptedError
    from tt_depth_ros.models.da3.config import ANYVIEW_TINY

    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    kw = dict(weights=str(anyview_tiny_file), backend='torch-cpu', config=ANYVIEW_TINY)
    with pytest.raises(LicenseNotAcceptedError) as e:
        build_engine('da3-large-1.1', **kw)
    msg = str(e.value)
    assert 'CC-BY-NC-4.0' in msg and 'non-commercial' in msg
    assert 'accept_license=True' in msg and ACCEPT_ENV in msg and '--accept-nc-license' in msg
    build_engine('da3-large-1.1', accept_license=True, **kw).close()
    monkeypatch.setenv(ACCEPT_ENV, '1')
    build_engine('da3-large-1.1', **kw).close()
    with pytest.raises(LicenseNotAcceptedError):   # an explicit False wins over the variable
        build_engine('da3-large-1.1', accept_license=False, **kw)
    monkeypatch.setenv(ACCEPT_ENV, '0')
    with pytest.raises(LicenseNotAcceptedError):
        build_engine('da3-large-1.1', **kw)
    build_engine('da3-small', **kw).close()         # Apache-2.0: no opt-in
