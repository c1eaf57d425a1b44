"""Benchmark statistics, peak search, report writing and plots on synthetic, known data."""
import json
import math

import pytest

from tt_depth_ros.tools.bench import plots as bench_plots
from tt_depth_ros.tools.bench import report as bench_report
from tt_depth_ros.tools.bench import stats as st

MS = 1_000_000


def _run(n=20, period_ms=100, lat_ms=lambda i: 10 + i, drop=(), extra=()):
    sent = {1000 + i: i * period_ms * MS for i in range(n)}
    recv = {s: t + int(lat_ms(i) * MS) for i, (s, t) in enumerate(sent.items()) if i not in drop}
    recv.update({s: 5 * MS for s in extra})
    return sent, recv


def test_basic_metrics_known_values():
    sent, recv = _run(drop={3, 7})
    m = st.basic_metrics(sent, recv)
    lat = [10 + i for i in range(20) if i not in (3, 7)]
    assert m[st.NUM_FRAMES_SENT] == 20 and m[st.NUM_MISSED_FRAMES] == 2
    assert m['drop_fraction'] == pytest.approx(0.1) and m['num_unmatched_outputs'] == 0
    assert m[st.MIN_LATENCY] == pytest.approx(10) and m[st.MAX_LATENCY] == pytest.approx(29)
    assert m[st.MEAN_LATENCY] == pytest.approx(sum(lat) / len(lat))
    assert m['latency_p50_ms'] == pytest.approx(sorted(lat)[len(lat) // 2 - 1] / 2
                                                 + sorted(lat)[len(lat) // 2] / 2)
    assert m[st.FIRST_INPUT_LATENCY] == pytest.approx(10)
    assert m[st.LAST_INPUT_LATENCY] == pytest.approx(29)
    assert m[st.MEAN_PLAYBACK_FRAME_RATE] == pytest.approx(20 / 1.9)   # ros2_benchmark formula
    assert set(st.BASIC_KEYS) <= set(m) and set(st.EXTRA_KEYS) <= set(m)


def test_unmatched_outputs_are_reported():
    sent, recv = _run(extra=(1, 2))
    m = st.basic_metrics(sent, recv)
    assert m['num_unmatched_outputs'] == 2 and m['num_matched'] == 20
    pairs, unmatched = st.match_latencies(sent, recv)
    assert unmatched == [1, 2] and [p[0] for p in pairs] == list(sent)


def test_jitter_of_a_regular_stream_is_zero():
    m = st.basic_metrics(*_run(lat_ms=lambda i: 10))
    assert m[st.MAX_JITTER] == pytest.approx(0, abs=1e-6)
    assert m[st.MEAN_FRAME_RATE] == pytest.approx(20 / 1.9)


def test_conclude_drops_best_and_worst_with_three_or_more():
    runs = [{st.MEAN_LATENCY: v, st.MAX_LATENCY: v, st.MIN_LATENCY: v} for v in (1, 2, 3, 10)]
    c = st.conclude(runs)
    assert c[st.MEAN_LATENCY] == pytest.approx(2.5)
    assert c[st.MAX_LATENCY] == 3 and c[st.MIN_LATENCY] == 2
    assert st.conclude([{st.MEAN_LATENCY: 4.0}])[st.MEAN_LATENCY] == 4.0


@pytest.mark.parametrize('true_peak', [0.5, 7.3, 18.0, 40.0])
def test_peak_search_brackets_the_true_peak(true_peak):
    res = st.peak_search(lambda r: r <= true_peak, 1.0, 30.0, max_steps=8, window_hz=0.5)
    assert len(res['steps']) <= 8
    if true_peak < 1.0:
        assert res['peak_rate_hz'] is None
    elif true_peak >= 30.0:
        assert res['peak_rate_hz'] == 30.0
    else:
        lo, hi = res['bracket_hz']
        assert lo <= true_peak < hi and hi - lo <= 0.5 and res['peak_rate_hz'] == lo
    with pytest.raises(ValueError):
        st.peak_search(lambda r: True, 5.0, 1.0)


def test_accepted_uses_five_percent():
    assert st.accepted({st.NUM_FRAMES_SENT: 100, 'drop_fraction': 0.05})
    assert not st.accepted({st.NUM_FRAMES_SENT: 100, 'drop_fraction': 0.06})


def test_report_json_is_strict_and_plots_are_pngs(tmp_path):
    path = bench_report.write_json({'a': math.nan, 'b': [math.inf, 1.0], 'c': {'d': (1, 2)}},
                                   tmp_path / 'r.json')
    assert json.loads(path.read_text()) == {'a': None, 'b': [None, 1.0], 'c': {'d': [1, 2]}}
    runs = [{'rate_hz': 5.0, 'series': {'latency_ms': [10.0, 12.0, 11.0]},
             'metrics': {st.MEAN_FRAME_RATE: 4.0, st.NUM_FRAMES_SENT: 10,
                         st.NUM_MISSED_FRAMES: 2, 'num_received': 8,
                         st.RECEIVED_DURATION: 2000.0}},
            {'rate_hz': 5.0, 'series': {'latency_ms': [13.0]},
             'metrics': {st.MEAN_FRAME_RATE: 5.0, st.NUM_FRAMES_SENT: 10,
                         st.NUM_MISSED_FRAMES: 0, 'num_received': 10,
                         st.RECEIVED_DURATION: 1800.0}},
            {'rate_hz': 2.0, 'series': {'latency_ms': [9.0]},
             'metrics': {st.NUM_FRAMES_SENT: 4, st.NUM_MISSED_FRAMES: 4}}]
    by_rate = bench_plots.latency_by_rate(runs)
    assert by_rate == {2.0: [9.0], 5.0: [10.0, 12.0, 11.0, 13.0]}      # repeats pooled, sorted
    pts = bench_plots.throughput_points(runs)
    assert pts == [{'rate_hz': 2.0, 'runs': 1, 'output_fps': None, 'r2b_mean_frame_rate': None,
                    'frames_sent': 4, 'missed_frames': 4, 'drop_percent': 100.0},
                   {'rate_hz': 5.0, 'runs': 2, 'output_fps': pytest.approx(4.25),  # 3.5 and 5
                    'r2b_mean_frame_rate': 4.5, 'frames_sent': 20, 'missed_frames': 2,
                    'drop_percent': 10.0}]
    for p in (bench_plots.plot_latency_cdf(by_rate, tmp_path / 'cdf.png'),
              bench_plots.plot_throughput(pts, tmp_path / 'thr.png')):
        assert p.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    p = bench_plots.plot_resources({'t_s': [0, 1], 'node_cpu_percent': [50, 80],
                                    'node_rss_mb': [300, 310]}, tmp_path / 'res.png')
    assert p.stat().st_size > 1000
    hw, sw = bench_report.hardware_info(), bench_report.software_info()
    assert hw['logical_cores'] >= 1 and sw['numpy']


def test_stereo_pose_accuracy_from_serialized_poses():
    import numpy as np
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import serialize_message

    from tt_depth_ros.geometry.pose.se3 import quat_from_R
    from tt_depth_ros.tools.bench.session import stereo_pose_accuracy

    def pose(t, yaw_deg):
        a = np.radians(yaw_deg)
        R = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
        m = PoseStamped()
        m.pose.position.x, m.pose.position.y, m.pose.position.z = map(float, t)
        q = quat_from_R(R)
        m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = \
            map(float, q)
        return serialize_message(m)

    # exact direction at another scale, and a 2-degree yaw with a 45-degree direction error
    res = stereo_pose_accuracy([pose((3.0, 0, 0), 0.0), pose((1.0, 1.0, 0), 2.0)], 0.12, 3)
    assert res['poses'] == 2 and res['pairs'] == 3
    assert res['rot_err_deg'] == pytest.approx(1.0, abs=1e-6)
    assert res['trans_dir_err_deg'] == pytest.approx(22.5, abs=1e-6)
    assert res['per_pair'][0]['trans_norm_ratio'] == pytest.approx(25.0)


def test_ros2_benchmark_layout_headline_is_the_peak_rate():
    from tt_depth_ros.tools.bench.ros2_benchmark_export import r2b_report
    sent = {i: i * 100_000_000 for i in range(10)}             # 10 Hz, 10 frames
    ok = st.basic_metrics(sent, {s: t + 20_000_000 for s, t in sent.items()})   # 20 ms each
    lossy = st.basic_metrics(sent, {s: t + 50_000_000 for s, t in sent.items() if s % 2})
    report = {'metadata': {'name': 'n', 'datetime': 'd', 'hostname': 'h', 'arch': 'a',
                           'os': 'o'}, 'dataset': {'path': '/bag'},
              'peak_throughput': {'peak_rate_hz': 10.0},
              'runs': [{'rate_hz': 10.0, 'metrics': ok}, {'rate_hz': 20.0, 'metrics': lossy}]}
    r = r2b_report(report)
    assert r['headline_offered_rate_hz'] == 10.0 and r['headline_runs'] == 1
    assert r['BasicPerformanceMetrics.MEAN_LATENCY'] == pytest.approx(20.0)
    assert r['BasicPerformanceMetrics.NUM_MISSED_FRAMES'] == 0
    assert r['BasicPerformanceMetrics.NUM_FRAMES_SENT'] == 10
    assert r['latency_p99_ms'] == pytest.approx(20.0)
    assert r['metadata']['BenchmarkMetadata.PEAK_THROUGHPUT_PREDICTION'] == 10.0
    two = r['per_offered_rate']['20']
    assert two['BasicPerformanceMetrics.NUM_MISSED_FRAMES'] == 5
    assert two['BasicPerformanceMetrics.MAX_LATENCY'] == pytest.approx(50.0)
    assert set(r['per_offered_rate']) == {'10', '20'}
    report['peak_throughput'] = {'peak_rate_hz': None}   # no peak: highest rate within 5 %
    assert r2b_report(report)['headline_offered_rate_hz'] == 10.0
    report['runs'] = report['runs'][1:]                   # none within 5 %: the lowest rate
    assert r2b_report(report)['headline_offered_rate_hz'] == 20.0
