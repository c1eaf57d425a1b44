"""50 configure/activate/deactivate/cleanup cycles in-process (trigger_*): no leaked threads/fds.

Each active phase pushes a frame through the real executor-side callback and waits until the
worker has published it, so every cycle really starts and stops the worker, creates and destroys
publishers, subscriptions, the diagnostics timer and the engine.
"""
import os
import threading

import numpy as np
import pytest
import rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import Header

from support.procs import wait_for
from support.rosutil import KNOWN_ENGINE
from tt_depth_ros.ros.msgs.depth import rgb_image_msg

pytestmark = pytest.mark.ros
OK = TransitionCallbackReturn.SUCCESS


def _fds() -> int:
    return len(os.listdir('/proc/self/fd'))


def test_fifty_cycles_no_leaks():
    from tt_depth_ros.ros.depth.node import DepthNode
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = DepthNode('cycle_node', context=ctx, parameter_overrides=[
        Parameter('engine_plugin', value=KNOWN_ENGINE),
        Parameter('camera_info_mode', value='default_focal'),
        Parameter('autostart', value=False)])
    try:
        baseline = None
        for i in range(50):
            assert node.trigger_configure() == OK
            engine = node.engine
            assert node.trigger_activate() == OK
            assert node.worker.running
            published = node.stats.published
            header = Header(frame_id='cam')
            header.stamp.sec = i
            node._on_image(node.cameras[0], rgb_image_msg(np.zeros((48, 64, 3), np.uint8), header))
            wait_for(lambda n=published: node.stats.published > n, 10, what=f'frame of cycle {i}')
            assert node.trigger_deactivate() == OK
            assert node.worker is None
            assert node.trigger_cleanup() == OK
            assert engine.closed and node.engine is None
            names = sorted(t.name for t in threading.enumerate())
            assert not any('worker' in n for n in names), names
            if i == 4:
                baseline = (threading.active_count(), _fds())
        assert (threading.active_count(), _fds()) == baseline
        assert node.trigger_shutdown() == OK
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
