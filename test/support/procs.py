"""Child processes for cross-process ROS tests: always reaped (terminate, then kill) and logged."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_cmd(module: str, *args: str) -> list[str]:
    """Command line running `python -m module args` with this interpreter (same venv)."""
    return [sys.executable, '-m', module, *args]


def ros_node_cmd(module: str, ns: str, params: dict, name: str) -> list[str]:
    """`python -m module --ros-args ...`: node `name` in namespace `ns` with `params`."""
    args = ['--ros-args', '-r', f'__ns:={ns}', '-r', f'__node:={name}']
    for k, v in params.items():
        if isinstance(v, bool):
            v = 'true' if v else 'false'
        elif isinstance(v, str):
            v = "'" + v + "'"       # YAML string (JSON, 'a:b' and 'true' stay strings)
        args += ['-p', f'{k}:={v}']
    return python_cmd(module, *args)


def pythonpath_env(*dirs) -> dict:
    """Env for child processes: `dirs` (test doubles) and the repo on PYTHONPATH."""
    extra = [str(d) for d in dirs] + [str(ROOT)]
    if os.environ.get('PYTHONPATH'):
        extra.append(os.environ['PYTHONPATH'])
    return {'PYTHONPATH': os.pathsep.join(extra)}


@contextlib.contextmanager
def spawn(cmd: list[str], *, env: dict | None = None, timeout: float = 20.0, name: str = 'child',
          unset: tuple = ()):
    """Start `cmd` (inheriting the loopback env), yield the Popen, reap it on exit.

    `env` adds or overrides variables, `unset` removes some (e.g. ROS_DOMAIN_ID). Output goes to a
    temp file; `proc.log_text()` returns it (for assertion messages). On exit the process gets
    SIGINT (rclpy shuts down cleanly), then SIGTERM, then SIGKILL after `timeout`.
    """
    log = tempfile.NamedTemporaryFile(prefix=f'{name}-', suffix='.log', delete=False)
    full_env = dict(os.environ)
    full_env.update(env or {})
    for key in unset:
        full_env.pop(key, None)
    full_env.setdefault('PYTHONUNBUFFERED', '1')
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=ROOT,
                            start_new_session=True)
    proc.log_path = log.name
    proc.log_text = lambda: Path(log.name).read_text(errors='replace')
    try:
        yield proc
    finally:
        stop(proc, timeout)
        log.close()


def stop(proc: subprocess.Popen, timeout: float = 20.0) -> int:
    """SIGINT, then SIGTERM, then SIGKILL; returns the exit code."""
    for sig, wait in ((signal.SIGINT, timeout * 0.5), (signal.SIGTERM, timeout * 0.25)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    return proc.returncode


def wait_for(predicate, timeout: float, interval: float = 0.05, what: str = 'condition'):
    """Poll `predicate` until it returns a truthy value; raise TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f'timed out after {timeout:.1f} s waiting for {what}')


def clean_stale_fastdds_shm() -> list[str]:
    """Remove /dev/shm Fast DDS segments and locks whose owning process is gone.

    Uses Fast DDS's own `fastdds shm clean` when the venv ships it, which knows the lock protocol.
    """
    tool = Path(sys.prefix) / 'tools' / 'fastdds' / 'fastdds.py'
    before = set(os.listdir('/dev/shm')) if os.path.isdir('/dev/shm') else set()
    if tool.is_file():
        subprocess.run([sys.executable, str(tool), 'shm', 'clean'], capture_output=True, timeout=60)
    after = set(os.listdir('/dev/shm')) if os.path.isdir('/dev/shm') else set()
    return sorted(n for n in before - after if n.startswith(('fastrtps_', 'fastdds_', 'sem.fast')))


def proc_environ(pid: int) -> dict[str, str]:
    """The environment a process was started with (/proc/<pid>/environ)."""
    raw = Path(f'/proc/{pid}/environ').read_bytes()
    return dict(item.split('=', 1) for item in raw.decode(errors='replace').split('\0')
                if '=' in item)


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (/proc/<pid>/status VmRSS)."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
    raise ValueError(f'no VmRSS for pid {pid}')


def catches_signal(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler installed for `signum` (/proc/<pid>/status SigCgt)."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('SigCgt:'):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False
