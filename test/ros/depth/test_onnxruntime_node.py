"""The depth node on backend onnxruntime: an exported tiny DA3 file, a real node process.

The node (da3metric-tiny exported at 280x504, `weights_path` the .onnx, CPU provider) gets a
504x280 image with a CameraInfo and publishes metres equal to the torch engine's through the same
frame path (`DepthPredictor`, torch-cpu, same weights), CameraInfo metric scale included.
"""
import time

import numpy as np
import pytest
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from support.da3_fixtures import load_png_rgb, tiny_state_dict
from support.procs import spawn, stop
from support.rosutil import RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.api import DepthPredictor
from tt_depth_ros.engines.export.onnx_da3 import export_da3_onnx
from tt_depth_ros.engines.parity import compare_maps
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth, rgb_image_msg

# one_distro: the node's ROS surface is covered on Kilted by the torch-backend tests
pytestmark = [pytest.mark.ros, pytest.mark.one_distro]
NS = '/ortn'
K = np.array([[400.0, 0, 251.5], [0, 410.0, 139.5], [0, 0, 1]])


def test_depth_node_runs_an_exported_file(tmp_path):
    out = tmp_path / 'da3metric_tiny.onnx'
    export_da3_onnx('da3metric-tiny', (280, 504), out, state_dict=tiny_state_dict())
    rgb = load_png_rgb('tiny_280x504.png')
    params = {'model': 'da3metric-tiny', 'weights_path': str(out), 'backend': 'onnxruntime',
              'onnx_provider': 'CPUExecutionProvider', 'expected_width': 504,
              'expected_height': 280, 'input_reliability': 'reliable'}
    probe = RosProbe('ortn_probe')
    try:
        probe.subscribe(Image, f'{NS}/depth', RELIABLE)
        img_pub = probe.publisher(Image, f'{NS}/image')
        info_pub = probe.publisher(CameraInfo, f'{NS}/camera_info')
        with spawn(depth_node_cmd(NS, params), env=child_env(), name='ortn-node') as proc:
            got, deadline = [], time.monotonic() + 60
            while not got and time.monotonic() < deadline and proc.poll() is None:
                header = Header(frame_id='cam')
                header.stamp.sec = 7
                info_pub.publish(camera_info_for(K, 504, 280, header))
                img_pub.publish(rgb_image_msg(rgb, header))
                time.sleep(0.2)
                got = [m for m in probe.got(f'{NS}/depth') if m.header.stamp.sec == 7]
            log = proc.log_text()
            assert got, log
            assert 'onnxruntime' in log and 'CPUExecutionProvider' in log
            assert stop(proc, timeout=20) == 0, proc.log_text()
    finally:
        probe.close()
    depth = image_msg_to_depth(got[0])
    with DepthPredictor.from_pretrained('da3metric-tiny', dtype='float32',
                                        state_dict=tiny_state_dict(),
                                        backend='torch-cpu') as predictor:
        expected = predictor(rgb, K).depth
    fin = np.isfinite(expected)
    assert np.array_equal(fin, np.isfinite(depth))
    agree = compare_maps(expected, depth)
    assert agree.pcc >= 0.9999 and agree.finite_mismatch == 0, str(agree)
    np.testing.assert_allclose(depth[fin], expected[fin], rtol=1e-4)
