"""The `rviz:=true` launch argument: start rviz2 with the package's view config, if rviz2 exists.

RViz2 is optional (headless robots, CI): when it is not on PATH the launch logs one line saying so
and goes on with the nodes; a value other than true/false stops the launch naming the argument.
The configs are installed to share/tt_depth_ros/rviz/ (setup.py); a source checkout's rviz/
folder is used when the package is not installed through ament.
"""
from __future__ import annotations

import shutil
from pathlib import Path

PACKAGE = 'tt_depth_ros'


def rviz_config_path(name: str) -> Path:
    """share/tt_depth_ros/rviz/<name>, else <checkout>/rviz/<name>."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory(PACKAGE)) / 'rviz' / name)
    except (ImportError, LookupError, OSError, ValueError):
        pass  # not installed through ament
    candidates.append(Path(__file__).resolve().parents[4] / 'rviz' / name)
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f'RViz config {name} not found (looked in: '
                            + ', '.join(str(c) for c in candidates) + '); reinstall the package')


def rviz_actions(value: str, config_name: str) -> list:
    """[] for rviz:=false; rviz2 -d <config> when rviz2 is on PATH; else one log line."""
    from launch.actions import ExecuteProcess, LogInfo

    flag = value.strip().lower()
    if flag not in ('true', 'false'):
        raise ValueError(f'launch argument rviz:={value!r} must be true or false')
    if flag == 'false':
        return []
    config = rviz_config_path(config_name)
    exe = shutil.which('rviz2')
    if exe is None:
        return [LogInfo(msg=f'rviz:=true: rviz2 is not on PATH, so no RViz window (install '
                        f'ros-<distro>-rviz2, or open {config} elsewhere); the nodes run on')]
    return [ExecuteProcess(cmd=[exe, '-d', str(config)], name='rviz2', output='screen')]
