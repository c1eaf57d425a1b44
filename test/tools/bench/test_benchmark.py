"""Benchmark end to end on the sample bag: the real depth node in its own process.

1. Tiny DA3 (rule-v1 weights) on torch-cpu: the report has every field, every output is matched
   to an input by header stamp, plots exist.
2. A ground-truth engine double inside the real node: the accuracy pass must give AbsRel 0 for
   exact depth and AbsRel 0.1 for depth 10 % too far (metric, no scale alignment).
3. Trajectory pass: the real pair node (temporal) per engine — DUSt3R and the tiny DA3 any-view
   model (2-view chain and a 3-view window), rule-v1 weights — against the bag's ground-truth
   poses; the section's poses are the run's, its errors follow from them; Sim(3) alignment math.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from support.procs import ROOT, python_cmd, spawn
from tt_depth_ros.tools.bag import sample as sample_bag
from tt_depth_ros.tools.bag.io import bag_sha256
from tt_depth_ros.tools.bench import stats as st
from tt_depth_ros.tools.bench import trajectory as bt
from tt_depth_ros.tools.eval import scene_render

# one_distro: the benchmark drives replay and the nodes, whose ROS calls the Kilted pass makes
pytestmark = [pytest.mark.ros, pytest.mark.one_distro]
W, H = 112, 84          # multiples of 14: the GT test runs the network at camera size


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp('bench') / 'sample'
    sample_bag.generate(path, sample_bag.SampleBagConfig(width=W, height=H, frames=6))
    return path


def _bench(args, name, timeout=240):
    env = {'PYTHONPATH': f'{ROOT / "test"}:{ROOT}'}   # test/: support.fake_engines
    with spawn(python_cmd('tt_depth_ros.tools.bench.benchmark', *args), env=env, timeout=30,
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
    assert [Path(p).name for p in r['plots']] == [
        f'depth_node_RANDOM-WEIGHTS_{k}.png' for k in ('latency_cdf', 'throughput', 'resources')]
    for p in r['plots']:
        assert Path(p).read_bytes()[:4] == b'\x89PNG' and Path(p).stat().st_size > 10_000
    # throughput vs offered rate: one point per rate run, its counts those of the runs there
    rates = sorted({run['rate_hz'] for run in r['runs']})
    assert [p['rate_hz'] for p in r['throughput_vs_rate']] == rates
    for p in r['throughput_vs_rate']:
        there = [run['metrics'] for run in r['runs'] if run['rate_hz'] == p['rate_hz']]
        assert p['frames_sent'] == sum(m[st.NUM_FRAMES_SENT] for m in there)
        assert p['missed_frames'] == sum(m[st.NUM_MISSED_FRAMES] for m in there)
        assert p['drop_percent'] == pytest.approx(100 * p['missed_frames'] / p['frames_sent'])
        assert 0 < p['output_fps'] <= 1.25 * p['rate_hz']      # a node cannot outrun its input
        assert p['output_fps'] < p['r2b_mean_frame_rate']
    # ros2_benchmark layout: in the report and beside it, headline = the peak search's rate
    r2b = json.loads((out / 'depth_node_RANDOM-WEIGHTS_ros2_benchmark.json').read_text())
    assert r2b == r['ros2_benchmark'] and r['ros2_benchmark_path'].endswith('_ros2_benchmark.json')
    peak = r['peak_throughput']['peak_rate_hz']
    kept_up = [p['rate_hz'] for p in r['throughput_vs_rate'] if all(
        st.accepted(run['metrics']) for run in r['runs'] if run['rate_hz'] == p['rate_hz'])]
    assert r2b['headline_offered_rate_hz'] == (
        peak if peak is not None else kept_up[-1] if kept_up else min(rates))
    assert r2b['metadata']['BenchmarkMetadata.NAME'] == r['metadata']['name']
    for p in r['throughput_vs_rate']:
        block = r2b['per_offered_rate'][f'{p["rate_hz"]:g}']
        there = [run['metrics'] for run in r['runs'] if run['rate_hz'] == p['rate_hz']]
        assert block['BasicPerformanceMetrics.NUM_MISSED_FRAMES'] == pytest.approx(
            p['missed_frames'] / p['runs'])                   # <= 2 runs: the mean, as r2b
        lat = [x for run in r['runs'] if run['rate_hz'] == p['rate_hz']
               for x in run['series']['latency_ms']]
        assert block['BasicPerformanceMetrics.MAX_LATENCY'] == pytest.approx(max(lat))
        assert block['BasicPerformanceMetrics.MIN_LATENCY'] == pytest.approx(min(lat))
        assert min(lat) <= block['BasicPerformanceMetrics.MEAN_LATENCY'] <= max(lat)
        assert min(lat) <= block['latency_p50_ms'] <= block['latency_p99_ms'] <= max(lat)
        fps = [m[st.MEAN_FRAME_RATE] for m in there]
        assert min(fps) <= block['BasicPerformanceMetrics.MEAN_FRAME_RATE'] <= max(fps)
        assert 0 < block['BasicPerformanceMetrics.MEAN_FRAME_RATE'] < 3 * p['rate_hz']
        assert block['BasicPerformanceMetrics.MEAN_JITTER'] >= 0


@pytest.mark.parametrize('scale', [1.0, 1.1])
def test_accuracy_against_ground_truth_engine(bag, tmp_path, scale):
    focal = scene_render.intrinsics(W, H)[0, 0]
    args = json.dumps({'bag': str(bag), 'focal': focal, 'scale': scale})
    out = tmp_path / 'gt'
    _bench(['--bag', str(bag), '--out', str(out), '--name', 'gt', '--weights', '',
            '--rates', '5', '--duration', '1', '--no-peak', '--warmup', '1',
            '--param', "engine_plugin:='support.fake_engines.ground_truth:GroundTruthEngine'",
            '--param', f"engine_plugin_args:='{args}'",
            '--param', f'network_height:={H}', '--param', f'network_width:={W}'], 'bench-gt')
    r = json.loads((out / 'gt.json').read_text())
    acc = r['accuracy']
    assert acc['frames'] == 6 and acc['pred_coverage'] == 1.0 and acc['sky_recall'] == 1.0
    assert acc['abs_rel'] == pytest.approx(scale - 1.0, abs=1e-5)
    assert acc['delta1'] == 1.0
    assert r['unmatched_outputs_total'] == 0
    assert r['backend']['reported'] == 'test-double'


TRAJECTORY_ENGINES = ('dust3r-tiny', 'da3-anyview-tiny@3')


def test_trajectory_engine_specs_reach_the_pair_node_command():
    assert bt.parse_engine('dust3r-tiny') == ('dust3r-tiny', 2, 'auto')
    assert bt.parse_engine('da3-small@4:pnp') == ('da3-small', 4, 'pnp')
    assert bt.parse_engine('da3-small:camera_decoder') == ('da3-small', 2, 'camera_decoder')
    for bad, match in (('da3-small:ray', 'pose source'), ('@3', 'expected MODEL'),
                       ('da3-small@x', 'not an integer'), ('da3-small@1', '>= 2')):
        with pytest.raises(ValueError, match=match):
            bt.parse_engine(bad)
    cmd = bt._node_cmd('da3-small', 4, '', 'torch-cpu', 112, '/img', '/info', '/ns', 'pnp')
    assert 'pose_source:=pnp' in cmd and 'window_size:=4' in cmd
    assert not any(c.startswith('pose_source') for c in
                   bt._node_cmd('dust3r-tiny', 2, '', 'torch-cpu', 112, '/i', '/c', '/n'))


def test_trajectory_section_per_engine(bag, tmp_path):
    out = tmp_path / 'traj'
    log = _bench(['--bag', str(bag), '--out', str(out), '--name', 'traj', '--rates', '4',
                  '--duration', '1', '--no-peak', '--warmup', '1', '--no-accuracy',
                  '--trajectory', *TRAJECTORY_ENGINES], 'bench-traj', timeout=300)
    r = json.loads((out / 'traj_RANDOM-WEIGHTS.json').read_text())
    assert set(r['trajectory']) == set(TRAJECTORY_ENGINES), log
    truth = scene_render.default_trajectory(6, sample_bag.SampleBagConfig().step_m)
    for spec, t in r['trajectory'].items():
        model, window, _ = bt.parse_engine(spec)
        assert (t['model'], t['window_size']) == (model, window)
        assert t['frames_sent'] == 6 and 'mode:=temporal' in t['node_command']
        assert t['poses'] == len(t['poses_est']) == len(t['poses_gt']) == len(t['frame_indices'])
        for i, T in zip(t['frame_indices'], t['poses_gt']):      # matched to the right frame
            np.testing.assert_allclose(T, truth[i], atol=1e-6)
        errs = bt.trajectory_errors([np.array(T) for T in t['poses_est']],
                                    [np.array(T) for T in t['poses_gt']])
        for key in ('ate_rmse_m', 'sim3_scale', 'rpe_rot_deg', 'rpe_trans_dir_deg'):
            want = errs[key] if np.isfinite(errs[key]) else None     # JSON: NaN -> null
            assert t[key] == (want if want is None else pytest.approx(want)), (spec, key)
        assert f'trajectory {spec}: {t["poses"]}/6 poses' in log
    for spec in TRAJECTORY_ENGINES[1:]:     # the camera decoder always gives a pose
        t = r['trajectory'][spec]
        assert t['poses'] == 6 and t['ate_rmse_m'] is not None and t['ate_rmse_m'] >= 0
        assert 'window_size:=3' in t['node_command']
    dust3r = r['trajectory']['dust3r-tiny']    # random weights: PnP may find no pose
    if dust3r['poses'] < 3:
        assert dust3r['ate_rmse_m'] is None and 'at least 3' in dust3r['ate_note']


def test_sim3_alignment_recovers_a_known_similarity():
    rng = np.random.default_rng(3)
    src = rng.normal(size=(8, 3))
    angle = 0.7
    R = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0],
                  [0, 0, 1]])
    dst = 2.5 * src @ R.T + np.array([1.0, -2.0, 0.5])
    s, R_fit, t = bt.umeyama_sim3(src, dst)
    assert s == pytest.approx(2.5) and np.allclose(R_fit, R) and np.allclose(t, [1, -2, 0.5])
    est = []
    for p in src:
        T = np.eye(4)
        T[:3, 3] = p
        est.append(T)
    gt = [np.diag([1.0, 1.0, 1.0, 1.0]) for _ in est]
    for T, q in zip(gt, dst):
        T[:3, :3] = R
        T[:3, 3] = q
    errs = bt.trajectory_errors(est, gt)
    assert errs['ate_rmse_m'] == pytest.approx(0.0, abs=1e-9) and errs['sim3_scale'] == \
        pytest.approx(2.5)
    gt[3][:3, 3] += [0.0, 0.0, 0.8]          # one position off: a non-zero ATE
    assert bt.trajectory_errors(est, gt)['ate_rmse_m'] > 0.1
