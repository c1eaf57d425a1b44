"""Each image is processed with the CameraInfo of its own stamp (a focal change between frames).

The depth node runs in its own process with the known-depth engine double (constant raw depth,
a slow engine so the worker is busy while newer CameraInfos arrive). Depth is DA3's raw depth times
the focal at network resolution / 300, so the published depth says which focal was used, and
`depth/camera_info` says it directly. Cases: CameraInfo before its image, then a CameraInfo with
another stamp and focal while the frame still waits; image before its CameraInfo; an image with no
CameraInfo of its stamp (skipped, counted); the `latest` mode for cameras that publish CameraInfo
rarely; the match counters in /diagnostics.
"""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from support.procs import spawn, wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth, rgb_image_msg
from tt_depth_ros.ros.runtime.diagnostics import status_values

pytestmark = pytest.mark.ros
NS, NODE = '/cis', '/cis/depth_node'
W, H, BASE, ENGINE_S = 160, 120, 2.0, 0.8
PARAMS = {'engine_plugin': KNOWN_ENGINE, 'engine_plugin_args': f'{{"delay_s": {ENGINE_S}}}',
          'process_res': 112, 'input_reliability': 'reliable', 'output_resolution': 'network',
          'diagnostics_period': 0.2, 'camera_info_wait_s': 1.0}


def _K(f):
    return np.array([[f, 0.0, 79.5], [0.0, f, 59.5], [0.0, 0.0, 1.0]])


def _hdr(sec):
    h = Header(frame_id='cam_optical_frame')
    h.stamp.sec = sec
    return h


def _expected_depth(f):
    net_h, net_w = network_size(W, H, 112)
    return BASE * (f * net_w / W + f * net_h / H) / 2 / 300


class Cam:
    def __init__(self, probe):
        self.probe = probe
        probe.subscribe(Image, f'{NS}/depth', RELIABLE)
        probe.subscribe(CameraInfo, f'{NS}/depth/camera_info', RELIABLE)
        probe.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
        self.img = probe.publisher(Image, f'{NS}/image', RELIABLE)
        self.info = probe.publisher(CameraInfo, f'{NS}/camera_info', RELIABLE)
        self.rgb = np.full((H, W, 3), 100, np.uint8)

    def send_info(self, sec, f):
        self.info.publish(camera_info_for(_K(f), W, H, _hdr(sec)))
        time.sleep(0.05)

    def send_image(self, sec):
        self.img.publish(rgb_image_msg(self.rgb, _hdr(sec)))
        time.sleep(0.05)

    def outputs(self, sec, timeout=15.0):
        def find():
            d = [m for m in self.probe.got(f'{NS}/depth') if m.header.stamp.sec == sec]
            i = [m for m in self.probe.got(f'{NS}/depth/camera_info')
                 if m.header.stamp.sec == sec]
            return (d[0], i[0]) if d and i else None
        depth, info = wait_for(find, timeout, what=f'depth + camera_info of stamp {sec}')
        return float(np.nanmedian(image_msg_to_depth(depth))), info

    def diag(self):
        for arr in reversed(self.probe.got('/diagnostics')):
            for st in arr.status:
                if st.name == NODE:
                    return status_values(st)
        return {}


def _fx_net(f):
    return f * network_size(W, H, 112)[1] / W


def test_each_image_uses_the_camera_info_of_its_stamp():
    probe = RosProbe('cis_probe')
    cam = Cam(probe)
    try:
        with spawn(depth_node_cmd(NS, PARAMS), env=child_env(), name='cis-node') as proc:
            probe.wait_matched(cam.img, timeout=60)
            probe.wait_matched(cam.info)
            probe.wait_state(NODE, 'active', 60)
            # a first frame's outputs prove the node's publishers reach the probe: 'active' does
            # not mean discovery is done, and on a loaded machine the frames below were lost
            cam.send_info(1, 400.0)
            cam.send_image(1)
            cam.outputs(1, timeout=60.0)
            # warm-up frame keeps the worker busy for ENGINE_S ...
            cam.send_info(5, 400.0)
            cam.send_image(5)
            # ... while frame A arrives with its CameraInfo, then another CameraInfo (fx x2)
            cam.send_info(10, 520.5)
            cam.send_image(10)
            cam.send_info(11, 1041.0)
            z, info = cam.outputs(10)
            assert info.k[0] == pytest.approx(_fx_net(520.5), rel=1e-9), proc.log_text()
            assert z == pytest.approx(_expected_depth(520.5), rel=1e-5)
            z5, info5 = cam.outputs(5)
            assert info5.k[0] == pytest.approx(_fx_net(400.0), rel=1e-9)
            assert z5 == pytest.approx(_expected_depth(400.0), rel=1e-5)

            # image first, its CameraInfo 0.3 s later (the worker waits for it, bounded)
            cam.send_image(20)
            time.sleep(0.3)
            cam.send_info(20, 700.0)
            z, info = cam.outputs(20)
            assert info.k[0] == pytest.approx(_fx_net(700.0), rel=1e-9)
            assert z == pytest.approx(_expected_depth(700.0), rel=1e-5)

            # no CameraInfo with this stamp (a newer one exists): skipped and counted
            cam.send_info(31, 800.0)
            cam.send_image(30)
            wait_for(lambda: int(cam.diag().get('rejected_camera_info_stamp', 0)) >= 1, 15,
                     what=f'rejected_camera_info_stamp counted: {cam.diag()}')
            assert not [m for m in probe.got(f'{NS}/depth') if m.header.stamp.sec == 30]
            # ... unless within camera_info_tolerance_s
            assert all(r.successful for r in probe.set_params(
                NODE, {'camera_info_tolerance_s': 1.5}))
            cam.send_image(32)
            z, info = cam.outputs(32)
            assert info.k[0] == pytest.approx(_fx_net(800.0), rel=1e-9)

            # 'latest': a camera publishing CameraInfo rarely; other stamps are counted only
            assert all(r.successful for r in probe.set_params(NODE, {'camera_info_sync': 'latest'}))
            cam.send_image(40)
            z, info = cam.outputs(40)
            assert info.k[0] == pytest.approx(_fx_net(800.0), rel=1e-9)
            d = wait_for(lambda: (lambda v: v if int(v.get('camera_info_other_stamp', 0)) >= 1
                                  else None)(cam.diag()), 10, what='camera_info_other_stamp')
            assert int(d['camera_info_exact']) >= 4      # frames 1, 5, 10, 20
            assert int(d['camera_info_nearest']) == 1    # frame 32
            assert int(d['camera_info_unmatched']) >= 1  # frame 30
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()


def test_camera_infos_queued_behind_a_busy_executor_are_all_kept():
    """An executor that falls behind (here: not spinning) still gets every CameraInfo.

    The image keeps the input QoS (depth 1: the latest frame wins); its CameraInfos are tiny and
    each image needs the one of its own stamp, so their history keeps several.
    """
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from tt_depth_ros.ros.depth.node import DepthNode
    probe = RosProbe('cisq_probe')
    node = DepthNode('depth_node', namespace='/cisq', context=probe.ctx, parameter_overrides=[
        Parameter('engine_plugin', value=KNOWN_ENGINE), Parameter('autostart', value=False),
        Parameter('input_reliability', value='reliable'),
        Parameter('camera_info_wait_s', value=0.0)])
    executor = SingleThreadedExecutor(context=probe.ctx)
    try:
        ok = TransitionCallbackReturn.SUCCESS
        assert node.trigger_configure() == ok and node.trigger_activate() == ok, \
            node.stats.last_error
        (cam,) = node.cameras
        assert cam.camera_info_sub.qos_profile.depth >= 6
        info = probe.publisher(CameraInfo, '/cisq/camera_info', RELIABLE)
        probe.wait_matched(info)
        for sec in range(1, 7):                       # a burst the executor does not take
            info.publish(camera_info_for(_K(400.0 + sec), W, H, _hdr(sec)))
        time.sleep(1.0)
        executor.add_node(node)
        for _ in range(20):
            executor.spin_once(timeout_sec=0.05)
        for sec in range(1, 7):
            m = node.camera_views.match(cam.key, _hdr(sec).stamp)
            assert m is not None and m.how == 'exact', f'stamp {sec}: {m}'
    finally:
        executor.shutdown()
        node.destroy_node()
        probe.close()
