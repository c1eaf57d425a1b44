"""A node under measurement: its own process with a log file, brought up on a bag, stopped.

The benchmark (tools/bench/benchmark.py), its trajectory pass (tools/bench/trajectory.py) and the
demo (tools/demo/) run the node this way: stdout and stderr go to a log file, the replay waits
for the node's subscriptions and first output, a failure raises with the tail of that log (the
reason is in the error), and the process group is stopped as a launch system would.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from tt_depth_ros.tools.bag.replay import Primed


def start_node(cmd: list[str], log_path: Path) -> subprocess.Popen:
    """Start `cmd` in its own process group, stdout and stderr into `log_path`."""
    with log_path.open('wb') as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def stop_process(proc: subprocess.Popen, timeout_s: float = 20.0) -> int:
    """SIGINT, then SIGTERM, then SIGKILL to the process group; returns the exit code."""
    for sig, wait in ((signal.SIGINT, 0.6 * timeout_s), (signal.SIGTERM, 0.3 * timeout_s)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    return proc.returncode


def log_tail(log_path: Path, chars: int = 3000) -> str:
    """The end of a node log, for an error message."""
    return log_path.read_text(errors='replace')[-chars:]


def require(ok: bool, what: str, log_path: Path) -> None:
    """Raise RuntimeError(`what` + the node log's tail) unless `ok`."""
    if not ok:
        raise RuntimeError(f'{what}; node log tail:\n{log_tail(log_path)}')


def bring_up(player, proc: subprocess.Popen, monitor, what: str, log_path: Path,
             timeout_s: float = 300.0) -> Primed:
    """Wait for the node's subscriptions, then its first output on `monitor` (payloads cleared).

    Returns:
        The first output's latency and the stamp offset to replay with (Player.prime).
    """
    require(player.wait_for_subscribers(1, timeout_s, all_topics=True) and proc.poll() is None,
            f'{what} node did not come up within {timeout_s:g} s', log_path)
    primed = player.prime(monitor, 1, total_timeout_s=timeout_s)
    require(bool(primed.latencies_ms), f'no {what} output within {timeout_s:g} s', log_path)
    monitor.payloads.clear()
    return primed
