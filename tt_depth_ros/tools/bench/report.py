"""Benchmark report pieces: machine and software description, JSON writing.

The metadata block mirrors ros2_benchmark's (name, datetime, hostname, arch, OS, dataset path and
hash, full config) and adds hardware and package versions, so two reports can be compared
knowing what produced them.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import socket
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

PACKAGES = ('tt_depth_ros', 'ros-rclpy', 'torch', 'numpy', 'opencv-python-headless', 'rosbags',
            'psutil', 'matplotlib')


def hardware_info() -> dict:
    """CPU model, core count, memory, and the accelerator if torch sees one (never imported)."""
    cpu = platform.processor() or ''
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    info = {'cpu': cpu, 'logical_cores': os.cpu_count(), 'arch': platform.machine()}
    try:
        import psutil
        info['memory_gb'] = round(psutil.virtual_memory().total / 2**30, 1)
        info['load_average_1m'] = os.getloadavg()[0]
    except (ImportError, OSError):
        pass
    return info


def software_info() -> dict:
    """Python and package versions (None when a package is not installed)."""
    out = {'python': sys.version.split()[0]}
    for p in PACKAGES:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = None
    return out


def metadata(name: str) -> dict:
    """ros2_benchmark-style run metadata."""
    uname = platform.uname()
    return {'name': name, 'datetime': datetime.datetime.now(datetime.timezone.utc).isoformat(),
            'hostname': socket.gethostname(), 'arch': uname.machine,
            'os': f'{uname.system} {uname.release}',
            'ros_domain_id': os.environ.get('ROS_DOMAIN_ID')}


def _clean(x):
    """JSON-safe copy: NaN/Inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, Path):
        return str(x)
    return x


def write_json(report: dict, path: Path) -> Path:
    """Write the report (NaN/Inf become null, so any JSON reader accepts it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_clean(report), indent=2, sort_keys=False) + '\n')
    return path
