"""`ros2 launch tt_depth_ros multi_camera.launch.py` (da3metric-tiny, rule-v1).

One weights file per camera (share_engine left out: false): two nodes in their cameras' namespaces
reach active; per-camera arguments (weights_path, one per camera) and shared ones (backends,
device_ids, model, use_sim_time: one for all) reach each node; the config file's values hold where
nothing is given; each camera's frame comes out under its own namespace; Ctrl-C ends launch and
both nodes with exit 0. The same weights for three cameras (share_engine left out: true): ONE node
lists them in `cameras`, each camera's frame comes out under its own namespace only, and Ctrl-C
ends launch and the one node with exit 0.
"""
import shutil
import time

import numpy as np
import pytest
from launch_run import LaunchRun, assert_clean_ctrl_c, config_with, get_params, wait_state
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from support.procs import ROOT, wait_for
from support.rosutil import RELIABLE, RosProbe
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg

# one_distro: multi-camera nodes on Kilted: test/ros/depth; launch itself: test_depth_launch
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(240)]
CAMERAS = ('/m1', '/m2')
W, H = 160, 120
K = np.array([[150.0, 0, 79.5], [0, 150.0, 59.5], [0, 0, 1]])


@pytest.fixture(scope='module')
def weights(tmp_path_factory, tiny_weights):
    """One weights file per camera (two copies of the tiny checkpoint)."""
    folder = tmp_path_factory.mktemp('mc_weights')
    return [str(shutil.copy(tiny_weights['da3metric-tiny'], folder / f'cam{i}.safetensors'))
            for i in (1, 2)]


@pytest.fixture(scope='module')
def launched(launch_env, tmp_path_factory, weights):
    config = config_with(ROOT / 'config' / 'depth.yaml',
                         tmp_path_factory.mktemp('cfg') / 'multi_test.yaml',
                         model='da3metric-large', process_res=112, expected_width=W,
                         expected_height=H, points_format='xyzrgb')
    probe = RosProbe('launch_multi_probe')
    run = LaunchRun(launch_env, 'multi_camera.launch.py', {
        'cameras': ','.join(CAMERAS), 'config': str(config), 'image_topic': 'img',
        'model': 'da3metric-tiny', 'backends': 'torch-cpu', 'device_ids': '0',
        'weights_path': ','.join(weights), 'use_sim_time': 'false'}, name='launch-multi')
    try:
        yield run, probe
    finally:
        run.close()
        probe.close()


def test_both_nodes_reach_active_with_their_arguments(launched, weights):
    run, probe = launched
    for cam, path in zip(CAMERAS, weights):
        node = f'{cam}/depth_node'
        wait_state(probe, node, 'active', run=run)
        got = get_params(probe, node, ['model', 'weights_path', 'backend', 'device_id',
                                       'use_sim_time', 'points_format', 'autostart'])
        assert got == {'model': 'da3metric-tiny', 'weights_path': path, 'backend': 'torch-cpu',
                       'device_id': 0, 'use_sim_time': False,
                       'points_format': 'xyzrgb', 'autostart': True}, run.log()  # config file


def test_each_camera_gets_its_own_depth(launched):
    run, probe = launched
    pubs = {}
    for cam in CAMERAS:
        wait_state(probe, f'{cam}/depth_node', 'active', run=run)
        probe.subscribe(Image, f'{cam}/depth', RELIABLE)
        pubs[cam] = (probe.publisher(Image, f'{cam}/img'),
                     probe.publisher(CameraInfo, f'{cam}/camera_info'))
        for pub in pubs[cam]:
            probe.wait_matched(pub)
    rgb = np.full((H, W, 3), 120, np.uint8)

    def both():
        for i, cam in enumerate(CAMERAS):
            header = Header(frame_id=f'{cam[1:]}_optical')
            header.stamp.sec = 30 + i
            pubs[cam][1].publish(camera_info_for(K, W, H, header))
            pubs[cam][0].publish(rgb_image_msg(rgb, header))
        time.sleep(0.2)
        return all(any(m.header.stamp.sec == 30 + i for m in probe.got(f'{cam}/depth'))
                   for i, cam in enumerate(CAMERAS))

    wait_for(both, 60, what='depth from both cameras')
    for cam in CAMERAS:   # never the other camera's frame
        assert {m.header.frame_id for m in probe.got(f'{cam}/depth')} == {f'{cam[1:]}_optical'}


def test_ctrl_c_ends_launch_and_both_nodes_with_exit_0(launched):
    run, probe = launched
    for cam in CAMERAS:
        wait_state(probe, f'{cam}/depth_node', 'active', run=run)
    assert_clean_ctrl_c(run, nodes=2)


SHARED = ('/s1', '/s2', '/s3')


@pytest.fixture(scope='module')
def launched_shared(launch_env, tmp_path_factory, tiny_weights):
    config = config_with(ROOT / 'config' / 'depth.yaml',
                         tmp_path_factory.mktemp('cfg') / 'multi_shared.yaml',
                         process_res=112, expected_width=W, expected_height=H)
    probe = RosProbe('launch_shared_probe')
    run = LaunchRun(launch_env, 'multi_camera.launch.py', {
        'cameras': ','.join(SHARED), 'config': str(config), 'node_namespace': '/shared',
        'model': 'da3metric-tiny', 'backends': 'torch-cpu',
        'weights_path': str(tiny_weights['da3metric-tiny'])}, name='launch-shared')
    try:
        yield run, probe
    finally:
        run.close()
        probe.close()


def test_one_node_serves_every_camera_in_its_namespace(launched_shared):
    run, probe = launched_shared
    wait_state(probe, '/shared/depth_node', 'active', run=run)
    got = get_params(probe, '/shared/depth_node', ['cameras', 'backend'])
    assert got == {'cameras': [f'image={c}/image_raw,camera_info={c}/camera_info,ns={c}'
                               for c in SHARED], 'backend': 'torch-cpu'}, run.log()
    pubs = {}
    for cam in SHARED:
        probe.subscribe(Image, f'{cam}/depth', RELIABLE)
        pubs[cam] = (probe.publisher(Image, f'{cam}/image_raw'),
                     probe.publisher(CameraInfo, f'{cam}/camera_info'))
        for pub in pubs[cam]:
            probe.wait_matched(pub)

    def every():
        for i, cam in enumerate(SHARED):
            header = Header(frame_id=f'{cam[1:]}_optical')
            header.stamp.sec = 40 + i
            rgb = np.full((H, W, 3), 60 * (i + 1), np.uint8)
            pubs[cam][1].publish(camera_info_for(K, W, H, header))
            pubs[cam][0].publish(rgb_image_msg(rgb, header))
        time.sleep(0.2)
        return all(any(m.header.stamp.sec == 40 + i for m in probe.got(f'{cam}/depth'))
                   for i, cam in enumerate(SHARED))

    wait_for(every, 60, what='depth from every camera of the one node')
    for i, cam in enumerate(SHARED):   # never another camera's frame
        assert {(m.header.frame_id, m.header.stamp.sec) for m in probe.got(f'{cam}/depth')} \
            == {(f'{cam[1:]}_optical', 40 + i)}
    assert run.log().count('engine built') == 1, run.log()


def test_ctrl_c_ends_launch_and_the_shared_node_with_exit_0(launched_shared):
    run, probe = launched_shared
    wait_state(probe, '/shared/depth_node', 'active', run=run)
    assert_clean_ctrl_c(run, nodes=1)
