"""Benchmark end to end on the sample bag: the real depth node in its own process.

1. Tiny DA3 (rule-v1 weights) on torch-cpu: the report has every field, every output is matched
   to an input by header stamp, plots exist.
2. A ground-truth engine double inside the real node: the accuracy pass must give AbsRel 0 for
   exact depth and AbsRel 0.1 for depth 10 % too far (metric, no scale alignment).
"""
import json
from pathlib import Path

import pytest

from support.procs import ROOT, python_cmd, spawn
from tt_depth_ros.geometry import scene_render
from tt_depth_ros.tools import bench_stats as st
from tt_depth_ros.tools import sample_bag
from tt_depth_ros.tools.bag_io import bag_sha256

pytestmark = pytest.mark.ros
W, H = 112, 84          # multiples of 14: the GT test runs the network at camera size


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp('bench') / 'sample'
    sample_bag.generate(path, sample_bag.SampleBagConfig(width=W, height=H, frames=6))
    return path


def _bench(args, name, timeout=240):
    env = {'PYTHONPATH': f'{Path(__file__).parent}:{ROOT}'}
    with spawn(python_cmd('tt_depth_ros.tools.benchmark', *args), env=env, timeout=30,
               name=name) as proc:
        proc.wait(timeout)
        log = proc.log_text()
    assert proc.returncode == 0, log
    return log


def test_tiny_model_report_complete(bag, tmp_path):
    out = tmp_path / 'out'
    log = _bench(['--bag', str(bag), '--out', str(out), '--rates', '2', '4', '--duration', '1.5',
                  '--peak-lo', '2', '--peak-hi', '6', '--peak-steps', '2', '--warmup', '2'],
                 'bench-tiny')
    assert 'RANDOM weights' in log and 'fixed rate 2.0 Hz' in log   # progress is printed
    report_path = out / 'depth_node_RANDOM-WEIGHTS.json'
    r = json.loads(report_path.read_text())
    for key in ('metadata', 'hardware', 'software', 'backend', 'config', 'dataset', 'baseline',
                'fixed_rate', 'peak_throughput', 'runs', 'accuracy', 'plots',
                'unmatched_outputs_total', 'resources_series'):
        assert key in r, key
    for key in ('name', 'datetime', 'hostname', 'arch', 'os'):
        assert r['metadata'][key]
    assert r['dataset']['sha256'] == bag_sha256(bag)
    assert r['backend']['reported'] == 'torch-cpu' and r['backend']['model'] == 'da3metric-tiny'
    assert set(r['fixed_rate']) == {'2', '4'}
    assert r['unmatched_outputs_total'] == 0
    assert len(r['runs']) == 2 + len(r['peak_throughput']['steps'])
    for run in r['runs']:
        m = run['metrics']
        assert m['num_unmatched_outputs'] == 0 and m['num_matched'] > 0
        for key in st.BASIC_KEYS + st.EXTRA_KEYS + (st.MEAN_CPU, st.MAX_CPU):
            assert key in m, (run['label'], key)
        assert m['latency_p50_ms'] <= m['latency_p99_ms'] <= m[st.MAX_LATENCY]
        assert run['resources']['samples'] > 0 and run['resources']['node_rss_mb_max'] > 50
        assert 'infer' in run['stages_ms'] and len(run['series']['latency_ms']) == m['num_matched']
    assert st.BASELINE_CPU in r['baseline']
    acc = r['accuracy']
    assert acc['frames'] == 6 and acc['scale_alignment'].startswith('none')
    assert 0 <= acc['delta1'] <= 1 and acc['abs_rel'] >= 0
    assert len(r['plots']) == 3
    for p in r['plots']:
        assert 'RANDOM-WEIGHTS' in Path(p).name
        assert Path(p).read_bytes()[:4] == b'\x89PNG'


@pytest.mark.parametrize('scale', [1.0, 1.1])
def test_accuracy_against_ground_truth_engine(bag, tmp_path, scale):
    focal = scene_render.intrinsics(W, H)[0, 0]
    args = json.dumps({'bag': str(bag), 'focal': focal, 'scale': scale})
    out = tmp_path / 'gt'
    _bench(['--bag', str(bag), '--out', str(out), '--name', 'gt', '--weights', '',
            '--rates', '5', '--duration', '1', '--no-peak', '--warmup', '1',
            '--param', "engine_plugin:='gt_engine:GroundTruthEngine'",
            '--param', f"engine_plugin_args:='{args}'",
            '--param', f'network_height:={H}', '--param', f'network_width:={W}'], 'bench-gt')
    r = json.loads((out / 'gt.json').read_text())
    acc = r['accuracy']
    assert acc['frames'] == 6 and acc['pred_coverage'] == 1.0 and acc['sky_recall'] == 1.0
    assert acc['abs_rel'] == pytest.approx(scale - 1.0, abs=1e-5)
    assert acc['delta1'] == 1.0
    assert r['unmatched_outputs_total'] == 0
    assert r['backend']['reported'] == 'test-double'
