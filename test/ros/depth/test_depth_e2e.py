"""End to end with the real tiny DA3 on torch-cpu, three processes besides this one.

camera simulator (bgr8 Image + a CameraInfo calibrated at twice the image resolution) -> depth node
(`python -m tt_depth_ros.ros.depth.node`, da3metric-tiny, rule-v1 weights file, torch-cpu,
autostart) -> checker (shapes, headers, encodings, CameraInfo scaled to the image, organized cloud
layout, and depth equal to `DepthPredictor` on the same frame with the same weights).
"""
import json

import pytest

from support.da3_fixtures import DATA, tiny_state_dict, write_safetensors
from support.procs import spawn, wait_for
from support.rosutil import child_env, depth_node_cmd, helper_cmd

pytestmark = pytest.mark.ros
NS = '/e2e'
K_CAL = [1000.0, 0.0, 639.0, 0.0, 1010.0, 479.0, 0.0, 0.0, 1.0]   # calibrated at 1280x960
K_IMG = [500.0, 0.0, 319.5, 0.0, 505.0, 239.5, 0.0, 0.0, 1.0]     # the 640x480 image


def test_camera_to_node_to_checker(tmp_path):
    weights = write_safetensors(tiny_state_dict(), tmp_path / 'da3metric_tiny.safetensors')
    png = str(DATA / 'preproc_640x480.png')
    result = tmp_path / 'checker.json'
    # torch_dtype float32: the checker's DepthPredictor runs exact fp32 (the API default), the
    # node's default 'auto' would run cpu-fast (bf16) on a CPU with native bf16
    params = {'model': 'da3metric-tiny', 'weights_path': str(weights), 'backend': 'torch-cpu',
              'torch_dtype': 'float32', 'expected_width': 640, 'expected_height': 480,
              'input_reliability': 'reliable'}
    calib = json.dumps({'width': 1280, 'height': 960, 'k': K_CAL})
    checker = helper_cmd('depth_checker', NS, png, weights, json.dumps(K_IMG), 2, result)
    camera = helper_cmd('camera_sim', NS, png, calib, 4)
    with spawn(depth_node_cmd(NS, params), env=child_env(), name='e2e-node') as node, \
            spawn(checker, env=child_env(), name='e2e-checker') as chk, \
            spawn(camera, env=child_env(), name='e2e-camera') as cam:
        wait_for(lambda: result.exists() or chk.poll() is not None, 150,
                 what='checker result')
        logs = f'--node--\n{node.log_text()}\n--checker--\n{chk.log_text()}\n' \
               f'--camera--\n{cam.log_text()}'
        assert result.exists(), logs
        report = json.loads(result.read_text())
        assert report['ok'], f'{report["errors"]}\n{logs}'
        assert len(report['frames']) == 2
        assert "engine built" in node.log_text() and 'torch-cpu' in node.log_text()
