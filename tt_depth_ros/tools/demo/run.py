"""End-to-end demo: sample bag -> depth node (and pair node) through replay -> files in demo_out/.

Steps: choose weights (WEIGHTS=/path, else HF cache / pinned download, else the tiny network
with rule-v1 RANDOM weights, said loudly and written into every output name); generate the
synthetic sample bag; run the depth node on it through raw replay, paced by its output, and
record its outputs; write colorized depth panels [input | prediction | ground truth], a PLY cloud
and per-frame accuracy; run the depth node again with DA3-SMALL, a relative any-view model
(tools/demo/anyview.py; offline: the tiny any-view config with rule-v1 + X1 weights, labelled
as a stand-in); run the pair node (DUSt3R, stereo) when it is installed; run the
benchmark (JSON + plots); write demo_out/index.html, one self-contained page of it all
(tools/demo/report_page.py). Exit 0 when the pipeline ran. `python -m tt_depth_ros.tools.demo.run`;
PAIR_WEIGHTS=/path selects the DUSt3R file, ANYVIEW_WEIGHTS=/path the DA3-SMALL file;
--offline (or HF_HUB_OFFLINE=1) skips downloads.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

from tt_depth_ros.tools.bag import sample as sample_bag
from tt_depth_ros.tools.bag.decode import decode_cloud, decode_depth, decode_pose, decode_rgb
from tt_depth_ros.tools.bag.io import header_stamp_ns, read_bag
from tt_depth_ros.tools.bag.sample import (
    CAMERA_INFO,
    DEPTH_GT,
    IMAGE,
    RIGHT_CAMERA_INFO,
    RIGHT_IMAGE,
)
from tt_depth_ros.tools.bench.benchmark import run_benchmark
from tt_depth_ros.tools.bench.node_process import bring_up, require, start_node, stop_process
from tt_depth_ros.tools.bench.session import BenchConfig
from tt_depth_ros.tools.demo import anyview as demo_anyview
from tt_depth_ros.tools.demo.outputs import depth_panel
from tt_depth_ros.tools.demo.report_page import write_report_page
from tt_depth_ros.tools.demo.weights import RANDOM_TAG, choose_weights


class _Ros:
    """rclpy node + executor thread for the demo's players, monitors and recorder."""

    def __enter__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        rclpy.init()
        self.node = rclpy.create_node('tt_demo')
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        import rclpy
        self.executor.shutdown()
        self.thread.join(5)
        self.node.destroy_node()
        rclpy.try_shutdown()


def _write_cloud_ply(payload, path: Path, label: str, log) -> Path:
    """Decode one recorded PointCloud2 payload and write its finite points as PLY."""
    from tt_depth_ros.api.io import write_ply

    cloud = decode_cloud(payload)
    n = write_ply(path, cloud.xyz, cloud.rgb)
    log(f'{label} wrote {path} ({n} finite points)')
    return path


def depth_pass(ros, bag: Path, out: Path, tag: str, w, backend: str, process_res: int,
               log) -> dict:
    """Depth node on every bag frame (consumer-paced); panels, PLY, accuracy, recorded bag."""
    from tt_depth_ros.api.io import write_png
    from tt_depth_ros.tools.bag.record import Recorder
    from tt_depth_ros.tools.bag.replay import Player
    from tt_depth_ros.tools.bench.probe import OutputMonitor
    from tt_depth_ros.tools.eval import accuracy as acc

    msgs, types = read_bag(bag, [CAMERA_INFO, IMAGE])
    player = Player(ros.node, msgs, types, frame_topic=IMAGE)
    depth_mon = OutputMonitor(ros.node, '/depth', 'sensor_msgs/msg/Image', keep_payloads=True)
    cloud_mon = OutputMonitor(ros.node, '/points', 'sensor_msgs/msg/PointCloud2',
                              keep_payloads=True)
    rec_path = out / f'node_outputs{tag}'
    if (rec_path / 'metadata.yaml').is_file():
        shutil.rmtree(rec_path)          # the previous demo's recording
    rec = Recorder(ros.node, rec_path, {'/depth': 'sensor_msgs/msg/Image',
                                        '/depth/camera_info': 'sensor_msgs/msg/CameraInfo'})
    rec.start()
    cmd = [sys.executable, '-m', 'tt_depth_ros.ros.depth', '--ros-args',
           '-p', f'model:={w.model}', '-p', f'weights_path:={w.path}', '-p', f'backend:={backend}',
           '-p', f'process_res:={process_res}', '-p', 'points_format:=xyzrgb',
           '-r', f'image:={IMAGE}', '-r', f'camera_info:={CAMERA_INFO}']
    log_path = out / f'depth_node{tag}.log'
    log(f'[depth] starting depth node ({w.model}, backend {backend}); log: {log_path}')
    proc = start_node(cmd, log_path)
    sent, index = {}, {}
    try:
        warm, offset = bring_up(player, proc, depth_mon, 'depth', log_path)
        cloud_mon.take()
        log(f'[depth] node up, first depth after {warm[0]:.0f} ms; replaying '
            f'{len(player.frames)} frames, each waiting for its depth')
        stats = player.play('consumer', consumer=depth_mon, consumer_timeout_s=300.0,
                            on_frame=lambda s, t, i: (sent.update({s: t}), index.update({s: i})),
                            progress=log, stamp_offset_ns=offset)
        cloud_mon.wait_for(set(sent), 5.0, 2.0)
    finally:
        stop_process(proc)
        counts = rec.close()
    received = depth_mon.take()
    require(bool(received), 'the depth node produced no output', log_path)
    gt = {header_stamp_ns(m.raw): m.raw for m in read_bag(bag, [DEPTH_GT])[0]}
    per_frame, files = [], []
    for stamp, i in index.items():
        raw = depth_mon.payloads.get(stamp)
        if raw is None:
            continue
        rgb = decode_rgb(player.frames[i][-1].raw)
        pred = decode_depth(raw)
        truth = decode_depth(gt[header_stamp_ns(player.frames[i][-1].raw)])
        per_frame.append(acc.depth_metrics(acc.resize_nearest(pred, truth.shape)
                                           if pred.shape != truth.shape else pred, truth))
        path = out / f'depth_{i:03d}{tag}.png'
        write_png(path, depth_panel(rgb, pred, truth))
        files.append(str(path))
    first_cloud = next((s for s in index if s in cloud_mon.payloads), None)
    ply = None if first_cloud is None else _write_cloud_ply(
        cloud_mon.payloads[first_cloud], out / f'cloud_{index[first_cloud]:03d}{tag}.ply',
        '[depth]', log)
    lat = [(received[s] - t) / 1e6 for s, t in sent.items() if s in received]
    summary = acc.mean_metrics(per_frame)
    nan = float('nan')
    log(f'[depth] {len(received)}/{stats["frames_sent"]} depth images; AbsRel '
        f'{summary.get("abs_rel", nan):.3f}, delta1 {summary.get("delta1", nan):.3f}'
        + (f'  ({RANDOM_TAG}: expected to be poor)' if not w.real else ''))
    return {'frames_sent': stats['frames_sent'], 'outputs': len(received),
            'latency_ms': lat, 'accuracy': summary, 'panels': files,
            'ply': str(ply) if ply else None, 'recorded_bag': str(out / f'node_outputs{tag}'),
            'recorded_counts': counts, 'node_log': str(log_path)}


def pair_pass(ros, bag: Path, out: Path, tag: str, w, backend: str, baseline_m: float,
              max_frames: int, log) -> dict:
    """Pair node (stereo) on the first frames; pose vs the known rig, fused cloud as PLY."""
    import numpy as np

    from tt_depth_ros.tools.bag.replay import Player
    from tt_depth_ros.tools.bench.probe import OutputMonitor
    from tt_depth_ros.tools.eval.accuracy import pose_errors

    msgs, types = read_bag(bag, [CAMERA_INFO, RIGHT_CAMERA_INFO, RIGHT_IMAGE, IMAGE])
    player = Player(ros.node, msgs, types, frame_topic=IMAGE)
    cloud_mon = OutputMonitor(ros.node, '/pair/points', 'sensor_msgs/msg/PointCloud2',
                              keep_payloads=True)
    pose_mon = OutputMonitor(ros.node, '/pair/pose', 'geometry_msgs/msg/PoseStamped',
                             keep_payloads=True)
    size = 512 if w.real else 128
    cmd = [sys.executable, '-m', 'tt_depth_ros.ros.pair', '--ros-args',
           '-p', f'model:={w.model}', '-p', f'weights_path:={w.path}', '-p', f'backend:={backend}',
           '-p', 'mode:=stereo', '-p', f'network_size:={size}', '-p', 'scale_source:=none',
           '-p', 'publish_tf:=never',
           '-r', f'camera1/image:={IMAGE}', '-r', f'camera1/camera_info:={CAMERA_INFO}',
           '-r', f'camera2/image:={RIGHT_IMAGE}', '-r', f'camera2/camera_info:={RIGHT_CAMERA_INFO}',
           '-r', 'points:=/pair/points', '-r', 'pose:=/pair/pose']
    log_path = out / f'pair_node{tag}.log'
    log(f'[pair] starting pair node ({w.model}, stereo, network {size}); log: {log_path}')
    proc = start_node(cmd, log_path)
    sent = {}
    try:
        _, offset = bring_up(player, proc, cloud_mon, 'pair', log_path)
        pose_mon.take()
        pose_mon.payloads.clear()
        player.play('consumer', consumer=cloud_mon, consumer_timeout_s=120.0,
                    max_frames=max_frames, on_frame=lambda s, t, i: sent.update({s: t}),
                    stamp_offset_ns=offset)
        pose_mon.wait_for(set(sent), 3.0, 2.0)
    finally:
        stop_process(proc)
    T_gt = np.eye(4)
    T_gt[0, 3] = baseline_m          # camera 2 (right) in camera 1: +x by the baseline
    poses = [decode_pose(pose_mon.payloads[s]).T for s in sent if s in pose_mon.payloads]
    errors = [pose_errors(T, T_gt) for T in poses]
    first = next((s for s in sent if s in cloud_mon.payloads), None)
    ply = None if first is None else _write_cloud_ply(
        cloud_mon.payloads[first], out / f'pair_cloud_000{tag}.ply', '[pair]', log)
    log(f'[pair] {len(cloud_mon.payloads)} clouds, {len(poses)} poses for {len(sent)} pairs'
        + (f'; rotation error {np.mean([e["rot_err_deg"] for e in errors]):.2f} deg, '
           f'translation direction error {np.mean([e["trans_dir_err_deg"] for e in errors]):.2f}'
           ' deg' if errors else ' (PnP found no pose: expected with random weights)'
           if not w.real else ''))
    return {'pairs_sent': len(sent), 'clouds': len(cloud_mon.payloads), 'poses': len(poses),
            'pose_errors': errors, 'ply': str(ply) if ply else None, 'node_log': str(log_path),
            'gt_T_1_2': T_gt.tolist()}


def main(argv: list[str] | None = None) -> int:
    """Console entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', type=Path, default=Path('demo_out'))
    ap.add_argument('--backend', default='auto', help='auto | ttnn | torch-cuda | torch-cpu')
    ap.add_argument('--frames', type=int, default=12, help='sample bag frames')
    ap.add_argument('--offline', action='store_true', help='never try to download weights')
    ap.add_argument('--no-pair', action='store_true', help='skip the pair node')
    ap.add_argument('--no-anyview', action='store_true', help='skip the DA3-SMALL pass')
    ap.add_argument('--no-benchmark', action='store_true')
    ap.add_argument('--quick', action='store_true', help='short benchmark (CI smoke)')
    a = ap.parse_args(argv)

    from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env
    apply_loopback_env()
    from tt_depth_ros.tools.bench.report import write_json

    out = a.out
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(msg: str) -> None:
        print(msg, flush=True)
        lines.append(msg)

    log(f'tt_depth_ros demo -> {out}/ (ROS_DOMAIN_ID={os.environ["ROS_DOMAIN_ID"]}, loopback only)')
    offline = True if a.offline else None
    w = choose_weights(os.environ.get('WEIGHTS'), out / 'weights', offline=offline, log=log)
    pair_w, pair_skip = None, None
    if a.no_pair:
        pair_skip = 'disabled (--no-pair)'
    else:
        try:
            import tt_depth_ros.ros.pair.node  # noqa: F401
            pair_w = choose_weights(os.environ.get('PAIR_WEIGHTS'), out / 'weights',
                                    full_model='dust3r-vitl-512-dpt', tiny_model='dust3r-tiny',
                                    offline=offline, log=log, env_name='PAIR_WEIGHTS')
        except ImportError as exc:
            pair_skip = f'pair node not available in this install ({exc})'
            log(f'[pair] skipped: {pair_skip}')
    any_w = None
    if not a.no_anyview:
        any_w = choose_weights(os.environ.get('ANYVIEW_WEIGHTS'), out / 'weights',
                               full_model=demo_anyview.FULL_MODEL,
                               tiny_model=demo_anyview.TINY_MODEL, offline=offline, log=log,
                               env_name='ANYVIEW_WEIGHTS')
    random = not w.real or any(c is not None and not c.real for c in (pair_w, any_w))
    tag = f'_{RANDOM_TAG}' if random else ''
    if random:
        log(f'*** {RANDOM_TAG}: outputs are named *{tag}*; they show the pipeline, not the '
            'model quality ***')
    backend = a.backend
    if backend == 'auto' and not w.real:
        backend = 'torch-cpu'   # random tiny weights: CPU is enough, keeps the demo portable
    process_res = 504 if w.real else 252
    cfg = sample_bag.SampleBagConfig(frames=a.frames)
    bag = out / 'sample_bag'
    sample_bag.generate(bag, cfg, overwrite=bag.exists())
    log(f'sample bag: {bag} ({cfg.frames} frames {cfg.width}x{cfg.height}, ground truth depth '
        'and pose, stereo pair)')
    report = {'weights': {'depth': {**vars(w), 'path': str(w.path)},
                          'pair': ({**vars(pair_w), 'path': str(pair_w.path)} if pair_w
                                   else pair_skip),
                          'anyview': ({**vars(any_w), 'path': str(any_w.path)} if any_w
                                      else 'disabled (--no-anyview)')},
              'random_weights': random, 'backend_requested': backend, 'sample_bag': str(bag)}
    t0 = time.monotonic()
    with _Ros() as ros:
        report['depth'] = depth_pass(ros, bag, out, tag, w, backend, process_res, log)
        if any_w is not None:
            report['anyview'] = demo_anyview.anyview_pass(
                ros, bag, out, any_w, 'torch-cpu' if not any_w.real and a.backend == 'auto'
                else a.backend, 504 if any_w.real else 252, 4 if a.quick else cfg.frames, log)
        if pair_w is not None:
            report['pair'] = pair_pass(ros, bag, out, tag, pair_w, backend, cfg.baseline_m,
                                       2 if a.quick else 4, log)
    if not a.no_benchmark:
        lat = sorted(report['depth']['latency_ms'][1:] or report['depth']['latency_ms'])
        fps = 1000.0 / max(lat[len(lat) // 2], 1.0)        # median consumer-paced throughput
        rates = sorted({round(max(0.1, fps * f), 1) for f in (0.25, 0.5)})
        bench = BenchConfig(
            bag=str(bag), out_dir=str(out), name='benchmark', tag=tag, model=w.model,
            weights=str(w.path), backend=backend, process_res=process_res, rates_hz=rates,
            duration_s=2.0 if a.quick else 4.0, peak_lo_hz=rates[0],
            peak_hi_hz=round(max(2 * fps, rates[0] + 1), 1), peak_steps=2 if a.quick else 4,
            warmup_frames=2, extra={'weights': report['weights']['depth']})
        log(f'[benchmark] rates {rates} Hz, peak search up to {bench.peak_hi_hz} Hz')
        b = run_benchmark(bench, log=log)
        report['benchmark'] = {'json': b['report_path'], 'plots': b['plots'],
                               'fixed_rate': b['fixed_rate'], 'peak': b['peak_throughput'],
                               'throughput_vs_rate': b['throughput_vs_rate'],
                               'ros2_benchmark': b['ros2_benchmark'],
                               'ros2_benchmark_json': b['ros2_benchmark_path']}
    report['wall_s'] = time.monotonic() - t0
    report['report_path'] = str(out / f'demo_report{tag}.json')
    report['log_path'] = str(out / f'demo{tag}.log')
    path = write_json(report, out / f'demo_report{tag}.json')
    (out / f'demo{tag}.log').write_text('\n'.join(lines) + '\n')
    page = write_report_page(report, out)
    log(f'done in {report["wall_s"]:.0f} s: {path}; open {page} in a browser'
        + (f'  [{RANDOM_TAG}]' if random else ''))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
