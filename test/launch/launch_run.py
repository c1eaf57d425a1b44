"""One `ros2 launch` process as a user's terminal runs it, and the ROS queries the tests make.

The launch process gets its own process group (a terminal's foreground job); `ctrl_c` signals the
whole group with SIGINT exactly as Ctrl-C in a terminal does, so the nodes get it from the terminal
and again from launch. Every process is reaped (support.procs.stop) whatever the test did.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rcl_interfaces.srv import GetParameters
from rclpy.parameter import parameter_value_to_python

from support.procs import ROOT, stop, wait_for
from tt_depth_ros.ros.runtime.process.launch_overrides import yaml_scalar


class LaunchRun:
    """`ros2 launch tt_depth_ros <launch_file> name:=value ...` in the background."""

    def __init__(self, env: dict, launch_file: str, args: dict, name: str) -> None:
        self.cmd = ['ros2', 'launch', 'tt_depth_ros', launch_file] + [
            f'{k}:={v}' for k, v in args.items()]
        self._log = tempfile.NamedTemporaryFile(prefix=f'{name}-', suffix='.log', delete=False)
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env, cwd=ROOT, start_new_session=True)

    def log(self) -> str:
        return Path(self._log.name).read_text(errors='replace')

    def ctrl_c(self, timeout: float = 30.0) -> int | None:
        """SIGINT to the process group; the exit code, or None if it outlived `timeout`."""
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        stop(self.proc, 20.0)
        self._log.close()


def assert_clean_ctrl_c(run: LaunchRun, nodes: int) -> None:
    """Ctrl-C ends launch with 0 and every node process 'finished cleanly' (no exit code -2)."""
    rc = run.ctrl_c()
    log = run.log()
    assert rc is not None, f'ros2 launch still running 30 s after Ctrl-C:\n{log}'
    assert rc == 0, f'ros2 launch exit code {rc} after Ctrl-C:\n{log}'
    died = re.findall(r'process has died \[pid \d+, exit code (-?\d+)', log)
    assert not died, f'node(s) died with exit codes {died} after Ctrl-C:\n{log}'
    assert len(re.findall(r'process has finished cleanly', log)) == nodes, log


def ros2(env: dict, *args: str, timeout: float = 60.0, attempts: int = 5) -> str:
    """Run a `ros2` CLI command (no daemon); retry while discovery has not yet seen the node."""
    for _ in range(attempts):
        proc = subprocess.run(['ros2', *args], env=env, capture_output=True, text=True,
                              timeout=timeout)
        out = proc.stdout + proc.stderr
        if 'Node not found' not in out and 'not available' not in out:
            break
        time.sleep(1.0)
    assert proc.returncode == 0, f'ros2 {" ".join(args)} -> {proc.returncode}:\n{out}'
    return proc.stdout


def get_params(probe, node: str, names: list[str], timeout: float = 10.0) -> dict:
    """Parameter values of `node` through its get_parameters service."""
    res = probe.call(GetParameters, f'{node}/get_parameters', GetParameters.Request(names=names),
                     timeout)
    assert res is not None, f'{node}/get_parameters did not answer'
    return {n: parameter_value_to_python(v) for n, v in zip(names, res.values)}


def wait_state(probe, node: str, state: str, timeout: float = 90.0, run: LaunchRun | None = None):
    """Wait until `node`'s lifecycle state is `state` (the launch log in the failure message).

    Each GetState call waits at most 5 s and is then asked again: a response the service sent
    before the client's reader was matched is lost (Kilted's rmw logs "failed to send response
    (timeout)"), and one long call would wait for it in vain.
    """
    def reached() -> bool:
        try:
            return probe.get_state(node, timeout=5.0) == state
        except TimeoutError:
            return False
    try:
        wait_for(reached, timeout, interval=0.3, what=f'{node} {state}')
    except TimeoutError as exc:
        raise AssertionError(f'{exc}\n{run.log() if run else ""}') from None


def config_with(src: Path, dst: Path, **values) -> Path:
    """A copy of the config file `src` with some `key: value` lines replaced (quoted right)."""
    text = src.read_text()
    for key, value in values.items():
        text, n = re.subn(rf'^(\s+{key}:) [^#\n]*',
                          lambda m, v=value: f'{m.group(1)} {yaml_scalar(v)} ', text, flags=re.M)
        assert n == 1, f'{src.name} has no single {key} line'
    dst.write_text(text)
    return dst
