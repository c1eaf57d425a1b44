"""Weight resolution: explicit path, HF cache (real hub layout), offline, pins, download.

There is no network to the hub here: the cache is a temporary directory laid out exactly like
huggingface_hub's (models--org--name/ with blobs named by SHA-256, snapshots/<commit>/ links,
refs/main), and the download step is replaced by a stand-in only where a download would be
attempted.

The published files are 0.1 to 6.8 GB, so every published model is tested with a small stand-in
file (a tiny safetensors file of its own). The seam is `stand_in()`: it keeps the registry's entry
for the model (repository, file name, pinned commit: where the fake cache puts the file and what a
download must fetch) and substitutes only the expected SHA-256 and size with the stand-in's. The
resolution, size check, hashing and digest store are the real code. The registry's real digests
and sizes are checked against the docs tables (test_registry_pins_equal_the_docs_tables) and
refuse a stand-in file unmodified (test_the_registry_pins_refuse_another_file).
"""
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import numpy as np
import pytest

from support.da3_fixtures import load_png_rgb, tiny_state_dict, write_safetensors
from tt_depth_ros.engines import registry as R
from tt_depth_ros.engines import weights as W
from tt_depth_ros.engines.hub_reach import Reach
from tt_depth_ros.engines.registry import WeightSpec
from tt_depth_ros.engines.weights import WeightsUnavailableError, read_state_dict, resolve_weights

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = R.names(published=True)
OTHER_REV = 'f' * 40
MODEL = 'da3metric-large'
REPO = R.model(MODEL).weights.repo_id


def _lay_out(cache: Path, repo: str, rev: str, src: Path, symlink: bool = True,
             blob_name: str | None = None) -> Path:
    """Put `src` into a hub cache the way huggingface_hub stores a downloaded LFS file.

    `blob_name` (default: the file's SHA-256) lets a damaged file sit under the published
    file's name, as a blob that was corrupted or truncated after its download would.
    """
    blob_name = blob_name or hashlib.sha256(src.read_bytes()).hexdigest()
    root = cache / ('models--' + repo.replace('/', '--'))
    (root / 'blobs').mkdir(parents=True, exist_ok=True)
    (root / 'refs').mkdir(exist_ok=True)
    (root / 'snapshots' / rev).mkdir(parents=True, exist_ok=True)
    blob = root / 'blobs' / blob_name
    shutil.copyfile(src, blob)
    (root / 'refs' / 'main').write_text(rev)
    snap = root / 'snapshots' / rev / 'model.safetensors'
    if symlink:
        snap.symlink_to(os.path.relpath(blob, snap.parent))
    else:
        shutil.copyfile(src, snap)
    return snap


@dataclasses.dataclass
class StandIn:
    name: str
    real: WeightSpec     # the registry's pin, unmodified
    spec: WeightSpec     # the same pin with the stand-in file's SHA-256 and size
    file: Path
    state: dict


def stand_in(name: str, tmp_path: Path, monkeypatch, src: Path | None = None) -> StandIn:
    """A small file standing in for `name`'s published one; the registry expects its digest.

    Only `sha256` and `size` of the registry entry change (`size` stays None where the real pin
    has none): repository, file name and pinned commit are the registry's own.
    """
    real = R.model(name).weights
    state = {'tag': np.frombuffer(name.encode(), dtype=np.uint8).copy()}
    src = src or write_safetensors(state, tmp_path / f'{name}.safetensors')
    data = src.read_bytes()
    spec = dataclasses.replace(real, sha256=hashlib.sha256(data).hexdigest(),
                               size=len(data) if real.size is not None else None)
    monkeypatch.setitem(R.MODELS, name, dataclasses.replace(R.MODELS[name], weights=spec))
    return StandIn(name, real, spec, src, state)


@pytest.fixture(autouse=True)
def hub_up(monkeypatch):
    """The hub counts as reachable: the download stand-ins below replace the network.

    The offline probe itself is tested in test_hub_reach.py.
    """
    monkeypatch.setattr(W, 'hub_reach', lambda endpoint=None: Reach(True, 'stand-in:443'))


@pytest.fixture(autouse=True)
def digest_store(tmp_path, monkeypatch):
    """Each test remembers digests in its own store (never the user's ~/.cache)."""
    store = tmp_path / 'digests' / 'sha256.json'
    monkeypatch.setenv(W.HASH_CACHE_ENV, str(store))
    return store


@pytest.fixture()
def hashes(monkeypatch):
    """Count every file the real hash function reads."""
    calls = []
    real = W.sha256_file

    def counting(path):
        calls.append(Path(path))
        return real(path)
    monkeypatch.setattr(W, 'sha256_file', counting)
    return calls


@pytest.fixture()
def offline_hub(tmp_path, monkeypatch):
    """HF_HUB_CACHE at an empty directory, HF_HUB_OFFLINE=1: no download is possible."""
    cache = tmp_path / 'hub'
    monkeypatch.setenv('HF_HUB_CACHE', str(cache))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    return cache


@pytest.fixture()
def no_download(monkeypatch):
    def fail(*a, **k):
        raise AssertionError('hf_hub_download must not be called')
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fail)


@pytest.fixture()
def tiny_file(tmp_path):
    return write_safetensors(tiny_state_dict(), tmp_path / 'tiny.safetensors')


def _files(cache: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in cache.rglob('*') if p.is_file()}


def _messages(caplog) -> str:
    return '\n'.join(r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------------------------------------
# Every published model: by name, offline, from a fake hub cache
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('name', PUBLISHED)
def test_every_published_model_loads_by_name(name, tmp_path, monkeypatch, offline_hub,
                                             no_download, caplog):
    s = stand_in(name, tmp_path, monkeypatch)
    snap = _lay_out(offline_hub, s.real.repo_id, s.real.revision, s.file)
    caplog.set_level(logging.INFO, logger=W.__name__)
    got = resolve_weights(name)
    assert got == snap
    loaded = read_state_dict(got)
    assert list(loaded) == ['tag'] and bytes(loaded['tag'].numpy()) == name.encode()
    what = 'size and SHA-256' if s.real.size is not None else 'SHA-256 (no size published)'
    assert f'{what} verified for {s.real.repo_id}/model.safetensors@{s.real.revision}' \
        in _messages(caplog)


@pytest.mark.parametrize('damage', ['hash', 'size', 'truncated'])
@pytest.mark.parametrize('name', PUBLISHED)
def test_a_damaged_cached_file_is_refused(name, damage, tmp_path, monkeypatch, offline_hub,
                                          no_download):
    s = stand_in(name, tmp_path, monkeypatch)
    data = s.file.read_bytes()
    bad = {'hash': data[:-1] + bytes([data[-1] ^ 1]), 'size': data + b'\0' * 7,
           'truncated': data[:len(data) // 2]}[damage]
    src = tmp_path / 'damaged'
    src.write_bytes(bad)
    # the damaged blob keeps the published file's name, as a blob damaged after download does
    snap = _lay_out(offline_hub, s.real.repo_id, s.real.revision, src, blob_name=s.spec.sha256)
    before = _files(offline_hub)
    with pytest.raises(WeightsUnavailableError) as e:
        resolve_weights(name)
    msg = str(e.value)
    assert str(snap) in msg and s.spec.sha256 in msg and 'Nothing was deleted' in msg
    if damage == 'hash' or s.spec.size is None:   # without a published size the hash decides
        assert f'has SHA-256 {hashlib.sha256(bad).hexdigest()}' in msg
    else:
        assert f'is {len(bad):,} bytes, expected {s.spec.size:,} bytes' in msg
        assert 'SHA-256 was not computed' in msg
    assert _files(offline_hub) == before


@pytest.mark.parametrize('name', PUBLISHED)
def test_the_registry_pins_refuse_another_file(name, tmp_path, offline_hub, no_download,
                                               tiny_file):
    """The registry's real pins, unmodified: a file that is not the release is refused."""
    real = R.model(name).weights
    snap = _lay_out(offline_hub, real.repo_id, real.revision, tiny_file)
    with pytest.raises(WeightsUnavailableError) as e:
        resolve_weights(name)
    msg = str(e.value)
    assert str(snap) in msg and real.sha256 in msg
    assert (f'expected {real.size:,} bytes' if real.size is not None
            else f'has SHA-256 {hashlib.sha256(tiny_file.read_bytes()).hexdigest()}') in msg


@pytest.mark.parametrize('name', PUBLISHED)
def test_a_download_fetches_the_pinned_revision(name, tmp_path, monkeypatch):
    s = stand_in(name, tmp_path, monkeypatch)
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    calls = []

    def fake_download(repo_id, filename, revision, cache_dir, **_):
        calls.append((repo_id, filename, revision))
        return str(_lay_out(Path(cache_dir), repo_id, revision, s.file))
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fake_download)
    got = resolve_weights(name, cache_dir=tmp_path / 'hub')
    assert calls == [(s.real.repo_id, s.real.filename, s.real.revision)]
    assert got.parent.name == s.real.revision and got.read_bytes() == s.file.read_bytes()


# ---------------------------------------------------------------------------------------------
# The digest store: a restart does not hash again
# ---------------------------------------------------------------------------------------------
def test_a_second_start_does_not_hash_again(tmp_path, monkeypatch, offline_hub, no_download,
                                            hashes, digest_store, caplog):
    s = stand_in('da3-giant-1.1', tmp_path, monkeypatch)
    snap = _lay_out(offline_hub, s.real.repo_id, s.real.revision, s.file)
    blob = Path(os.path.realpath(snap))
    caplog.set_level(logging.INFO, logger=W.__name__)
    assert resolve_weights('da3-giant-1.1') == snap
    assert hashes == [blob]
    size, mtime_ns, digest = json.loads(digest_store.read_text())['files'][str(blob)]
    assert (size, mtime_ns, digest) == (blob.stat().st_size, blob.stat().st_mtime_ns,
                                        s.spec.sha256)
    caplog.clear()
    assert resolve_weights('da3-giant-1.1') == snap          # the next start
    assert hashes == [blob]
    assert 'digest remembered from an earlier check' in _messages(caplog)
    os.utime(blob, ns=(mtime_ns + 10**9, mtime_ns + 10**9))  # the file changed: hashed again
    assert resolve_weights('da3-giant-1.1') == snap
    assert hashes == [blob, blob]


def test_a_refused_file_is_refused_again_without_hashing(tmp_path, monkeypatch, offline_hub,
                                                         no_download, hashes):
    s = stand_in('da3mono-large', tmp_path, monkeypatch)   # no published size: hash decides
    other = tmp_path / 'other'
    other.write_bytes(b'not the release')
    _lay_out(offline_hub, s.real.repo_id, s.real.revision, other, blob_name=s.spec.sha256)
    found = hashlib.sha256(b'not the release').hexdigest()
    for _ in range(2):   # two starts
        with pytest.raises(WeightsUnavailableError, match=f'has SHA-256 {found}') as e:
            resolve_weights('da3mono-large')
        assert len(hashes) == 1
    assert 'remembered from an earlier check' in str(e.value)


def test_a_new_process_reads_the_remembered_digest(tmp_path, monkeypatch, offline_hub,
                                                   digest_store):
    """A real restart: a second Python process verifies the file without reading it."""
    s = stand_in(MODEL, tmp_path, monkeypatch)
    snap = _lay_out(offline_hub, s.real.repo_id, s.real.revision, s.file)
    assert resolve_weights(MODEL) == snap
    script = (
        'import dataclasses, sys\n'
        'from tt_depth_ros.engines import registry as R, weights as W\n'
        'name, digest, size = sys.argv[1], sys.argv[2], int(sys.argv[3])\n'
        'R.MODELS[name] = dataclasses.replace(R.MODELS[name], weights=dataclasses.replace(\n'
        '    R.MODELS[name].weights, sha256=digest, size=size))\n'
        'read = []\n'
        'W.sha256_file = lambda p: read.append(p) or "0" * 64\n'
        'print(W.resolve_weights(name), len(read))\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, '-c', script, MODEL, s.spec.sha256,
                          str(s.spec.size)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(snap), '0']


# ---------------------------------------------------------------------------------------------
# revision= overrides the pin; explicit files
# ---------------------------------------------------------------------------------------------
def test_another_revision_is_used_and_reported_not_pinned(tmp_path, monkeypatch, offline_hub,
                                                          no_download, hashes, caplog):
    s = stand_in(MODEL, tmp_path, monkeypatch)
    other = tmp_path / 'other.safetensors'
    other.write_bytes(b'a later upload')
    snap = _lay_out(offline_hub, REPO, OTHER_REV, other)
    with pytest.raises(WeightsUnavailableError, match='not in the Hugging Face cache'):
        resolve_weights(MODEL)                   # the pinned commit is not cached
    got = resolve_weights(MODEL, revision=OTHER_REV)
    assert got == snap and hashes == []
    assert (f'SHA-256 and size not pinned for this revision ({REPO}@{OTHER_REV}; the registry '
            f'pins {s.real.revision})') in _messages(caplog)


def test_revision_naming_the_pinned_commit_is_verified(tmp_path, monkeypatch, offline_hub,
                                                       no_download):
    """'main' resolves through refs/main to the pinned commit: the pin applies."""
    s = stand_in(MODEL, tmp_path, monkeypatch)
    damaged = tmp_path / 'damaged'
    damaged.write_bytes(s.file.read_bytes()[:-1])
    _lay_out(offline_hub, REPO, s.real.revision, damaged, blob_name=s.spec.sha256)
    with pytest.raises(WeightsUnavailableError, match='expected'):
        resolve_weights(MODEL, revision='main')


def test_a_revision_override_downloads_that_revision(tmp_path, monkeypatch, tiny_file, caplog):
    stand_in(MODEL, tmp_path, monkeypatch)
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    calls = []

    def fake_download(repo_id, filename, revision, cache_dir, **_):
        calls.append(revision)
        return str(_lay_out(Path(cache_dir), repo_id, revision, tiny_file))
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fake_download)
    resolve_weights(MODEL, revision=OTHER_REV, cache_dir=tmp_path / 'hub')
    assert calls == [OTHER_REV] and 'not pinned for this revision' in _messages(caplog)


def test_an_explicit_file_is_checked_and_used(tmp_path, monkeypatch, no_download, tiny_file,
                                              hashes, caplog):
    s = stand_in(MODEL, tmp_path, monkeypatch)
    caplog.set_level(logging.INFO, logger=W.__name__)
    assert resolve_weights(MODEL, path=s.file) == s.file
    assert 'size and SHA-256 verified' in _messages(caplog) and hashes == [s.file]
    # a file that is not the release (fine-tuned, converted) is the caller's choice: used, and
    # the warning names both sizes
    caplog.clear()
    assert resolve_weights(MODEL, path=tiny_file) == tiny_file
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and str(tiny_file) in warned[0] and s.spec.sha256 in warned[0]
    assert f'is {tiny_file.stat().st_size:,} bytes' in warned[0]
    assert 'Used as given because it was passed explicitly' in warned[0]
    with pytest.raises(WeightsUnavailableError, match='does not exist'):
        resolve_weights(MODEL, path=tmp_path / 'nope.safetensors')


# ---------------------------------------------------------------------------------------------
# Cache layouts, offline, download failures, names
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('symlink', [True, False])
def test_cache_hit_with_and_without_symlinks(tmp_path, monkeypatch, no_download, symlink):
    s = stand_in(MODEL, tmp_path, monkeypatch)
    cache = tmp_path / 'hub'
    snap = _lay_out(cache, REPO, s.real.revision, s.file, symlink=symlink)
    assert resolve_weights(MODEL, cache_dir=cache) == snap


def test_cache_from_hf_home(tmp_path, monkeypatch, no_download):
    s = stand_in(MODEL, tmp_path, monkeypatch)
    snap = _lay_out(tmp_path / 'home' / 'hub', REPO, s.real.revision, s.file)
    monkeypatch.delenv('HF_HUB_CACHE', raising=False)
    monkeypatch.setenv('HF_HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    assert resolve_weights(MODEL) == snap


def test_offline_not_cached_says_what_to_do(tmp_path, offline_hub, no_download):
    rev = R.model(MODEL).weights.revision
    with pytest.raises(WeightsUnavailableError) as e:
        resolve_weights(MODEL)
    msg = str(e.value)
    assert 'offline' in msg and f'huggingface-cli download {REPO} model.safetensors' in msg
    assert f'--revision {rev}' in msg and 'weights=' in msg


def test_download_failure_and_a_damaged_download(tmp_path, monkeypatch):
    s = stand_in(MODEL, tmp_path, monkeypatch)
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    cache = tmp_path / 'hub'

    def unreachable(*a, **k):
        raise OSError('Network is unreachable')
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', unreachable)
    with pytest.raises(WeightsUnavailableError, match='could not download.*unreachable'):
        resolve_weights(MODEL, cache_dir=cache, offline=False)
    damaged = tmp_path / 'damaged'
    damaged.write_bytes(s.file.read_bytes()[:10])
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download',
                        lambda repo_id, filename, revision, cache_dir, **_:
                        str(_lay_out(Path(cache_dir), repo_id, revision, damaged)))
    with pytest.raises(WeightsUnavailableError, match='is 10 bytes') as e:
        resolve_weights(MODEL, cache_dir=cache, offline=False)
    snap = cache / f'models--{REPO.replace("/", "--")}' / 'snapshots' / s.real.revision
    assert str(snap / 'model.safetensors') in str(e.value)
    assert (snap / 'model.safetensors').is_file()          # nothing deleted


def test_names_without_published_weights(no_download):
    with pytest.raises(WeightsUnavailableError, match='test configuration'):
        resolve_weights('da3metric-tiny')
    with pytest.raises(WeightsUnavailableError, match='no published weights'):
        resolve_weights('da3-giant')


def test_cached_weights_reach_the_engine(tmp_path, monkeypatch, tiny_file, offline_hub,
                                         no_download):
    """HF cache -> read -> strict load -> engine, end to end (tiny config stands in for Large)."""
    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.models.da3.config import TINY

    s = stand_in(MODEL, tmp_path, monkeypatch, src=tiny_file)
    _lay_out(offline_hub, REPO, s.real.revision, tiny_file)
    eng = build_engine(MODEL, backend='torch-cpu', config=TINY)
    out = eng.infer(load_png_rgb('tiny_378x504.png'))
    assert out['depth'].shape == (378, 504) and np.isfinite(out['depth']).all()
    eng.close()


# ---------------------------------------------------------------------------------------------
# The registry against the published tables in docs/
# ---------------------------------------------------------------------------------------------
def _doc_table(doc: str, heading: str) -> list[dict[str, str]]:
    """Rows of the first markdown table after `heading` in docs/<doc>, cells without backticks."""
    lines = (ROOT / 'docs' / doc).read_text().splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith('#'):
            break
        if line.startswith('|'):
            rows.append([c.strip().strip('`') for c in line.strip().strip('|').split('|')])
        elif rows:
            break
    header, rule, *body = rows
    assert set(''.join(rule)) <= set('-: '), (doc, heading)
    return [dict(zip(header, r)) for r in body]


def _bytes(cell: str):
    return None if cell in ('—', '-', '') else int(cell.replace(',', ''))


DOC_TABLES = [('da3.md', '## Published weight hashes'),
              ('dust3r.md', '### 1.1 Published weights')]


def test_registry_pins_equal_the_docs_tables():
    documented = {}
    for doc, heading in DOC_TABLES:
        for row in _doc_table(doc, heading):
            documented[row['model']] = row
    assert sorted(documented) == sorted(PUBLISHED)
    for name, row in documented.items():
        spec, entry = R.model(name).weights, R.model(name)
        assert (row['repository'], row['revision'], row['SHA-256 of model.safetensors'],
                _bytes(row['bytes']), row['weights licence']) == \
            (spec.repo_id, spec.revision, spec.sha256, spec.size, entry.license), name
        assert re.fullmatch('[0-9a-f]{40}', row['revision']), name
        prefix = row['published prefix']
        if prefix not in ('—', '-'):
            assert re.fullmatch('[0-9a-f]{12}', prefix) and spec.sha256.startswith(prefix), name


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
