"""`ros2 launch tt_depth_ros pair.launch.py` in stereo and in temporal mode (dust3r-tiny, rule-v1).

Stereo: every parameter argument reaches the node, the inputs are <camera1|2>/<image_topic> and
<camera1|2>/<camera_info_topic>, a stereo pair comes out as a cloud under <namespace>. Temporal:
the mode argument alone switches the node to one camera's <camera>/<image_topic>; the config file's
values hold. Ctrl-C ends each launch with exit 0.
"""
import time

import numpy as np
import pytest
from launch_run import LaunchRun, assert_clean_ctrl_c, config_with, get_params, wait_state
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header

from support.dust3r_data import pair_u8
from support.procs import ROOT, wait_for
from support.rosutil import RELIABLE, RosProbe
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.tools.eval.scene_render import intrinsics

# one_distro: the pair node on Kilted: test/ros/pair; launch itself: test_depth_launch
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(240)]
H, W = 80, 112


@pytest.fixture(scope='module')
def config(tmp_path_factory):
    """config/pair.yaml at the tiny network size; random weights: accept any PnP consensus."""
    return config_with(ROOT / 'config' / 'pair.yaml',
                       tmp_path_factory.mktemp('cfg') / 'pair_test.yaml',
                       network_size=W, expected_width=W, expected_height=H, conf_threshold=1.0,
                       pnp_min_inliers=4, pnp_min_inlier_ratio=0.0, preprocess_mode='pad')


@pytest.fixture(scope='module')
def probe():
    p = RosProbe('launch_pair_probe')
    yield p
    p.close()


@pytest.fixture(scope='module')
def stereo(launch_env, config, tiny_weights, probe):
    run = LaunchRun(launch_env, 'pair.launch.py', {
        'mode': 'stereo', 'namespace': 'pst', 'camera1': '/pl', 'camera2': '/pr',
        'image_topic': 'img', 'camera_info_topic': 'info', 'config': str(config),
        'model': 'dust3r-tiny', 'weights_path': tiny_weights['dust3r-tiny'],
        'backend': 'torch-cpu', 'device_id': '1', 'pose_source': 'pnp',
        'scale_source': 'baseline', 'baseline_m': '0.12', 'autostart': 'true',
        'use_sim_time': 'true'}, name='launch-pair-st')
    try:
        yield run
    finally:
        run.close()


def test_stereo_every_argument_reaches_the_node(stereo, probe, tiny_weights):
    wait_state(probe, '/pst/pair_node', 'active', run=stereo)
    got = get_params(probe, '/pst/pair_node', [
        'mode', 'model', 'weights_path', 'backend', 'device_id', 'pose_source', 'scale_source',
        'baseline_m', 'autostart', 'use_sim_time', 'network_size', 'preprocess_mode'])
    assert got == {'mode': 'stereo', 'model': 'dust3r-tiny',
                   'weights_path': tiny_weights['dust3r-tiny'], 'backend': 'torch-cpu',
                   'device_id': 1, 'pose_source': 'pnp', 'scale_source': 'baseline',
                   'baseline_m': 0.12,
                   'autostart': True, 'use_sim_time': True,
                   'network_size': W, 'preprocess_mode': 'pad'}, stereo.log()   # config file


def test_stereo_pair_on_the_remapped_topics_gives_a_cloud(stereo, probe):
    wait_state(probe, '/pst/pair_node', 'active', run=stereo)
    probe.subscribe(PointCloud2, '/pst/points', RELIABLE)
    pubs = [(probe.publisher(Image, f'{cam}/img'), probe.publisher(CameraInfo, f'{cam}/info'))
            for cam in ('/pl', '/pr')]
    for img_pub, info_pub in pubs:
        probe.wait_matched(img_pub)
        probe.wait_matched(info_pub)
    views, K = pair_u8(f'{H}x{W}'), intrinsics(W, H)
    sent = []

    def cloud():
        # a new stamp each try: the node drops a repeated stamp as a duplicate, so a first pair
        # that arrived before its CameraInfo (skipped) would never be tried again
        header = Header(frame_id='pl_optical')
        header.stamp.sec = 9 + len(sent)
        sent.append(header.stamp.sec)
        for (img_pub, info_pub), rgb in zip(pubs, views):
            info_pub.publish(camera_info_for(K, W, H, header))
            img_pub.publish(rgb_image_msg(np.ascontiguousarray(rgb), header))
        time.sleep(0.5)
        return [m for m in probe.got('/pst/points') if m.header.stamp.sec in sent]

    msg = wait_for(cloud, 90, what='a cloud for the stereo pair')[0]
    assert msg.header.frame_id == 'pl_optical' and msg.width > 0, stereo.log()


def test_stereo_ctrl_c_ends_launch_and_node_with_exit_0(stereo, probe):
    wait_state(probe, '/pst/pair_node', 'active', run=stereo)
    assert_clean_ctrl_c(stereo, nodes=1)


@pytest.fixture(scope='module')
def temporal(launch_env, config, tiny_weights, probe):
    run = LaunchRun(launch_env, 'pair.launch.py', {
        'mode': 'temporal', 'camera': '/tc', 'config': str(config), 'model': 'dust3r-tiny',
        'weights_path': tiny_weights['dust3r-tiny'], 'backend': 'torch-cpu'},
        name='launch-pair-tmp')
    try:
        yield run
    finally:
        run.close()


def test_temporal_mode_subscribes_one_camera(temporal, probe):
    node = '/dust3r/pair_node'
    wait_state(probe, node, 'active', run=temporal)
    got = get_params(probe, node, ['mode', 'scale_source', 'baseline_m', 'use_sim_time'])
    assert got == {'mode': 'temporal', 'scale_source': 'none', 'baseline_m': 0.0,
                   'use_sim_time': False}, temporal.log()
    for topic in ('/tc/image', '/tc/camera_info'):
        wait_for(lambda t=topic: probe.node.count_subscribers(t) >= 1, 20,
                 what=f'the pair node subscribing {topic}')
    assert probe.node.count_subscribers('/left/image') == 0


def test_temporal_ctrl_c_ends_launch_and_node_with_exit_0(temporal, probe):
    wait_state(probe, '/dust3r/pair_node', 'active', run=temporal)
    assert_clean_ctrl_c(temporal, nodes=1)
