"""tt-depth-batch on generated bags: outputs, failures, resume, --force, node-identical bytes.

The key check: its depth (and camera_info, points) bytes equal what the depth node publishes when
the same bag is replayed through it with the same parameters.

One batch run (module fixture, a subprocess like a user's, two pool workers) over a directory
holding an MCAP bag, a sqlite3 bag, a truncated MCAP bag and a bag whose output place is taken by
a foreign directory, plus an explicit non-bag; then a resume run and an in-process `--force` run.
"""
import os
import shutil
import subprocess
import sys

import pytest
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from support.batch_runs import (
    CFG,
    PARAMS,
    bag_messages,
    manifest,
    run_batch,
    same_payload,
    write_params_file,
)
from support.da3_fixtures import tiny_state_dict, write_safetensors
from support.procs import python_cmd, spawn
from support.rosutil import child_env, depth_node_cmd
from tt_depth_ros.tools.bag import sample as sample_bag

OUT_TOPICS = {f'{ns}/{t}': typ for ns in ('/camera', '/camera_right')
              for t, typ in (('depth', 'sensor_msgs/msg/Image'),
                             ('depth/camera_info', 'sensor_msgs/msg/CameraInfo'),
                             ('points', 'sensor_msgs/msg/PointCloud2'))}


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """The first batch run: inputs, weights, parameter file, output dir, its result."""
    root = tmp_path_factory.mktemp('batch')
    weights = write_safetensors(tiny_state_dict(), root / 'tiny.safetensors')
    params = dict(PARAMS, weights_path=str(weights))
    write_params_file(root / 'depth.yaml', params)
    bags = root / 'bags'
    sample_bag.generate(bags / 'mcap_a', sample_bag.SampleBagConfig(**CFG))
    sample_bag.generate(bags / 'sql_b', sample_bag.SampleBagConfig(**CFG, storage='sqlite3'))
    shutil.copytree(bags / 'mcap_a', bags / 'truncated')
    data = bags / 'truncated' / 'mcap_a.mcap'
    data.write_bytes(data.read_bytes()[:data.stat().st_size * 6 // 10])
    shutil.copytree(bags / 'sql_b', bags / 'taken')
    not_a_bag = root / 'notes'
    not_a_bag.mkdir()
    (not_a_bag / 'readme.txt').write_text('not a bag')
    out = root / 'out'
    (out / 'taken').mkdir(parents=True)
    (out / 'taken' / 'mine.txt').write_text('a user file')
    proc = run_batch(bags, not_a_bag, '--params', root / 'depth.yaml', '--out', out,
                     '--workers', '2')
    return {'root': root, 'bags': bags, 'out': out, 'params': params, 'proc': proc,
            'yaml': root / 'depth.yaml', 'not_a_bag': not_a_bag}


def test_outputs_failures_and_manifests(run):
    proc, out, bags = run['proc'], run['out'], run['bags']
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1, log   # three inputs failed, the run went on
    for name in ('mcap_a', 'sql_b'):
        got = bag_messages(out / name)
        with Reader(out / name) as r:
            assert {c.topic: c.msgtype for c in r.connections} == OUT_TOPICS
        assert 'storage_identifier: mcap' in (out / name / 'metadata.yaml').read_text()
        src = bag_messages(bags / name)
        for ns in ('/camera', '/camera_right'):
            images = src[f'{ns}/image_raw' if ns == '/camera' else '/camera_right/image_raw']
            for topic, cls in ((f'{ns}/depth', Image), (f'{ns}/depth/camera_info', CameraInfo),
                               (f'{ns}/points', PointCloud2)):
                assert [t for t, _ in got[topic]] == [t for t, _ in images], topic
                for (_, raw), (_, img) in zip(got[topic], images):
                    a, b = deserialize_message(raw, cls), deserialize_message(img, Image)
                    assert a.header == b.header, topic   # source stamp and optical frame
            depth = deserialize_message(got[f'{ns}/depth'][0][1], Image)
            assert (depth.encoding, depth.width, depth.height) == ('32FC1', 64, 48)
        m = manifest(out, name)
        assert m['status'] == 'ok' and m['reason'] is None, m
        assert m['frames'] == {'in': 6, 'out': 6, 'skipped': {}}
        assert m['model'] == 'da3metric-tiny' and m['backend'] == 'torch-cpu'
        assert len(m['weights']['sha256']) == 64 and len(m['params_sha256']) == 64
        assert m['software']['tt_depth_ros'] and m['timings']['wall_s'] > 0
        assert m['output']['topics'] == {t: 3 for t in OUT_TOPICS}
    # same scene in both storages: the same numbers
    a, b = bag_messages(out / 'mcap_a'), bag_messages(out / 'sql_b')
    assert a['/camera/depth'] == b['/camera/depth']

    reasons = {n: manifest(out, n) for n in ('truncated', 'taken', 'notes')}
    assert all(m['status'] == 'failed' for m in reasons.values())
    assert 'corrupt or truncated' in reasons['truncated']['reason']
    assert 'not written by tt-depth-batch' in reasons['taken']['reason']
    assert (out / 'taken' / 'mine.txt').read_text() == 'a user file'   # never touched
    assert 'is not a rosbag2' in reasons['notes']['reason']
    assert not list(out.glob('*.partial*'))          # nothing half-written left
    assert not (out / 'truncated').exists() and not (out / 'notes').exists()
    for name in ('truncated', 'taken', 'notes'):
        assert f'{name}: FAILED' in proc.stderr
    assert 'failed' in proc.stdout and 'mcap_a' in proc.stdout   # the summary table
    assert 'progress: 5/5 bags, 12 frames out' in proc.stderr    # one line per finished bag
    assert len({line.split()[2] for line in proc.stderr.splitlines()
                if ': processing' in line}) == 2      # [pid]: the two bags in two pool workers


def test_resume_skips_and_force_redoes(run):
    out, bags = run['out'], run['bags']
    before = bag_messages(out / 'mcap_a')
    started, print_before = (manifest(out, 'mcap_a')[k] for k in ('started', 'fingerprint'))
    again = run_batch(bags / 'mcap_a', bags / 'sql_b', '--params', run['yaml'], '--out', out)
    assert again.returncode == 0, again.stdout + again.stderr
    assert 'mcap_a: up to date' in again.stderr and 'sql_b: up to date' in again.stderr
    assert 'engine' not in again.stderr            # nothing to do: no engine built
    assert manifest(out, 'mcap_a')['started'] == started
    forced = run_batch(bags / 'mcap_a', '--params', run['yaml'], '--out', out, '--force',
                    '--camera', 'image=/camera/image_raw,camera_info=/camera/camera_info')
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert 'mcap_a: processing' in forced.stderr
    redone = bag_messages(out / 'mcap_a')
    assert set(redone) == {'/camera/depth', '/camera/depth/camera_info', '/camera/points'}
    assert all(redone[t] == before[t] for t in redone)    # in-process == pool, byte for byte
    assert manifest(out, 'mcap_a')['fingerprint'] != print_before   # other cameras: new print


def test_missing_topic_fails_before_any_engine(run, tmp_path):
    proc = run_batch(run['bags'] / 'mcap_a', '--params', run['yaml'], '--out', tmp_path / 'o',
                  '--camera', 'image=/front/image_raw,camera_info=/front/camera_info')
    assert proc.returncode == 1
    reason = manifest(tmp_path / 'o', 'mcap_a')['reason']
    assert 'mcap_a' in reason and 'topic /front/image_raw is not in the bag' in reason
    assert '--camera' in reason and 'engine' not in proc.stderr


def test_bad_parameter_file_is_a_usage_error(run, tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text(run['yaml'].read_text() + '    sky_mode: "purple"\n    no_such: 1\n')
    proc = run_batch(run['bags'] / 'mcap_a', '--params', bad, '--out', tmp_path / 'o')
    assert proc.returncode == 2
    assert 'sky_mode' in proc.stderr and 'no_such: not a depth node parameter' in proc.stderr


def _without_ray(*args, env=None):
    """The CLI in a process where `import ray` fails, as where the extra is not installed."""
    code = ('import sys; sys.modules["ray"] = None; '
            'from tt_depth_ros.tools.batch.run import main; sys.exit(main(sys.argv[1:]))')
    full_env = {k: v for k, v in os.environ.items() if k != 'RAY_ADDRESS'}
    return subprocess.run([sys.executable, '-c', code, *map(str, args)], capture_output=True,
                          text=True, timeout=60, env={**full_env, **(env or {})})


def test_ray_without_ray_installed_says_how_to_install_it(run, tmp_path):
    common = (run['bags'] / 'mcap_a', '--params', run['yaml'], '--out', tmp_path / 'o')
    for proc in (_without_ray(*common, '--ray', 'auto'),
                 _without_ray(*common, env={'RAY_ADDRESS': '127.0.0.1:6379'})):
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count('\n') == 1, proc.stderr      # one line, no traceback
        assert "pip install 'tt_depth_ros[ray]'" in proc.stderr
        assert 'requirements/ray.txt' in proc.stderr
    assert not (tmp_path / 'o').exists()                   # nothing started
    proc = _without_ray(*common, '--ray-resources', 'tenstorrent=1')
    assert proc.returncode == 2 and 'add --ray' in proc.stderr, proc.stderr
    proc = _without_ray(*common, '--ray', 'auto', '--ray-resources', 'tenstorrent')
    assert proc.returncode == 2 and 'NAME=AMOUNT' in proc.stderr, proc.stderr


@pytest.mark.ros
@pytest.mark.one_distro   # batch output is distro-independent; the nodes run on Kilted elsewhere
def test_batch_bytes_equal_the_node_on_replay(run, tmp_path):
    """Replay mcap_a through a real depth node, record its outputs, compare with the batch bag."""
    params, recorded = run['params'], tmp_path / 'recorded'
    topics = ['/camera/depth:sensor_msgs/msg/Image',
              '/camera/depth/camera_info:sensor_msgs/msg/CameraInfo',
              '/camera/points:sensor_msgs/msg/PointCloud2']
    replay = python_cmd('tt_depth_ros.tools.bag.replay', str(run['bags'] / 'mcap_a'),
                        '--topics', '/camera/image_raw', '/camera/camera_info',
                        '--remap', '/camera/image_raw:=/camera/image',
                        '--as-fast-as', '/camera/depth:sensor_msgs/msg/Image',
                        '--wait-subscribers', '1', '--wait-all',
                        '--record', str(recorded), '--record-topic', *topics)
    with spawn(depth_node_cmd('/camera', params), env=child_env(), name='batch-node') as node:
        with spawn(replay, env=child_env(), name='batch-replay') as play:
            play.wait(120)
            logs = f'--node--\n{node.log_text()}\n--replay--\n{play.log_text()}'
            assert play.returncode == 0, logs
    got, batch = bag_messages(recorded), bag_messages(run['out'] / 'mcap_a')
    for topic in ('/camera/depth', '/camera/depth/camera_info', '/camera/points'):
        live = [raw for _, raw in got.get(topic, [])]
        offline = [raw for _, raw in batch[topic]]
        assert len(live) == len(offline) == CFG['frames'], f'{topic}\n{logs}'
        for a, b in zip(live, offline):
            assert same_payload(a, b), topic


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
