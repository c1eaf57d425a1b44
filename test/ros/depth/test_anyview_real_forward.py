"""The real tiny any-view DA3 (rule-v1 + X1 weights file, torch-cpu) in both nodes, real processes.

Depth node (`da3-anyview-tiny`, no CameraInfo: the model's own intrinsics): depth_relative,
confidence and camera_info_estimated equal the engine's forward on the same network image, and
nothing is published on `depth`. Pair node (stereo, the same model as a two-view engine): the pose
equals E_1 inv(E_2) of a two-view forward computed here, and depth_unscaled is view 1's depth.
"""
import time

import numpy as np
import pytest
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from support.da3_fixtures import anyview_state_dict, write_safetensors
from support.fake_engines.tiny_nested import tiny_nested_engine
from support.procs import ros_node_cmd, spawn, wait_for
from support.rosutil import RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size, resize_to_network
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth, rgb_image_msg
from tt_depth_ros.ros.msgs.pose import T_from_pose_msg

# one_distro: a real model in the depth node; the node's ROS surface runs on Kilted elsewhere
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(240)]
W, H, RES = 160, 120, 112
MODEL = 'da3-anyview-tiny'


def _image(seed):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (12, 16, 3)).astype(np.uint8)
    return np.ascontiguousarray(np.kron(small, np.ones((10, 10, 1), np.uint8)))


def _T44(E):
    T = np.eye(4)
    T[:3] = E
    return T


def _wait_msg(probe, topic, sec, publish, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        publish()
        t_end = time.monotonic() + 2.0
        while time.monotonic() < t_end:
            got = [m for m in probe.got(topic) if m.header.stamp.sec == sec]
            if got:
                return got[0]
            time.sleep(0.05)
    raise AssertionError(f'no {topic} with stamp {sec}')


def test_tiny_anyview_depth_and_pair_nodes(tmp_path):
    from tt_depth_ros.engines.factory import build_engine

    weights = write_safetensors(anyview_state_dict(), tmp_path / 'da3_anyview_tiny.safetensors')
    # float32: the outputs are compared with an fp32 engine's (the default 'auto' may pick a
    # reduced-precision preset on a CPU with native bf16)
    common = {'model': MODEL, 'weights_path': str(weights), 'backend': 'torch-cpu',
              'torch_dtype': 'float32', 'input_reliability': 'reliable',
              'camera_info_mode': 'default_focal'}
    depth_params = dict(common, process_res=RES, output_resolution='network')
    pair_params = dict(common, mode='stereo', network_size=RES, conf_threshold=1.0,
                       publish_unscaled_depth=True, output_resolution='network')
    probe = RosProbe('anyview_real_probe')
    try:
        for topic, typ in (('/avr_d/depth_relative', Image), ('/avr_d/confidence', Image),
                           ('/avr_d/camera_info_estimated', CameraInfo), ('/avr_d/depth', Image)):
            probe.subscribe(typ, topic, RELIABLE)
        from geometry_msgs.msg import PoseStamped
        probe.subscribe(PoseStamped, '/avr_p/pose', RELIABLE)
        probe.subscribe(Image, '/avr_p/depth_unscaled', RELIABLE)
        img = probe.publisher(Image, '/avr_d/image', RELIABLE)
        cams = [probe.publisher(Image, f'/avr_p/camera{i}/image', RELIABLE) for i in (1, 2)]
        pair_cmd = ros_node_cmd('tt_depth_ros.ros.pair', '/avr_p', pair_params,
                                'pair_node')
        with spawn(depth_node_cmd('/avr_d', depth_params), env=child_env(),
                   name='avr-depth') as pd, \
                spawn(pair_cmd, env=child_env(), name='avr-pair') as pp:
            rgb1, rgb2 = _image(1), _image(2)
            net = network_size(W, H, RES)
            n1, n2 = (resize_to_network(r, net, RES) for r in (rgb1, rgb2))
            sd = anyview_state_dict()
            with build_engine(MODEL, dtype='float32', state_dict=sd, backend='torch-cpu') as eng:
                one = eng.infer(n1)
            with build_engine(MODEL, dtype='float32', state_dict=sd, backend='torch-cpu',
                              num_views=2) as eng:
                two = eng.infer(n1, n2)
            for pub in [img] + cams:
                probe.wait_matched(pub, timeout=90)
            header = Header(frame_id='cam_optical')
            header.stamp.sec = 7
            depth_msg = _wait_msg(probe, '/avr_d/depth_relative', 7,
                                  lambda: img.publish(rgb_image_msg(rgb1, header)))
            logs = pd.log_text() + pp.log_text()
            assert depth_msg.header.frame_id == 'cam_optical'
            np.testing.assert_allclose(image_msg_to_depth(depth_msg), one['depth'], rtol=1e-4,
                                       atol=1e-6)
            wait_for(lambda: [m for m in probe.got('/avr_d/confidence')
                              if m.header.stamp.sec == 7], 10, what='confidence')
            conf = [m for m in probe.got('/avr_d/confidence') if m.header.stamp.sec == 7][0]
            np.testing.assert_allclose(image_msg_to_depth(conf), one['conf'], rtol=1e-4)
            est = [m for m in probe.got('/avr_d/camera_info_estimated')
                   if m.header.stamp.sec == 7][0]
            np.testing.assert_allclose(np.reshape(est.k, (3, 3)), one['intrinsics'], rtol=1e-5)
            assert probe.got('/avr_d/depth') == [], logs

            h1, h2 = Header(frame_id='left'), Header(frame_id='right')
            h1.stamp.sec = h2.stamp.sec = 9

            def stereo():
                cams[0].publish(rgb_image_msg(rgb1, h1))
                cams[1].publish(rgb_image_msg(rgb2, h2))
            pose = _wait_msg(probe, '/avr_p/pose', 9, stereo)
            T = _T44(two['extrinsics'][0]) @ np.linalg.inv(_T44(two['extrinsics'][1]))
            np.testing.assert_allclose(T_from_pose_msg(pose.pose), T, atol=2e-4)
            unscaled = _wait_msg(probe, '/avr_p/depth_unscaled', 9, lambda: None, timeout=10)
            np.testing.assert_allclose(image_msg_to_depth(unscaled), two['depth'][0], rtol=1e-4,
                                       atol=1e-6)
            assert pd.poll() is None and pp.poll() is None, logs
    finally:
        probe.close()


def test_tiny_nested_metres_with_the_camera_info_focal():
    """Real NESTED (tiny branches) in the depth node: depth = engine metres x f_used / f_est."""
    params = {'engine_plugin': 'support.fake_engines.tiny_nested:tiny_nested_engine',
              'process_res': RES, 'output_resolution': 'network', 'sky_mode': 'keep',
              'input_reliability': 'reliable'}
    probe = RosProbe('nested_real_probe')
    try:
        probe.subscribe(Image, '/avr_n/depth', RELIABLE)
        probe.subscribe(CameraInfo, '/avr_n/camera_info_estimated', RELIABLE)
        img = probe.publisher(Image, '/avr_n/image', RELIABLE)
        info_pub = probe.publisher(CameraInfo, '/avr_n/camera_info', RELIABLE)
        with spawn(depth_node_cmd('/avr_n', params), env=child_env(), name='avr-nested') as pn:
            rgb = _image(3)
            net = network_size(W, H, RES)
            with tiny_nested_engine() as eng:
                ref = eng.infer(resize_to_network(rgb, net, RES))
            probe.wait_matched(img, timeout=90)
            header = Header(frame_id='cam_optical')
            header.stamp.sec = 11
            f = 150.0
            info = CameraInfo(header=header, width=W, height=H,
                              k=[f, 0.0, W / 2, 0.0, f, H / 2, 0.0, 0.0, 1.0])

            def publish():
                info_pub.publish(info)
                time.sleep(0.05)
                img.publish(rgb_image_msg(rgb, header))
            depth = _wait_msg(probe, '/avr_n/depth', 11, publish)
            K_est = ref['intrinsics']
            f_net = (f * net[1] / W + f * net[0] / H) / 2
            factor = f_net / ((K_est[0, 0] + K_est[1, 1]) / 2)
            assert depth.encoding == '32FC1'
            np.testing.assert_allclose(image_msg_to_depth(depth), ref['depth'] * factor,
                                       rtol=1e-4, atol=1e-6)
            assert abs(factor - 1.0) > 1e-3, 'the test needs a focal different from the estimate'
            assert pn.poll() is None, pn.log_text()
    finally:
        probe.close()
