"""The README demo runs end to end offline (quick mode): random weights are labelled everywhere.

The DA3-SMALL pass runs the tiny any-view config as a labelled stand-in (rule-v1 + X1, built from
the package, no test data): relative outputs only, nothing on `depth`.
"""
import json
from pathlib import Path

import pytest

from support.procs import python_cmd, spawn

# The README demo runs in the Jazzy venv (`make demo`); its ROS surface (replay, record, the
# nodes) is covered on Kilted by the bag and node tests.
pytestmark = [pytest.mark.ros, pytest.mark.one_distro]


def test_demo_quick_offline(tmp_path, monkeypatch):
    out = tmp_path / 'demo_out'
    monkeypatch.delenv('WEIGHTS', raising=False)
    monkeypatch.delenv('PAIR_WEIGHTS', raising=False)
    env = {'HF_HUB_OFFLINE': '1', 'HF_HUB_CACHE': str(tmp_path / 'empty_cache')}
    with spawn(python_cmd('tt_depth_ros.tools.demo.run', '--out', str(out), '--quick', '--offline'),
               env=env, timeout=30, name='demo') as proc:
        proc.wait(600)
        log = proc.log_text()
    assert proc.returncode == 0, log
    assert log.count('RANDOM-WEIGHTS') >= 3             # said at start, per model and at the end
    files = [p for p in out.iterdir() if p.is_file()]
    assert files and all('RANDOM-WEIGHTS' in p.name for p in files), [p.name for p in files]
    report = json.loads(next(out.glob('demo_report_RANDOM-WEIGHTS.json')).read_text())
    assert report['random_weights'] is True
    assert report['weights']['depth']['source'] == 'rule-v1'
    depth = report['depth']
    assert depth['outputs'] == depth['frames_sent'] == 12
    assert len(depth['panels']) == 12 and all(Path(p).read_bytes()[:4] == b'\x89PNG'
                                              for p in depth['panels'])
    ply = Path(depth['ply']).read_bytes()
    assert ply.startswith(b'ply\n') and b'element vertex' in ply and len(ply) > 10_000
    assert depth['recorded_counts']['/depth'] >= 12
    assert 0 <= depth['accuracy']['delta1'] <= 1
    assert 'tiny-config STAND-IN for da3-small' in log
    anyview = report['anyview']
    assert report['weights']['anyview']['source'] == 'rule-v1'
    assert (anyview['model'], anyview['stand_in_for']) == ('da3-anyview-tiny', 'da3-small')
    assert anyview['depth_relative'] == anyview['frames_sent'] == 4
    assert anyview['confidence'] == 4 and anyview['camera_info_estimated'] >= 1
    assert anyview['metric_depth_messages'] == 0              # a relative model has no metres
    K = anyview['K_estimated_first']
    assert K[0][0] > 0 and K[1][1] > 0 and K[2] == [0.0, 0.0, 1.0]
    assert len(anyview['panels']) == 4 and all(
        'da3-anyview-tiny-standin-for-da3-small_RANDOM-WEIGHTS' in Path(p).name
        for p in anyview['panels'])
    assert len(anyview['alignment_scales']) == 4 and 0 <= anyview['accuracy']['delta1'] <= 1
    bench = json.loads(Path(report['benchmark']['json']).read_text())
    assert bench['unmatched_outputs_total'] == 0 and len(bench['plots']) == 3
    assert bench['config']['tag'] == '_RANDOM-WEIGHTS'
    if isinstance(report['weights']['pair'], dict):       # pair node installed
        assert report['pair']['pairs_sent'] == 2 and report['pair']['clouds'] >= 1
