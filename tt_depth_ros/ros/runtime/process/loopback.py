"""Loopback-only ROS 2 discovery for the processes this repository starts *for itself*.

The nodes never call this: they run in the ROS environment their user gives them. The test
harness, the demo and the benchmark (and `replay`/`record` with `--loopback`) confine what they
start to this host: `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`, a loopback-only Fast DDS profile
with 32 MB shared-memory segments (large best-effort images and clouds survive), Fast DDS as the
RMW and a per-run `ROS_DOMAIN_ID` unless one is exported. This module must not import rclpy: it
runs before it.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = 'tt_depth_ros'
PROFILE_NAME = 'fastdds_loopback.xml'


def loopback_profile_path() -> Path:
    """The loopback Fast DDS profile: the package's share directory, else the source checkout."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory(PACKAGE)) / 'config' / PROFILE_NAME)
    except (ImportError, LookupError, OSError, ValueError):
        pass  # not installed through ament (pip/editable install, or no AMENT_PREFIX_PATH)
    candidates.append(Path(__file__).resolve().parents[4] / 'config' / PROFILE_NAME)
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f'loopback Fast DDS profile {PROFILE_NAME} not found (looked in: '
        + ', '.join(str(c) for c in candidates) + '); reinstall the package')


def domain_id_for(pid: int) -> int:
    """A ROS_DOMAIN_ID in 10..99 derived from a process id (one per test run or demo)."""
    return 10 + pid % 90


def loopback_env(domain_id: int | None = None) -> dict[str, str]:
    """Variables confining ROS 2 to this host; merge into os.environ before importing rclpy."""
    profile = str(loopback_profile_path())
    return {
        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
        'FASTDDS_DEFAULT_PROFILES_FILE': profile,   # Fast DDS 3 (Kilted)
        'FASTRTPS_DEFAULT_PROFILES_FILE': profile,  # Fast DDS 2 (Jazzy)
        'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp',
        'ROS_DOMAIN_ID': str(domain_id if domain_id is not None else domain_id_for(os.getpid())),
    }


def apply_loopback_env(keep_domain: bool = True) -> dict[str, str]:
    """Force loopback-only settings into os.environ (children inherit them); returns what was set.

    Only for this repository's own tooling (tests, demo, benchmark, `--loopback`). An already-set
    ROS_DOMAIN_ID is kept when `keep_domain` (a parent test run or the user chose it).
    """
    env = loopback_env()
    if keep_domain and os.environ.get('ROS_DOMAIN_ID'):
        env['ROS_DOMAIN_ID'] = os.environ['ROS_DOMAIN_ID']
    os.environ.update(env)
    os.environ.pop('ROS_LOCALHOST_ONLY', None)  # ignored on Kilted, deprecated on Jazzy
    return env
