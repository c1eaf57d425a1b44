"""Loopback-only ROS 2 discovery for every process this repository starts (tests, demo, benchmarks).

Fast DDS multicasts discovery on every network card by default. `loopback_env()` returns the
variables that keep discovery and data on 127.0.0.1 / shared memory (spec/ros.md §1):
`ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`, a loopback-only Fast DDS profile with 32 MB shared-memory
segments (large best-effort images and clouds survive) and a per-run `ROS_DOMAIN_ID`. This module
must not import rclpy: it runs before it.
"""
from __future__ import annotations

import os
from pathlib import Path

PROFILE_NAME = 'fastdds_loopback.xml'


def loopback_profile_path() -> Path:
    """Locate the loopback Fast DDS profile: source checkout first, then the installed share dir."""
    here = Path(__file__).resolve()
    candidates = [here.parents[2] / 'config' / PROFILE_NAME]
    prefix = os.environ.get('VIRTUAL_ENV') or os.environ.get('AMENT_PREFIX_PATH', '').split(':')[0]
    if prefix:
        candidates.append(Path(prefix) / 'share' / 'tt_depth_ros' / 'config' / PROFILE_NAME)
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

    An already-set ROS_DOMAIN_ID is kept when `keep_domain` (a parent test run chose it).
    """
    env = loopback_env()
    if keep_domain and os.environ.get('ROS_DOMAIN_ID'):
        env['ROS_DOMAIN_ID'] = os.environ['ROS_DOMAIN_ID']
    os.environ.update(env)
    os.environ.pop('ROS_LOCALHOST_ONLY', None)  # ignored on Kilted, deprecated on Jazzy
    return env
