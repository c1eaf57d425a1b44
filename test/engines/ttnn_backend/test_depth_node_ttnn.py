"""The depth node end to end with `backend: ttnn` on the CPU stand-in (test-only injection).

camera simulator -> `python -m tt_depth_ros.ros.depth.node` whose engine comes from the test-only
plugin `devtools.ttnn.standin.plugin:build_engine` (stand-in as `ttnn`, then the production
factory/select/ttnn engine with backend='ttnn') -> this process checks the published depth against
the torch-cpu DepthPredictor on the same frame: PCC, the relative error's median and p99 (metres:
scale matters) and the sky mask.
"""
import json

import numpy as np
import pytest
from sensor_msgs.msg import Image

from support.da3_fixtures import DATA, tiny_state_dict, write_safetensors
from support.procs import spawn, wait_for
from support.rosutil import RosProbe, child_env, depth_node_cmd, helper_cmd
from tt_depth_ros.engines.parity import compare_maps, mask_agreement

# What this adds over the torch node tests is the engine (ROS-free); Kilted runs those.
pytestmark = [pytest.mark.ros, pytest.mark.one_distro]
NS = '/ttnn_e2e'
K_IMG = [500.0, 0.0, 319.5, 0.0, 505.0, 239.5, 0.0, 0.0, 1.0]


def test_depth_node_with_ttnn_backend_on_standin(tmp_path):
    import cv2

    from tt_depth_ros.api import DepthPredictor
    from tt_depth_ros.ros.msgs.depth import image_msg_to_depth
    weights = write_safetensors(tiny_state_dict(), tmp_path / 'da3metric_tiny.safetensors')
    png = str(DATA / 'preproc_640x480.png')
    plugin_args = json.dumps({'model': 'da3metric-tiny', 'weights': str(weights),
                              'backend': 'ttnn'})
    params = {'model': 'da3metric-tiny', 'weights_path': str(weights), 'backend': 'ttnn',
              'engine_plugin': 'devtools.ttnn.standin.plugin:build_engine',
              'engine_plugin_args': plugin_args, 'expected_width': 640, 'expected_height': 480,
              'input_reliability': 'reliable'}
    env = child_env()   # the repository root on PYTHONPATH: the devtools.ttnn.standin plugin
    env['TT_DEPTH_ROS_TTNN_CACHE'] = str(tmp_path / 'ttnn_cache')
    calib = json.dumps({'width': 640, 'height': 480, 'k': K_IMG})
    camera = helper_cmd('camera_sim', NS, png, calib, 4)
    probe = RosProbe('ttnn_e2e_probe')
    try:
        probe.subscribe(Image, f'{NS}/depth')
        with spawn(depth_node_cmd(NS, params), env=env, name='ttnn-node') as node, \
                spawn(camera, env=child_env(), name='ttnn-camera'):
            wait_for(lambda: len(probe.got(f'{NS}/depth')) >= 2 or node.poll() is not None,
                     180, what='two depth frames from the ttnn depth node')
            log = node.log_text()
            msgs = probe.got(f'{NS}/depth')
            assert len(msgs) >= 2, log
    finally:
        probe.close()
    assert 'ttnn' in log and 'dispatch' in log, log       # engine + device-open log lines
    rgb = cv2.cvtColor(cv2.imread(png, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    with DepthPredictor.from_pretrained('da3metric-tiny', dtype='float32', weights=str(weights),
                                        backend='torch-cpu') as predictor:
        expected = predictor(rgb, K=np.reshape(K_IMG, (3, 3))).depth
    depth = image_msg_to_depth(msgs[-1])
    assert depth.shape == expected.shape == (480, 640)
    fin = np.isfinite(expected) & np.isfinite(depth)
    assert fin.mean() > 0.95
    a = compare_maps(expected, depth)
    sky = mask_agreement(np.isposinf(expected), np.isposinf(depth))    # +Inf = sky
    print(f'depth node ttnn (stand-in) vs torch-cpu: depth {a}; sky agreement {sky:.4f}')
    assert a.pcc > 0.999
    # magnitude (metres): about 2.5x the median / p99 relative error the default preset gives
    assert a.median_rel <= 0.045 and a.p99_rel <= 0.1, str(a)
    assert sky >= 0.999 and a.finite_mismatch <= 0.001, (sky, str(a))
