"""The nodes run in the ROS environment they are given; only replay/record `--loopback` confine.

A user's environment is simulated as a user would set it (on these machines it stays on loopback:
LOCALHOST discovery and a copy of the loopback Fast DDS profile, a ROS_DOMAIN_ID outside the test
harness' range, rmw_fastrtps_cpp). The real depth node process keeps exactly that environment
(/proc/<pid>/environ, the RMW library it loaded) and serves a publisher in that domain; started
without ROS_DOMAIN_ID it keeps none and is found in domain 0 (a node that moved itself to another
domain would be invisible there).
"""
import os
import shutil
import time

import numpy as np
import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from support.procs import proc_environ, python_cmd, spawn, wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.ros.runtime.process.loopback import domain_id_for, loopback_profile_path

pytestmark = pytest.mark.ros
ROS_KEYS = ('ROS_DOMAIN_ID', 'RMW_IMPLEMENTATION', 'ROS_AUTOMATIC_DISCOVERY_RANGE',
            'FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
PARAMS = {'engine_plugin': KNOWN_ENGINE, 'camera_info_mode': 'default_focal',
          'input_reliability': 'reliable'}


def _user_env(tmp_path, domain: str | None) -> dict:
    profile = tmp_path / 'my_robot_profile.xml'
    shutil.copy(loopback_profile_path(), profile)
    env = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp',
           'FASTDDS_DEFAULT_PROFILES_FILE': str(profile),
           'FASTRTPS_DEFAULT_PROFILES_FILE': str(profile)}
    if domain is not None:
        env['ROS_DOMAIN_ID'] = domain
    return env


def _probe_in(monkeypatch, domain: str | None, name: str) -> RosProbe:
    """A probe whose context joins `domain` (None: no ROS_DOMAIN_ID, i.e. domain 0)."""
    with monkeypatch.context() as m:
        if domain is None:
            m.delenv('ROS_DOMAIN_ID', raising=False)
        else:
            m.setenv('ROS_DOMAIN_ID', domain)
        return RosProbe(name)


def _depth_flows(probe, ns, timeout=30.0) -> bool:
    pub = probe.publisher(Image, f'{ns}/image', RELIABLE)
    probe.subscribe(Image, f'{ns}/depth', RELIABLE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        header = Header(frame_id='cam')
        header.stamp = probe.node.get_clock().now().to_msg()
        pub.publish(rgb_image_msg(np.full((48, 64, 3), 90, np.uint8), header))
        time.sleep(0.2)
        if probe.got(f'{ns}/depth'):
            return True
    return False


def _loaded_libraries(pid: int) -> str:
    return open(f'/proc/{pid}/maps').read()


def test_node_keeps_the_users_environment_and_serves_that_domain(tmp_path, monkeypatch):
    domain = str(100 + int(os.environ['ROS_DOMAIN_ID']) % 90)   # outside the harness' 10..99
    env = _user_env(tmp_path, domain)
    ns = '/user_env'
    probe = _probe_in(monkeypatch, domain, 'user_env_probe')
    try:
        with spawn(depth_node_cmd(ns, PARAMS), env={**child_env(), **env},
                   unset=('ROS_LOCALHOST_ONLY',), name='user-env-node') as proc:
            wait_for(lambda: 'autostart: active' in proc.log_text(), 60, what='node active')
            seen = proc_environ(proc.pid)
            assert {k: seen.get(k) for k in ROS_KEYS} == {k: env[k] for k in ROS_KEYS}
            assert 'ROS_LOCALHOST_ONLY' not in seen
            assert 'librmw_fastrtps_cpp' in _loaded_libraries(proc.pid)
            assert probe.get_state(f'{ns}/depth_node', timeout=30) == 'active'
            assert _depth_flows(probe, ns), proc.log_text()
    finally:
        probe.close()


def test_node_started_without_a_domain_keeps_none_and_is_in_domain_0(tmp_path, monkeypatch):
    env = _user_env(tmp_path, None)
    ns = f'/no_domain_{os.getpid()}'
    probe = _probe_in(monkeypatch, None, 'no_domain_probe')
    try:
        with spawn(depth_node_cmd(ns, PARAMS), env={**child_env(), **env},
                   unset=('ROS_DOMAIN_ID', 'ROS_LOCALHOST_ONLY'), name='no-domain-node') as proc:
            wait_for(lambda: 'autostart: active' in proc.log_text(), 60, what='node active')
            assert 'ROS_DOMAIN_ID' not in proc_environ(proc.pid)
            assert probe.get_state(f'{ns}/depth_node', timeout=30) == 'active', proc.log_text()
            assert _depth_flows(probe, ns), proc.log_text()
    finally:
        probe.close()


@pytest.mark.parametrize('tool', ['replay', 'record'])
def test_tools_use_the_given_environment_unless_asked_for_loopback(tool, tmp_path):
    """Default: no ROS_DOMAIN_ID stays none; --loopback picks the per-run domain and confines."""
    from tt_depth_ros.tools.bag import sample as sample_bag
    bag = tmp_path / 'bag'
    sample_bag.generate(bag, sample_bag.SampleBagConfig(frames=2))
    env = _user_env(tmp_path, None)

    def cmd(*extra):
        if tool == 'replay':
            return python_cmd('tt_depth_ros.tools.bag.replay', str(bag), '--max-frames', '1',
                              '--rate-hz', '20', *extra)
        return python_cmd('tt_depth_ros.tools.bag.record', str(tmp_path / f'rec{len(extra)}'),
                          '--duration', '0.5', '--topic', '/x:std_msgs/msg/String', *extra)

    with spawn(cmd(), env=env, unset=('ROS_DOMAIN_ID',), name=f'{tool}-default') as proc:
        assert proc.wait(60) == 0, proc.log_text()
        assert 'ROS_DOMAIN_ID=unset (0)' in proc.log_text(), proc.log_text()
    with spawn(cmd('--loopback'), env=env, unset=('ROS_DOMAIN_ID',),
               name=f'{tool}-loopback') as proc:
        assert proc.wait(60) == 0, proc.log_text()
        assert f'ROS_DOMAIN_ID={domain_id_for(proc.pid)}' in proc.log_text(), proc.log_text()
