"""depth/compressedDepth through the real node: opt-in, image_transport's format, same frame.

One depth node process with the known-depth engine double (network only) and
compressed_depth:=true: the topic exists with type sensor_msgs/CompressedImage, each message is
the twin of the `depth` message of the same stamp (decoded by the independent decoder of
support/compressed_depth_decoder.py, within the quantisation bound; +Inf sky and depth beyond
compressed_depth_max_m come back as NaN), tt-depth-record's Recorder records it, it follows
depth_encoding (16UC1: millimetres), and after cleanup + compressed_depth:=false + configure there
is no publisher on it any more.
"""
import time

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Header

from support.compressed_depth_decoder import decode_compressed_depth
from support.procs import spawn, wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth, rgb_image_msg
from tt_depth_ros.tools.bag.io import read_bag
from tt_depth_ros.tools.bag.record import Recorder, parse_topic_specs

pytestmark = pytest.mark.ros
NS, NODE = '/cdepth', '/cdepth/depth_node'
TOPIC = f'{NS}/depth/compressedDepth'
W, H = 80, 60


def _frame(probe, img_pub, info_pub, sec, proc):
    """Publish one frame until both depth and compressedDepth of its stamp arrived."""
    header = Header(frame_id='cd_optical_frame')
    header.stamp.sec = sec
    info = CameraInfo(header=header, width=W, height=H,
                      k=[62.5, 0.0, 39.5, 0.0, 62.5, 29.5, 0.0, 0.0, 1.0])
    rgb = np.zeros((H, W, 3), np.uint8)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info_pub.publish(info)
        time.sleep(0.05)
        img_pub.publish(rgb_image_msg(rgb, header))
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            depth = [m for m in probe.got(f'{NS}/depth') if m.header.stamp.sec == sec]
            comp = [m for m in probe.got(TOPIC) if m.header.stamp.sec == sec]
            if depth and comp:
                return depth[0], comp[0]
            time.sleep(0.02)
    pytest.fail(f'no depth + compressedDepth for stamp {sec}\n{proc.log_text()}')


def test_compressed_depth_is_opt_in_and_decodes_to_the_depth_image(tmp_path):
    args = '{"base": 2.0, "gx": 0.01, "gy": 0.02, "sky_rows": 40}'
    params = {'engine_plugin': KNOWN_ENGINE, 'engine_plugin_args': args,
              'input_reliability': 'reliable', 'compressed_depth': True}
    probe = RosProbe('cdepth_probe')
    try:
        probe.subscribe(Image, f'{NS}/depth', RELIABLE)
        probe.subscribe(CompressedImage, TOPIC, RELIABLE)
        img_pub = probe.publisher(Image, f'{NS}/image', RELIABLE)
        info_pub = probe.publisher(CameraInfo, f'{NS}/camera_info', RELIABLE)
        with spawn(depth_node_cmd(NS, params), env=child_env(), name='cdepth-node') as proc:
            probe.wait_matched(img_pub, timeout=60)
            probe.wait_state(NODE, 'active', 60)
            types = dict(probe.node.get_topic_names_and_types())
            assert types[TOPIC] == ['sensor_msgs/msg/CompressedImage']
            assert probe.node.count_publishers(TOPIC) == 1
            # tt-depth-record's recorder, its type looked up in the graph as the CLI does
            recorder = Recorder(probe.node, tmp_path / 'bag', parse_topic_specs([TOPIC]))
            recorder.start()
            wait_for(lambda: probe.node.count_subscribers(TOPIC) >= 2, 10, what='recorder')

            depth_msg, comp = _frame(probe, img_pub, info_pub, 300, proc)
            wait_for(lambda: recorder.counts[TOPIC] >= 1, 10, what='recorded compressedDepth')
            recorder.close()
            msgs, bag_types = read_bag(tmp_path / 'bag')
            assert bag_types == {TOPIC: 'sensor_msgs/msg/CompressedImage'}
            from_bag = deserialize_message(msgs[-1].raw, CompressedImage)
            assert (from_bag.format, bytes(from_bag.data)) == (comp.format, bytes(comp.data))
            assert comp.format == '32FC1; compressedDepth png'
            assert comp.header.frame_id == depth_msg.header.frame_id == 'cd_optical_frame'
            dec = decode_compressed_depth(comp.format, comp.data)
            depth = image_msg_to_depth(depth_msg).astype(np.float64)
            assert dec.depth_m.shape == depth.shape == (H, W)
            stored = np.isfinite(depth) & (depth < 10.0)          # compressed_depth_max_m
            assert stored.any() and (~stored).any() and np.isinf(depth).any()   # sky rows
            assert np.all(np.isnan(dec.depth_m[~stored]))
            d = depth[stored]
            bound = 0.5 * d * d / (dec.quant_a - 0.5 * d)
            assert np.all(np.abs(dec.depth_m[stored] - d) <= bound * (1 + 1e-6) + 1e-9)

            for r in probe.set_params(NODE, {'depth_encoding': '16UC1'}):
                assert r.successful, r.reason
            depth_msg, comp = _frame(probe, img_pub, info_pub, 301, proc)
            assert comp.format == '16UC1; compressedDepth png'
            mm = np.frombuffer(bytes(depth_msg.data), '<u2').reshape(H, W)
            want = np.where(mm <= 10000, mm, 0)
            assert np.array_equal(decode_compressed_depth(comp.format, comp.data).plane, want)

            for step in ('deactivate', 'cleanup'):
                assert probe.change_state(NODE, step) is True
            wait_for(lambda: probe.node.count_publishers(f'{NS}/depth') == 0, 10,
                     what='publishers gone after cleanup')
            for r in probe.set_params(NODE, {'compressed_depth': False}):
                assert r.successful, r.reason
            for step in ('configure', 'activate'):
                assert probe.change_state(NODE, step) is True
            wait_for(lambda: probe.node.count_publishers(f'{NS}/depth') == 1, 10,
                     what='depth publisher after configure')
            assert probe.node.count_publishers(TOPIC) == 0
    finally:
        probe.close()
