"""tt-depth-batch with a relative (any-view) DA3 model: the depth node's outputs for that kind.

The real tiny any-view model (rule-v1 + X1 weights) on the sample bag's left camera: the batch
writes depth_relative (+ camera_info), points_relative, confidence and camera_info_estimated,
never `depth` (no scale source), and their bytes equal what the depth node publishes when the same
bag is replayed through it with the same parameters.
"""
import sys

import pytest
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader
from sensor_msgs.msg import Image

from support.batch_runs import (
    CFG,
    bag_messages,
    manifest,
    run_batch,
    same_payload,
    write_params_file,
)
from support.da3_fixtures import anyview_state_dict, write_safetensors
from support.procs import python_cmd, spawn, wait_for
from support.rosutil import child_env, depth_node_cmd
from tt_depth_ros.tools.bag import sample as sample_bag

RELATIVE = {'model': 'da3-anyview-tiny', 'backend': 'torch-cpu', 'process_res': 126,
            'points_format': 'xyzrgb', 'input_reliability': 'reliable'}
TOPICS = {'/camera/depth_relative': 'sensor_msgs/msg/Image',
          '/camera/depth_relative/camera_info': 'sensor_msgs/msg/CameraInfo',
          '/camera/points_relative': 'sensor_msgs/msg/PointCloud2',
          '/camera/confidence': 'sensor_msgs/msg/Image',
          '/camera/camera_info_estimated': 'sensor_msgs/msg/CameraInfo'}
CAMERA = 'image=/camera/image_raw,camera_info=/camera/camera_info'


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp('batch_relative')
    weights = write_safetensors(anyview_state_dict(), root / 'anyview_tiny.safetensors')
    params = dict(RELATIVE, weights_path=str(weights))
    sample_bag.generate(root / 'bags' / 'cam', sample_bag.SampleBagConfig(**CFG))
    proc = run_batch(root / 'bags', '--params', write_params_file(root / 'rel.yaml', params),
                     '--out', root / 'out', '--camera', CAMERA)
    return {'root': root, 'bag': root / 'bags' / 'cam', 'out': root / 'out', 'proc': proc,
            'params': params}


def test_relative_outputs_and_manifest(run):
    assert run['proc'].returncode == 0, run['proc'].stdout + run['proc'].stderr
    with Reader(run['out'] / 'cam') as r:
        assert {c.topic: c.msgtype for c in r.connections} == TOPICS   # never `depth`
    got, src = bag_messages(run['out'] / 'cam'), bag_messages(run['bag'])
    stamps = [t for t, _ in src['/camera/image_raw']]
    for topic in TOPICS:
        assert [t for t, _ in got[topic]] == stamps, topic
    rel = deserialize_message(got['/camera/depth_relative'][0][1], Image)
    assert rel.encoding == '32FC1' and rel.header.frame_id == 'camera_optical_frame'
    m = manifest(run['out'], 'cam')
    assert m['status'] == 'ok' and m['frames'] == {'in': 3, 'out': 3, 'skipped': {}}, m


@pytest.mark.ros
@pytest.mark.one_distro   # batch output is distro-independent; the nodes run on Kilted elsewhere
def test_relative_bytes_equal_the_node_on_replay(run, tmp_path):
    recorded = tmp_path / 'recorded'
    replay = python_cmd('tt_depth_ros.tools.bag.replay', str(run['bag']),
                        '--topics', '/camera/image_raw', '/camera/camera_info',
                        '--remap', '/camera/image_raw:=/camera/image',
                        '--as-fast-as', '/camera/depth_relative:sensor_msgs/msg/Image',
                        '--wait-subscribers', '1', '--wait-all', '--record', str(recorded),
                        '--record-topic', *(f'{t}:{typ}' for t, typ in TOPICS.items()))
    with spawn(depth_node_cmd('/camera', run['params']), env=child_env(),
               name='batch-rel-node') as node:
        # the replay waits 10 s for subscribers: a node still building its engine (a loaded
        # machine) would miss the first frames
        wait_for(lambda: 'autostart: active' in node.log_text(), 120, what='the node active')
        with spawn(replay, env=child_env(), name='batch-rel-replay') as play:
            play.wait(120)
            logs = f'--node--\n{node.log_text()}\n--replay--\n{play.log_text()}'
            assert play.returncode == 0, logs
    live, batch = bag_messages(recorded), bag_messages(run['out'] / 'cam')
    for topic in TOPICS:
        a = [raw for _, raw in live.get(topic, [])]
        b = [raw for _, raw in batch[topic]]
        assert len(a) == len(b) == CFG['frames'], f'{topic}\n{logs}'
        assert all(same_payload(x, y) for x, y in zip(a, b)), topic


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
