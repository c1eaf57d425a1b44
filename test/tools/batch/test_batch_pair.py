"""tt-depth-batch with the pair node's parameter file: its outputs, and poses equal to the node's.

The key check (same numbers as the node): for the sample bag's stereo pair, the poses
(PoseStamped and /tf) the batch writes equal, within 1e-9, what the real pair node publishes when
the same bag is replayed through it with the same parameters; the cloud and depth bytes are equal
too. The engine is the real DUSt3R engine, tiny config with rule-v1 weights (random geometry:
lenient PnP settings so every pair has a pose); temporal mode runs on the left camera alone.
"""
import sys

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader
from sensor_msgs.msg import Image
from tf2_msgs.msg import TFMessage

from support.batch_runs import (
    CFG,
    PAIR_PARAMS,
    bag_messages,
    manifest,
    run_batch,
    same_payload,
    write_params_file,
)
from support.procs import python_cmd, ros_node_cmd, spawn, wait_for
from support.rosutil import child_env
from tt_depth_ros.tools.bag import sample as sample_bag

PAIR = PAIR_PARAMS
ENV = child_env()   # test/ on PYTHONPATH: the engine plugin
NS = '/camera'     # stereo: camera 1's namespace holds the node's outputs
STEREO_TOPICS = {f'{NS}/pose': 'geometry_msgs/msg/PoseStamped', '/tf': 'tf2_msgs/msg/TFMessage',
                 f'{NS}/points': 'sensor_msgs/msg/PointCloud2',
                 f'{NS}/depth_unscaled': 'sensor_msgs/msg/Image',
                 f'{NS}/depth_unscaled/camera_info': 'sensor_msgs/msg/CameraInfo'}


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """One stereo batch run and one temporal one over the sample bag."""
    root = tmp_path_factory.mktemp('batch_pair')
    sample_bag.generate(root / 'bags' / 'rig', sample_bag.SampleBagConfig(**CFG))
    stereo = run_batch(root / 'bags', '--params', write_params_file(root / 'pair.yaml', PAIR),
                       '--out', root / 'stereo', env=ENV)
    temporal = run_batch(root / 'bags', '--params', write_params_file(
        root / 'temporal.yaml', dict(PAIR, mode='temporal', keyframe_every_n=1)),
        '--out', root / 'temporal', '--camera',
        'image=/camera/image_raw,camera_info=/camera/camera_info', env=ENV)
    return {'root': root, 'bag': root / 'bags' / 'rig', 'stereo': stereo, 'temporal': temporal}


def _poses(msgs: list[bytes]) -> list[tuple[int, str, np.ndarray]]:
    out = []
    for raw in msgs:
        m = deserialize_message(raw, PoseStamped)
        p, q = m.pose.position, m.pose.orientation
        out.append((m.header.stamp.sec * 10**9 + m.header.stamp.nanosec, m.header.frame_id,
                    np.array([p.x, p.y, p.z, q.x, q.y, q.z, q.w])))
    return out


def _tfs(msgs: list[bytes]) -> list[tuple[int, str, str, np.ndarray]]:
    out = []
    for raw in msgs:
        for tr in deserialize_message(raw, TFMessage).transforms:
            t, q = tr.transform.translation, tr.transform.rotation
            out.append((tr.header.stamp.sec * 10**9 + tr.header.stamp.nanosec,
                        tr.header.frame_id, tr.child_frame_id,
                        np.array([t.x, t.y, t.z, q.x, q.y, q.z, q.w])))
    return out


def test_stereo_outputs_stamps_and_manifest(run):
    proc, out = run['stereo'], run['root'] / 'stereo'
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Reader(out / 'rig') as r:
        assert {c.topic: c.msgtype for c in r.connections} == STEREO_TOPICS
    got, src = bag_messages(out / 'rig'), bag_messages(run['bag'])
    left = [deserialize_message(raw, Image).header for _, raw in src['/camera/image_raw']]
    poses = _poses([raw for _, raw in got[f'{NS}/pose']])
    assert [(s, f) for s, f, _ in poses] == [
        (h.stamp.sec * 10**9 + h.stamp.nanosec, h.frame_id) for h in left]
    tfs = _tfs([raw for _, raw in got['/tf']])
    assert {(f, c) for _, f, c, _ in tfs} == {
        ('camera_optical_frame', 'camera_right_optical_frame_dust3r_unscaled')}
    for (_, _, pose), (_, _, _, tf) in zip(poses, tfs):
        assert np.array_equal(pose, tf)      # one pose, two messages
    assert [t for t, _ in got[f'{NS}/points']] == [t for t, _ in src['/camera/image_raw']]
    m = manifest(out, 'rig')
    assert m['status'] == 'ok' and m['node'] == 'pair', m
    assert m['frames'] == {'in': 2 * CFG['frames'], 'out': CFG['frames'], 'skipped': {}}
    assert m['cameras'][0]['pairs'] == CFG['frames'] and m['cameras'][0]['ns'] == NS
    assert m['output']['topics'] == {t: CFG['frames'] for t in STEREO_TOPICS}


def test_temporal_chain_from_the_first_keyframe(run):
    proc, out = run['temporal'], run['root'] / 'temporal'
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = bag_messages(out / 'rig')
    poses = _poses([raw for _, raw in got[f'{NS}/pose']])
    assert len(poses) == CFG['frames'] and {f for _, f, _ in poses} == {'dust3r_odom'}
    assert np.array_equal(poses[0][2], [0, 0, 0, 0, 0, 0, 1])   # the odom origin
    assert f'{NS}/points' in got and len(got[f'{NS}/points']) == CFG['frames'] - 1
    assert manifest(out, 'rig')['frames']['out'] == CFG['frames']


def test_stereo_needs_two_cameras_before_any_engine(run, tmp_path):
    proc = run_batch(run['bag'], '--params', run['root'] / 'pair.yaml', '--out', tmp_path,
                     '--camera', 'image=/camera/image_raw,camera_info=/camera/camera_info',
                     env=ENV)
    assert proc.returncode == 1
    reason = manifest(tmp_path, 'rig')['reason']
    assert "mode 'stereo' pairs two cameras, got 1" in reason and '--camera twice' in reason
    assert 'engine' not in proc.stderr


#: mode -> (bag topics replayed, remaps onto the node's inputs, pacing output, its params)
REPLAY = {
    'stereo': (['/camera/image_raw', '/camera/camera_info', '/camera_right/image_raw',
                '/camera_right/camera_info'],
               [f'/camera/image_raw:={NS}/camera1/image',
                f'/camera/camera_info:={NS}/camera1/camera_info',
                f'/camera_right/image_raw:={NS}/camera2/image',
                f'/camera_right/camera_info:={NS}/camera2/camera_info'],
               f'{NS}/points:sensor_msgs/msg/PointCloud2', PAIR),
    'temporal': (['/camera/image_raw', '/camera/camera_info'],
                 [f'/camera/image_raw:={NS}/image'],   # camera_info is already there
                 f'{NS}/pose:geometry_msgs/msg/PoseStamped',
                 dict(PAIR, mode='temporal', keyframe_every_n=1)),
}


@pytest.mark.ros
@pytest.mark.one_distro   # batch output is distro-independent; the nodes run on Kilted elsewhere
@pytest.mark.parametrize('mode', ['stereo', 'temporal'])
def test_poses_equal_the_pair_node_on_replay(run, tmp_path, mode):
    """Replay the bag through a real pair node, record what it publishes, compare."""
    recorded = tmp_path / 'recorded'
    topics, remap, pace, params = REPLAY[mode]
    replay = python_cmd('tt_depth_ros.tools.bag.replay', str(run['bag']), '--topics', *topics,
                        '--remap', *remap, '--frame-topic', '/camera/image_raw',
                        '--as-fast-as', pace, '--wait-subscribers', '1', '--wait-all',
                        '--record', str(recorded),
                        '--record-topic', *(f'{t}:{typ}' for t, typ in STEREO_TOPICS.items()))
    node = ros_node_cmd('tt_depth_ros.ros.pair', NS, params, 'pair_node')
    with spawn(node, env=child_env(), name=f'batch-pair-node-{mode}') as proc:
        # the replay waits 10 s for subscribers: a node still building its engine (a loaded
        # machine) would miss the first frames
        wait_for(lambda: 'autostart: active' in proc.log_text(), 120, what='the node active')
        with spawn(replay, env=child_env(), name=f'batch-pair-replay-{mode}') as play:
            play.wait(120)
            logs = f'--node--\n{proc.log_text()}\n--replay--\n{play.log_text()}'
            assert play.returncode == 0, logs
    live, batch = bag_messages(recorded), bag_messages(run['root'] / mode / 'rig')
    raw = {k: [r for _, r in v] for k, v in live.items()}
    mine = {k: [r for _, r in v] for k, v in batch.items()}
    a, b = _poses(raw.get(f'{NS}/pose', [])), _poses(mine[f'{NS}/pose'])
    assert len(a) == len(b) == CFG['frames'], logs
    for (sa, fa, va), (sb, fb, vb) in zip(a, b):
        assert (sa, fa) == (sb, fb)
        assert np.max(np.abs(va - vb)) <= 1e-9, (va, vb)
    a, b = _tfs(raw['/tf']), _tfs(mine['/tf'])
    assert len(a) == len(b) == CFG['frames'] and [x[:3] for x in a] == [x[:3] for x in b]
    assert all(np.max(np.abs(x[3] - y[3])) <= 1e-9 for x, y in zip(a, b))
    for topic in (f'{NS}/points', f'{NS}/depth_unscaled'):   # temporal: none for the origin
        n = CFG['frames'] - (mode == 'temporal')
        assert len(raw[topic]) == len(mine[topic]) == n, topic
        assert all(same_payload(x, y) for x, y in zip(raw[topic], mine[topic])), topic


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
