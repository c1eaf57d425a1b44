"""Test harness: loopback-only ROS 2 for this process and every child, set before rclpy is imported.

The harness (not the nodes: they use the environment they are given) confines everything the tests
start. A unique ROS_DOMAIN_ID per test run keeps concurrent runs apart; stale Fast DDS
shared-memory files of killed processes are removed at the end of the run.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / 'test'))

from tt_depth_ros.ros.runtime.loopback import apply_loopback_env  # noqa: E402  (no rclpy import inside)

apply_loopback_env(keep_domain=False)

from support.procs import clean_stale_fastdds_shm  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    clean_stale_fastdds_shm()
