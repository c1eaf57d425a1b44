"""Transport smoke: 640x480 rgb8 Images cross processes intact (best effort, reliable), loopback.

A publisher process and a subscriber process (separate from this one) exchange 20 frames whose
content encodes their index; the subscriber checks every byte. Both children report the ROS
environment they ran with: the loopback settings of this test process must be in force there.
"""
import json
import os

import pytest

from support.procs import spawn, wait_for
from support.rosutil import child_env, helper_cmd
from tt_depth_ros.ros.runtime.process.loopback import loopback_profile_path

pytestmark = pytest.mark.ros
COUNT = 20


def _check_env(env: dict) -> None:
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['ROS_DOMAIN_ID'] == os.environ['ROS_DOMAIN_ID']
    assert env['ROS_LOCALHOST_ONLY'] is None
    for key in ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE'):
        assert os.path.samefile(env[key], loopback_profile_path())


def test_loopback_settings_in_this_process():
    _check_env({k: os.environ.get(k) for k in (
        'ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_DOMAIN_ID', 'ROS_LOCALHOST_ONLY',
        'FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')})


@pytest.mark.parametrize('reliability', ['best_effort', 'reliable'])
def test_images_cross_processes_intact(reliability, tmp_path):
    topic = f'/smoke_{reliability}'
    res_path, env_path = tmp_path / 'sub.json', tmp_path / 'pub_env.json'
    sub_cmd = helper_cmd('image_sub', topic, reliability, COUNT, res_path)
    pub_cmd = helper_cmd('image_pub', topic, reliability, COUNT, env_path, f'{res_path}.ready')
    with spawn(sub_cmd, env=child_env(), name='smoke-sub') as sub, \
            spawn(pub_cmd, env=child_env(), name='smoke-pub') as pub:
        wait_for(res_path.exists, 60, what=f'subscriber result\n{sub.log_text()}\n{pub.log_text()}')
    res = json.loads(res_path.read_text())
    _check_env(json.loads(env_path.read_text()))
    _check_env(res['env'])
    assert res['bad'] == []
    if reliability == 'reliable':
        assert res['intact'] == COUNT
    else:   # best effort may lose frames in principle; the big-SHM profile delivers them
        assert res['intact'] >= COUNT * 3 // 4, res
