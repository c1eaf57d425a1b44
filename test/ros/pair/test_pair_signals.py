"""Ctrl-C during the pair node's engine build ends it promptly with exit 0, as for the depth node.

A DA3 any-view model is built through engines.factory.build_engine with the node's view count and
its cancellation token (ros/runtime/engine_builder.py); the factory is replaced by a 60 s
cancellable stand-in (test/support/fake_engines/slow_anyview_factory.py), so SIGINT must cancel
the configure, not wait for the uninterruptible-transition fallback of
ros/runtime/process/node_runner.py. Mirrors
test/ros/runtime/test_runtime_signals.py::test_signal_during_a_cancellable_slow_configure_aborts_it.
"""
import os
import signal
import time

import pytest

from support.procs import ros_node_cmd, spawn, wait_for
from support.rosutil import child_env

pytestmark = pytest.mark.ros


def test_signal_during_an_anyview_pair_engine_build_cancels_it():
    params = {'model': 'da3-anyview-tiny', 'mode': 'stereo'}
    cmd = ros_node_cmd('support.fake_engines.slow_anyview_factory', '/pair_slow', params,
                       'pair_node')
    with spawn(cmd, env=child_env(), name='pair_slow') as proc:
        wait_for(lambda: 'slow factory build: started' in proc.log_text(), 60,
                 what='build started')
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        rc = proc.wait(10)
        elapsed = time.monotonic() - t0
        log = proc.log_text()
        assert rc == 0, log
        assert elapsed < 3.0, log
        assert 'da3-anyview-tiny, num_views=2, cancellable=True' in log, log
        assert 'configure cancelled' in log and 'released what it acquired' in log, log
        assert 'autostart: activating' not in log
