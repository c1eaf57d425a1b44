"""Lifecycle of the depth node driven from another process through its lifecycle services.

Every transition, an invalid one (Jazzy never replies; Kilted replies success=False), an injected
engine error in configure (ERROR -> on_error -> unconfigured, then recovery), a parameter FAILURE
and its fix, parameter policies (configure-time refused while configured, read-only refused,
runtime accepted), publishers really gated by activate/deactivate, shutdown and a clean exit.
"""
import time

import numpy as np
import pytest
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from support.procs import spawn, stop, wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg

pytestmark = pytest.mark.ros
NS, NODE = '/lc', '/lc/depth_node'
K = np.array([[200.0, 0, 79.5], [0, 200.0, 59.5], [0, 0, 1]])


@pytest.fixture(scope='module')
def probe():
    p = RosProbe('lc_probe')
    yield p
    p.close()


def _send(probe, pubs, sec):
    header = Header(frame_id='cam')
    header.stamp.sec = sec
    pubs[1].publish(camera_info_for(K, 160, 120, header))
    pubs[0].publish(rgb_image_msg(np.full((120, 160, 3), 90, np.uint8), header))


def _flows(probe, pubs, sec, timeout=10.0) -> bool:
    """Whether a frame with stamp `sec` comes back as depth within `timeout` (resending)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _send(probe, pubs, sec)
        time.sleep(0.1)
        if any(m.header.stamp.sec == sec for m in probe.got(f'{NS}/depth')):
            return True
    return False


def test_lifecycle_over_services(probe):
    params = {'engine_plugin': KNOWN_ENGINE, 'engine_plugin_args': '{"fail_prepare": 1}',
              'autostart': False, 'expected_width': 160, 'expected_height': 120,
              'input_reliability': 'reliable'}
    probe.subscribe(Image, f'{NS}/depth', RELIABLE)
    pubs = (probe.publisher(Image, f'{NS}/image'), probe.publisher(CameraInfo, f'{NS}/camera_info'))
    with spawn(depth_node_cmd(NS, params), env=child_env(), name='lc-node') as proc:
        assert probe.get_state(NODE, timeout=60) == 'unconfigured'   # waits for the service

        # invalid transition: Jazzy does not answer at all, Kilted answers False
        assert probe.change_state(NODE, 'activate', timeout=3) in (None, False)
        assert probe.get_state(NODE) == 'unconfigured'

        # injected engine error during configure -> ERROR -> on_error -> unconfigured
        assert probe.change_state(NODE, 'configure') is False
        assert probe.get_state(NODE) == 'unconfigured'
        wait_for(lambda: 'injected prepare failure' in proc.log_text()
                 and 'Traceback' in proc.log_text(), 10, what='logged error with traceback')

        # recovery
        assert probe.change_state(NODE, 'configure') is True
        assert probe.get_state(NODE) == 'inactive'
        res = probe.set_params(NODE, {'model': 'da3mono-large'})
        assert not res[0].successful and 'configure' in res[0].reason
        res = probe.set_params(NODE, {'autostart': True})
        assert not res[0].successful and 'read-only' in res[0].reason.lower()
        res = probe.set_params(NODE, {'sky_threshold': 0.5, 'points_decimation': 0})
        assert res[0].successful                  # runtime parameter, in range
        assert not res[1].successful              # 0 is outside [1, 64]

        assert probe.change_state(NODE, 'activate') is True
        assert probe.get_state(NODE) == 'active'
        probe.wait_matched(pubs[0])
        assert _flows(probe, pubs, 1), proc.log_text()

        assert probe.change_state(NODE, 'deactivate') is True
        assert probe.get_state(NODE) == 'inactive'
        probe.clear()
        assert not _flows(probe, pubs, 2, timeout=1.5)   # no subscription, publishers disabled

        assert probe.change_state(NODE, 'cleanup') is True
        assert probe.get_state(NODE) == 'unconfigured'

        # parameter FAILURE (validated at configure) and its fix
        assert all(r.successful for r in probe.set_params(
            NODE, {'network_height': 15, 'network_width': 14}))
        assert probe.change_state(NODE, 'configure') is False
        assert probe.get_state(NODE) == 'unconfigured'
        assert 'multiples of 14' in proc.log_text()
        assert all(r.successful for r in probe.set_params(
            NODE, {'network_height': 0, 'network_width': 0}))
        assert probe.change_state(NODE, 'configure') is True
        assert probe.change_state(NODE, 'activate') is True
        assert _flows(probe, pubs, 3), proc.log_text()

        assert probe.change_state(NODE, 'active_shutdown') is True
        assert probe.get_state(NODE) == 'finalized'
        assert stop(proc, timeout=20) == 0, proc.log_text()
        assert 'terminate called' not in proc.log_text()
