"""A colcon workspace with this package, built the way a user builds it, and its sourced env.

`build_workspace` copies the package (git's view: tracked plus untracked-but-not-ignored files,
without the large test data) into <ws>/src/tt_depth_ros and runs `colcon build` there.
`sourced_env` is the environment after `source <ws>/install/setup.bash` on top of the ROS install
(here the virtualenv, which holds the ROS wheels and plays the role of /opt/ros/<distro>).
`shared_workspace` is one such build per test run, shared by the tests (and pytest-xdist workers)
that need one.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def colcon_executable() -> Path:
    """The colcon of this virtualenv (scripts/bootstrap.sh installs it)."""
    return VENV_BIN / 'colcon'


def build_workspace(ws: Path, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Copy the package into `ws`/src and `colcon build` it; returns the finished process."""
    src = ws / 'src' / 'tt_depth_ros'
    files = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        if rel.startswith('test/data/') or not (ROOT / rel).is_file():
            continue
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    return subprocess.run([str(colcon_executable()), 'build', '--event-handlers',
                           'console_direct-'], cwd=ws, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, 'PATH': ros_path()})


def shared_workspace(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """(workspace, its build) built once per test run: the first test that needs it builds it.

    The workspace lies in the run's base temp folder (above the per-worker ones of pytest-xdist);
    a file lock makes the other workers wait for that one build and then reuse it, failed or not.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get('PYTEST_XDIST_WORKER'):
        base = base.parent          # <run>/popen-gw<i> -> <run>: the same for every worker
    ws, record = base / 'colcon_ws', base / 'colcon_ws.build.json'
    with open(base / 'colcon_ws.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not record.exists():
                ws.mkdir(exist_ok=True)
                proc = build_workspace(ws)
                record.write_text(json.dumps({'args': proc.args, 'returncode': proc.returncode,
                                              'stdout': proc.stdout, 'stderr': proc.stderr}))
            done = json.loads(record.read_text())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return ws, subprocess.CompletedProcess(done['args'], done['returncode'], done['stdout'],
                                           done['stderr'])


def ros_path() -> str:
    """PATH with the ROS install's executables (`ros2`, `colcon`) first."""
    return os.pathsep.join([str(VENV_BIN), os.environ.get('PATH', '')])


def sourced_env(ws: Path) -> dict[str, str]:
    """os.environ after sourcing the ROS install and then `<ws>/install/setup.bash` in bash."""
    base = dict(os.environ)
    base['PATH'] = ros_path()
    base['AMENT_PREFIX_PATH'] = base.get('AMENT_PREFIX_PATH') or sys.prefix
    out = subprocess.run(['bash', '-c', 'source "$0/install/setup.bash" && env -0', str(ws)],
                         env=base, capture_output=True, check=True, timeout=60).stdout
    env = dict(item.split('=', 1) for item in out.decode().split('\0') if '=' in item)
    env.setdefault('PYTHONUNBUFFERED', '1')
    return env
