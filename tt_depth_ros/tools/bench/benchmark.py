"""Benchmark a node on a rosbag2 like NVIDIA ros2_benchmark: throughput, latency, CPU, accuracy.

The node under test runs unmodified in its own process (default: the depth node, tiny DA3 on
torch-cpu; `--node-cmd` for anything else). Frames are pre-buffered from the bag and published at
controlled rates (tools/bag/replay.Player); outputs are matched to inputs by header stamp
(tools/bench/stats.py). Procedure (docs/ros.md §8): warm-up, idle baseline, fixed-rate runs
(several rates, repeats), a peak-throughput search (highest rate with <= 5 % drops, bounded
bisection), then an accuracy pass when the bag has ground-truth depth, then (`--trajectory`) the
pair node in temporal mode per engine against the bag's ground-truth poses
(tools/bench/trajectory.py: ATE after Sim(3) alignment, RPE). Writes a JSON report, the same
figures in ros2_benchmark's layout (`<name>_ros2_benchmark.json`: ros2_benchmark_export.py) and
PNG plots (latency CDF per rate, throughput vs offered rate,
resources).
Usage: `python -m tt_depth_ros.tools.bench.benchmark --bag BAG --out DIR`.
"""
from __future__ import annotations

import argparse
import shlex
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

from tt_depth_ros.tools.bag.io import bag_sha256, read_bag
from tt_depth_ros.tools.bench import report as rep
from tt_depth_ros.tools.bench import stats as st
from tt_depth_ros.tools.bench import trajectory as bt
from tt_depth_ros.tools.bench.node_process import require, start_node, stop_process
from tt_depth_ros.tools.bench.session import BenchConfig, BenchSession, node_command

__all__ = ['BenchConfig', 'run_benchmark', 'main']


def _warm_up(s: BenchSession, cfg: BenchConfig) -> list[float]:
    """Frames until `warmup_frames` outputs (Player.prime); returns their latencies (ms)."""
    lat, s.offset_ns = s.player.prime(s.monitor, cfg.warmup_frames,
                                      total_timeout_s=cfg.startup_timeout_s,
                                      stamp_offset_ns=s.offset_ns)
    return lat


def _rule_v1_file(model: str) -> str:
    from tt_depth_ros.tools.bench.rule_v1_checkpoint import write_rule_v1_checkpoint
    return str(write_rule_v1_checkpoint(
        model, Path(tempfile.gettempdir()) / f'tt_bench_{model}_rule-v1.safetensors'))


def _trajectory_weights(cfg: BenchConfig, spec: str) -> str:
    """Weights file of a trajectory engine: explicit, rule-v1 with a rule-v1 run, else ''."""
    model = bt.parse_engine(spec)[0]
    w = cfg.trajectory_weights.get(model, 'rule-v1' if cfg.weights == 'rule-v1' else '')
    return _rule_v1_file(model) if w == 'rule-v1' else w


def run_benchmark(cfg: BenchConfig, log=print) -> dict:
    """Run the whole procedure; write `<name><tag>.json` and plots into cfg.out_dir.

    Returns:
        The report dict (also written as JSON). Raises RuntimeError when the node never comes
        up (with the tail of its log).
    """
    from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env
    apply_loopback_env()
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from tt_depth_ros.tools.bag.replay import Player, group_frames
    from tt_depth_ros.tools.bench.probe import DiagnosticsListener, OutputMonitor
    from tt_depth_ros.tools.bench.resource_monitor import ResourceMonitor

    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f'{cfg.name}{cfg.tag}'
    weights = cfg.weights
    if weights == 'rule-v1':
        weights = _rule_v1_file(cfg.model)
    msgs, types = read_bag(cfg.bag, [*cfg.extra_input_topics, cfg.info_topic, cfg.image_topic])
    frames = group_frames(msgs, cfg.image_topic)[:cfg.prebuffer]
    msgs = [m for f in frames for m in f]
    depth_gt = cfg.output_type == 'sensor_msgs/msg/Image' and \
        cfg.gt_topic in read_bag_topics(cfg.bag)
    has_gt = cfg.accuracy and (depth_gt or bool(cfg.pose_topic and cfg.pose_gt_baseline_m))
    s = BenchSession(cfg, log)
    cmd = node_command(cfg, weights)
    log(f'benchmark {stem}: bag {cfg.bag} ({len(frames)} frames buffered), node: '
        f'{shlex.join(cmd)}')
    rclpy.init()
    node = rclpy.create_node('tt_benchmark')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    node_log = out_dir / f'{stem}_node.log'
    proc = None
    report: dict = {}
    try:
        s.player = Player(node, msgs, types, frame_topic=cfg.image_topic)
        s.monitor = OutputMonitor(node, cfg.output_topic, cfg.output_type)
        if cfg.pose_topic:
            s.pose_monitor = OutputMonitor(node, cfg.pose_topic, 'geometry_msgs/msg/PoseStamped',
                                           keep_payloads=True)
        s.diag = DiagnosticsListener(node, cfg.node_name)
        spinner.start()
        proc = start_node(cmd, node_log)
        s.resources = ResourceMonitor(proc.pid, cfg.monitor_interval_s).start()
        t_start = time.monotonic()
        require(s.player.wait_for_subscribers(1, cfg.startup_timeout_s, all_topics=True)
                and proc.poll() is None,
                f'node under test did not subscribe to {cfg.image_topic} and {cfg.info_topic} '
                f'within {cfg.startup_timeout_s} s', node_log)
        log(f'node up after {time.monotonic() - t_start:.1f} s; warm-up '
            f'({cfg.warmup_frames} outputs; the first includes engine prepare)')
        warm_lat = _warm_up(s, cfg)
        require(bool(warm_lat), 'no output during warm-up', node_log)
        steady = max(warm_lat[1:] or warm_lat)
        s.drain_idle_s = max(1.0, 4 * steady / 1e3)
        s.drain_timeout_s = max(10.0, 10 * steady / 1e3)
        log('warm-up latencies ' + ', '.join(f'{x:.0f}' for x in warm_lat) + ' ms')
        tb = time.monotonic()
        time.sleep(cfg.baseline_s)
        baseline = s.resources.summary(tb, time.monotonic())
        log(f'baseline: node CPU {baseline.get("node_cpu_percent_mean", 0):.0f} %, RSS '
            f'{baseline.get("node_rss_mb_max", 0):.0f} MB')
        fixed = {}
        for rate in cfg.rates_hz:
            log(f'fixed rate {rate} Hz x {cfg.repeats}')
            runs = [s.run_once(rate, f'{rate:g} Hz #{r + 1}') for r in range(cfg.repeats)]
            fixed[f'{rate:g}'] = st.conclude([r['metrics'] for r in runs])
        peak = None
        if cfg.peak:
            log(f'peak throughput search in [{cfg.peak_lo_hz}, {cfg.peak_hi_hz}] Hz, '
                f'<= {cfg.peak_steps} steps')
            peak = st.peak_search(
                lambda r: st.accepted(s.run_once(r, f'peak {r:g} Hz')['metrics']),
                cfg.peak_lo_hz, cfg.peak_hi_hz, max_steps=cfg.peak_steps)
            log(f'peak throughput: {peak["peak_rate_hz"]} Hz (bracket {peak["bracket_hz"]})')
        accuracy = s.accuracy_pass(depth_gt) if has_gt else {
            'skipped': f'no {cfg.gt_topic} in the bag' if cfg.accuracy else 'disabled'}
        trajectory = {spec: bt.trajectory_pass(node, cfg, spec, _trajectory_weights(cfg, spec),
                                                out_dir, log)
                      for spec in cfg.trajectory_engines}
        diag = s.diag.snapshot()
        report = {
            'metadata': rep.metadata(stem), 'hardware': rep.hardware_info(),
            'software': rep.software_info(),
            'backend': {'requested': cfg.backend, 'reported': diag.get('backend'),
                        'device': diag.get('device'), 'model': diag.get('model')},
            'config': asdict(cfg), 'node_command': cmd,
            'dataset': {'path': str(cfg.bag), 'sha256': bag_sha256(cfg.bag),
                        'frames_buffered': len(frames), 'input_topics': [cfg.image_topic,
                                                                          cfg.info_topic]},
            'warmup_latency_ms': warm_lat,
            'baseline': {st.BASELINE_CPU: baseline.get('machine_cpu_percent_mean'), **baseline},
            'fixed_rate': fixed, 'peak_throughput': peak,
            'runs': [{k: v for k, v in r.items()} for r in s.runs],
            'accuracy': accuracy, 'trajectory': trajectory,
            'unmatched_outputs_total': sum(r['metrics']['num_unmatched_outputs'] for r in s.runs),
            'late_outputs_discarded': s.late_discarded,
            'final_diagnostics': diag,
        }
        for r in report['runs']:
            res = r['resources']
            r['metrics'][st.MEAN_CPU] = res.get('machine_cpu_percent_mean')
            r['metrics'][st.MAX_CPU] = res.get('machine_cpu_percent_max')
    finally:
        if proc is not None:
            stop_process(proc)
        if hasattr(s, 'resources'):
            s.resources.stop()
        executor.shutdown()
        spinner.join(5) if spinner.is_alive() else None
        node.destroy_node()
        rclpy.try_shutdown()
    from tt_depth_ros.tools.bench import plots as bench_plots
    from tt_depth_ros.tools.bench.ros2_benchmark_export import r2b_report
    title = f'{cfg.name}{cfg.tag} ({report["backend"]["reported"] or cfg.backend})'
    report['resources_series'] = s.resources.series()
    report['throughput_vs_rate'] = bench_plots.throughput_points(s.runs)
    report['plots'] = [str(p) for p in (
        bench_plots.plot_latency_cdf(bench_plots.latency_by_rate(s.runs),
                                     out_dir / f'{stem}_latency_cdf.png', title),
        bench_plots.plot_throughput(report['throughput_vs_rate'],
                                    out_dir / f'{stem}_throughput.png', title),
        bench_plots.plot_resources(report['resources_series'], out_dir / f'{stem}_resources.png',
                                   title))]
    report['ros2_benchmark'] = r2b_report(report)
    report['ros2_benchmark_path'] = str(rep.write_json(
        report['ros2_benchmark'], out_dir / f'{stem}_ros2_benchmark.json'))
    report['report_path'] = str(out_dir / f'{stem}.json')
    rep.write_json(report, out_dir / f'{stem}.json')
    log(f'wrote {report["report_path"]} and {len(report["plots"])} plots')
    return report


def read_bag_topics(path) -> set[str]:
    """Topic names in a bag (metadata only)."""
    from rosbags.rosbag2 import Reader
    with Reader(path) as r:
        return {c.topic for c in r.connections}


def main(argv: list[str] | None = None) -> int:
    """Console entry point (see the module docstring)."""
    d = BenchConfig(bag='')
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bag', required=True)
    ap.add_argument('--out', default=d.out_dir)
    ap.add_argument('--name', default=d.name)
    ap.add_argument('--node-cmd', help='command of the node under test (default: depth node)')
    ap.add_argument('--node-name', default=d.node_name, help='its name in /diagnostics')
    ap.add_argument('--model', default=d.model)
    ap.add_argument('--weights', default='rule-v1',
                    help="weights file, or 'rule-v1' for a random tiny checkpoint (labelled)")
    ap.add_argument('--backend', default=d.backend)
    ap.add_argument('--process-res', type=int, default=d.process_res)
    ap.add_argument('--param', action='append', default=[], help='extra node parameter n:=v')
    for k in ('image_topic', 'info_topic', 'output_topic', 'output_type', 'gt_topic',
              'pose_topic'):
        ap.add_argument('--' + k.replace('_', '-'), default=getattr(d, k))
    ap.add_argument('--extra-input-topics', nargs='+', default=[],
                    help='more bag topics to play with each frame (e.g. the right camera)')
    ap.add_argument('--pose-gt-baseline', type=float, default=0.0,
                    help='check --pose-topic against a stereo rig with this baseline (m)')
    ap.add_argument('--prebuffer', type=int, default=d.prebuffer)
    ap.add_argument('--rates', type=float, nargs='+', default=d.rates_hz)
    ap.add_argument('--duration', type=float, default=d.duration_s)
    ap.add_argument('--repeats', type=int, default=d.repeats)
    ap.add_argument('--no-peak', action='store_true')
    ap.add_argument('--peak-lo', type=float, default=d.peak_lo_hz)
    ap.add_argument('--peak-hi', type=float, default=d.peak_hi_hz)
    ap.add_argument('--peak-steps', type=int, default=d.peak_steps)
    ap.add_argument('--warmup', type=int, default=d.warmup_frames)
    ap.add_argument('--no-accuracy', action='store_true')
    ap.add_argument('--trajectory', nargs='+', default=[], metavar='MODEL[@WINDOW][:POSE]',
                    help='pair-node engines for the trajectory pass (temporal mode vs the bag '
                         "ground-truth poses), e.g. dust3r-tiny da3-anyview-tiny "
                         'da3-anyview-tiny@3 da3-anyview-tiny:pnp (pose_source)')
    ap.add_argument('--trajectory-weights', nargs='+', default=[], metavar='MODEL=FILE',
                    help="weights per trajectory model ('rule-v1' for random tiny ones; "
                         'default: rule-v1 when --weights is rule-v1, else the node resolves)')
    ap.add_argument('--trajectory-rate', type=float, default=d.trajectory_rate_hz)
    ap.add_argument('--trajectory-network-size', type=int, default=d.trajectory_network_size)
    a = ap.parse_args(argv)
    bad = [w for w in a.trajectory_weights if '=' not in w]
    if bad:
        ap.error(f'--trajectory-weights expects MODEL=FILE, got {bad}')
    random = a.weights == 'rule-v1' and not a.node_cmd
    if random:
        print(f'*** {a.model} with rule-v1 RANDOM weights: timing is real, depth is noise ***')
    cfg = BenchConfig(
        bag=a.bag, out_dir=a.out, name=a.name, tag='_RANDOM-WEIGHTS' if random else '',
        node_cmd=shlex.split(a.node_cmd) if a.node_cmd else [], node_name=a.node_name,
        model=a.model, weights=a.weights, backend=a.backend, process_res=a.process_res,
        node_params=a.param, image_topic=a.image_topic, info_topic=a.info_topic,
        output_topic=a.output_topic, output_type=a.output_type, gt_topic=a.gt_topic,
        extra_input_topics=a.extra_input_topics, pose_topic=a.pose_topic,
        pose_gt_baseline_m=a.pose_gt_baseline,
        prebuffer=a.prebuffer, rates_hz=a.rates, duration_s=a.duration, repeats=a.repeats,
        peak=not a.no_peak, peak_lo_hz=a.peak_lo, peak_hi_hz=a.peak_hi,
        peak_steps=a.peak_steps, warmup_frames=a.warmup, accuracy=not a.no_accuracy,
        trajectory_engines=a.trajectory,
        trajectory_weights=dict(w.split('=', 1) for w in a.trajectory_weights),
        trajectory_rate_hz=a.trajectory_rate, trajectory_network_size=a.trajectory_network_size)
    run_benchmark(cfg)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
