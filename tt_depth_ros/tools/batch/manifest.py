"""What a bag's output was made from, and the manifest beside it: for the record and for resume.

The fingerprint of one bag's job hashes the input bag's storage files (tools/bag/io.py
`bag_sha256`), the node's parameter values, the weights, the cameras and the software version;
a re-run skips a bag whose manifest says `ok` with the same fingerprint and whose output is
there. Outputs are written under `<name>.partial` and renamed when complete, and the manifest is
written last (through a temporary file), so nothing half-written ever looks done.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tt_depth_ros import __version__
from tt_depth_ros.engines import registry
from tt_depth_ros.engines.weights import sha256_file

TOOL = 'tt-depth-batch'
MANIFEST_SUFFIX = '.manifest.json'
PARTIAL_SUFFIX = '.partial'


def canonical_sha256(obj) -> str:
    """sha256 of the canonical JSON of `obj` (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def weights_identity(p: dict) -> dict:
    """Which weights the parameters select, without building the engine.

    An explicit `weights_path` is hashed; otherwise the registry's pin (repository, revision,
    published SHA-256) names them; an engine plugin (tests) is named by its spec.
    """
    if p.engine_plugin:
        return {'source': 'engine_plugin', 'sha256': canonical_sha256(
            [p.engine_plugin, p.engine_plugin_args])}
    if p.weights_path:
        path = Path(p.weights_path)
        if not path.is_file():
            raise FileNotFoundError(f"weights_path {path} is not a file; fix the parameter file's "
                                    'weights_path or leave it empty for the pinned download')
        return {'source': str(path.resolve()), 'sha256': sha256_file(path)}
    spec = registry.model(p.model).weights
    if spec is None:
        raise ValueError(f"model {p.model!r} has no published weights: set weights_path")
    return {'source': f'{spec.repo}@{p.revision or spec.revision or "default"}',
            'sha256': spec.sha256 or 'unpinned'}


def software() -> dict:
    """Versions that can change the numbers."""
    out = {'tt_depth_ros': __version__, 'python': sys.version.split()[0]}
    for pkg in ('torch', 'numpy', 'opencv-python-headless', 'rosbags'):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def fingerprint(input_sha256: str, params_sha256: str, weights: dict, cameras: list,
                soft: dict) -> str:
    """The one hash a resumed run compares."""
    return canonical_sha256({'input': input_sha256, 'params': params_sha256,
                             'weights': weights['sha256'], 'cameras': cameras,
                             'software': soft})


def now_iso() -> str:
    """UTC time, ISO 8601."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


def read_manifest(path: Path) -> dict | None:
    """A manifest, or None when missing or unreadable (then the bag is simply redone)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get('tool') == TOOL else None


def write_manifest(path: Path, doc: dict) -> None:
    """Write through a temporary file and rename: a reader never sees half a manifest."""
    tmp = path.with_name(path.name + PARTIAL_SUFFIX)
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + '\n')
    os.replace(tmp, path)
