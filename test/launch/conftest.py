"""Real-launch tests: colcon build into a temporary workspace, `ros2 launch`, `ros2 lifecycle`.

They need the launch system and the `ros2` CLI (launch_ros, ros2launch, ros2cli; on this project's
machines scripts/bootstrap.sh installs them from ../shared/ros/launch). Without them the tests skip
-- except in CI (CI=true) or where the bootstrap should have installed them (../shared/ros/launch
exists): there a missing launch system is a failure, so CI always runs them.
"""
import importlib.util
import os
from pathlib import Path

import pytest

from support.colcon_ws import ROOT, shared_workspace, sourced_env

NEEDED = ('launch_ros', 'ros2launch', 'ros2cli', 'ros2lifecycle', 'ros2param',
          'composition_interfaces')


def missing_launch_system() -> list[str]:
    """The modules of the launch system / ros2 CLI this interpreter cannot import."""
    return [m for m in NEEDED if importlib.util.find_spec(m) is None]


def launch_system_required() -> bool:
    """CI, or a checkout whose bootstrap installs the launch system (scripts/bootstrap.sh)."""
    shared = Path(os.environ.get('TT_DEPTH_ROS_SHARED') or ROOT.parent / 'shared')
    return (os.environ.get('CI', '').strip().lower() in ('1', 'true', 'yes')
            or (shared / 'ros' / 'launch' / 'wheels').is_dir())


@pytest.fixture(scope='session')
def launch_env(tmp_path_factory) -> dict:
    """Environment of a user's shell after `colcon build` + `source install/setup.bash`."""
    missing = missing_launch_system()
    if missing:
        why = (f'the launch system / ros2 CLI is not importable ({", ".join(missing)}); '
               'scripts/bootstrap.sh installs it when ../shared/ros/launch exists')
        if launch_system_required():
            pytest.fail(f'CI and checkouts beside ../shared must run the real-launch tests: {why}')
        pytest.skip(why)
    ws, proc = shared_workspace(tmp_path_factory)     # one colcon build per test run
    assert proc.returncode == 0, f'colcon build failed:\n{proc.stdout}\n{proc.stderr}'
    return sourced_env(ws)


@pytest.fixture(scope='session')
def tiny_weights(tmp_path_factory) -> dict[str, str]:
    """rule-v1 checkpoints of the tiny test configs: model name -> file."""
    from tt_depth_ros.tools.bench.rule_v1_checkpoint import write_rule_v1_checkpoint
    folder = tmp_path_factory.mktemp('weights')
    return {m: str(write_rule_v1_checkpoint(m, folder / f'{m}.safetensors'))
            for m in ('da3metric-tiny', 'dust3r-tiny')}
