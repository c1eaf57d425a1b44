"""Weight resolution: explicit path, HF cache (real hub layout), offline, SHA-256, download.

There is no network to the hub here: the cache is a temporary directory laid out exactly like
huggingface_hub's (blobs named by SHA-256, snapshot symlinks, refs), and the download step is
replaced by a stand-in only where a download would be attempted.
"""
import hashlib
import os
import shutil
from pathlib import Path

import huggingface_hub
import numpy as np
import pytest

from support.da3_fixtures import load_png_rgb, tiny_state_dict, write_safetensors
from tt_depth_ros.engines import weights as W
from tt_depth_ros.engines.weights import WeightSpec, WeightsUnavailableError, resolve_weights

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


@pytest.fixture()
def pinned(monkeypatch, tiny_file):
    """Registry entry for da3metric-large pinned to REV and the tiny file's hash."""
    sha = hashlib.sha256(tiny_file.read_bytes()).hexdigest()
    spec = WeightSpec(REPO, 'model.safetensors', revision=REV, sha256=sha)
    monkeypatch.setitem(W.REGISTRY, 'da3metric-large', spec)
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
    # asking for that revision explicitly finds it (unverified: not the pinned revision)
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

    def fake_download(repo_id, filename, revision, cache_dir):
        calls.append((repo_id, filename, revision))
        return str(_lay_out(Path(cache_dir), repo_id, revision, tiny_file))
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fake_download)
    got = resolve_weights('da3metric-large', cache_dir=cache, offline=False)
    assert got.is_file() and calls == [(REPO, 'model.safetensors', REV)]


def test_names_without_published_weights(tmp_path):
    with pytest.raises(WeightsUnavailableError, match='test configuration'):
        resolve_weights('da3metric-tiny')
    with pytest.raises(WeightsUnavailableError, match='no published weights'):
        resolve_weights('da3-giant')
    with pytest.raises(WeightsUnavailableError, match='revision='):
        resolve_weights('da3mono-large', cache_dir=tmp_path, offline=False)


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
# DA3 family table (engines/da3_family_weights.py) and the non-commercial licence opt-in
# ---------------------------------------------------------------------------------------------
def test_family_table_is_registered_with_licences():
    import tt_depth_ros.engines.torch.da3  # noqa: F401  (registers the family)
    from tt_depth_ros.engines.da3_family_weights import FAMILY

    for name, m in FAMILY.items():
        assert W.REGISTRY[name] is m.spec and m.spec.filename == 'model.safetensors'
        assert m.spec.repo_id.startswith('depth-anything/')
    nc = sorted(n for n, m in FAMILY.items() if m.non_commercial)
    assert nc == ['da3-giant-1.1', 'da3-large-1.1', 'da3nested-giant-large-1.1']
    assert FAMILY['da3-small'].license == FAMILY['da3-base'].license == 'Apache-2.0'


def test_family_without_pin_needs_a_revision(tmp_path):
    import tt_depth_ros.engines.torch.da3  # noqa: F401

    with pytest.raises(WeightsUnavailableError, match='revision='):
        resolve_weights('da3-small', cache_dir=tmp_path, offline=False)


@pytest.fixture
def anyview_tiny_file(tmp_path):
    from support.da3_fixtures import anyview_state_dict
    return write_safetensors(anyview_state_dict(), tmp_path / 'model.safetensors')


def test_non_commercial_model_needs_opt_in(anyview_tiny_file, monkeypatch):
    """DA3-LARGE-1.1 (CC-BY-NC-4.0) from a file; the tiny config stands in for its size."""
    from tt_depth_ros.engines.da3_family_weights import ACCEPT_ENV, LicenseNotAcceptedError
    from tt_depth_ros.engines.factory import build_engine
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
