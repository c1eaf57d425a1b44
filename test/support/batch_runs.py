"""What the tt-depth-batch tests share: the tiny run's parameters, the CLI, reading outputs back.

Used by test/tools/batch/test_batch.py, test_batch_pair.py, test_batch_relative.py (local runs)
and test_batch_ray.py (Ray runs), which compare their outputs with the same readers.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from rosbags.rosbag2 import Reader

from support.procs import ROOT, python_cmd

CFG = dict(width=64, height=48, frames=3)
PARAMS = {'model': 'da3metric-tiny', 'backend': 'torch-cpu', 'process_res': 126,
          'points_format': 'xyzrgb', 'input_reliability': 'reliable'}
#: The pair node's: the real tiny DUSt3R (rule-v1 weights, random geometry: lenient PnP so every
#: pair has a pose), unscaled poses on /tf too, DUSt3R-unit depth.
PAIR_PARAMS = {'mode': 'stereo',
               'engine_plugin': 'support.fake_engines.pair_scene:tiny_dust3r_engine',
               'network_size': 64, 'conf_threshold': 1.0, 'pnp_min_inliers': 4,
               'pnp_min_inlier_ratio': 0.0, 'publish_tf': 'always',
               'publish_unscaled_depth': True, 'input_reliability': 'reliable'}


def run_batch(*args, timeout=180, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m tt_depth_ros.tools.batch.run ARGS` as a user runs it (text output captured).

    `env` is added to this process's environment (e.g. PYTHONPATH for an engine plugin).
    """
    return subprocess.run(python_cmd('tt_depth_ros.tools.batch.run', *map(str, args)),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def bag_messages(path: Path) -> dict:
    """{topic: [(bag time, raw)]} of a bag."""
    out = {}
    with Reader(path) as r:
        for c, t, raw in r.messages():
            out.setdefault(c.topic, []).append((t, bytes(raw)))
    return out


def manifest(out: Path, name: str) -> dict:
    """The manifest of bag `name` in output directory `out`."""
    return json.loads((Path(out) / f'{name}.manifest.json').read_text())


def write_params_file(path: Path, params: dict) -> Path:
    """A node parameter file (`/**: ros__parameters:`) holding `params`."""
    lines = ['/**:', '  ros__parameters:'] + [f'    {k}: {json.dumps(v)}'
                                              for k, v in params.items()]
    path.write_text('\n'.join(lines) + '\n')
    return path


def same_payload(received: bytes, written: bytes) -> bool:
    """Byte-identical, except that the DDS transport may pad a payload with up to 3 zero bytes."""
    tail = received[len(written):]
    return received[:len(written)] == written and len(tail) < 4 and not tail.strip(b'\x00')
