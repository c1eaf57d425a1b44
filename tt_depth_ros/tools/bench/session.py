"""One benchmark's configuration and its measuring session (used by tools/bench/benchmark.py).

`BenchConfig` is everything a run depends on (stored verbatim in the report). `BenchSession`
holds the player, output monitor, diagnostics listener and resource monitor of one benchmark and
performs its runs: a fixed-rate run (send times by stamp -> matched latencies, drops, resources,
per-stage times) and the accuracy pass (each buffered frame once, outputs compared with the bag's
ground-truth depth, metric with no scale alignment; optionally the pose of a stereo pair node
against the known rig).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from tt_depth_ros.tools.bag.decode import decode_depth, decode_pose
from tt_depth_ros.tools.bag.io import header_stamp_ns, read_bag
from tt_depth_ros.tools.bag.sample import CAMERA_INFO, DEPTH_GT, IMAGE
from tt_depth_ros.tools.bench import stats as st


@dataclass
class BenchConfig:
    """Everything a benchmark run depends on (stored in the report)."""

    bag: str
    out_dir: str = 'benchmark_out'
    name: str = 'depth_node'
    tag: str = ''                    # appended to every output file name (e.g. _RANDOM-WEIGHTS)
    node_cmd: list = field(default_factory=list)   # empty: the depth node built from the fields
    node_name: str = 'depth_node'    # for /diagnostics
    model: str = 'da3metric-tiny'
    weights: str = ''                # file, or 'rule-v1' (random tiny checkpoint written here)
    backend: str = 'torch-cpu'
    process_res: int = 126
    node_params: list = field(default_factory=list)  # extra 'name:=value' for the depth node
    image_topic: str = IMAGE
    info_topic: str = CAMERA_INFO
    output_topic: str = '/depth'
    output_type: str = 'sensor_msgs/msg/Image'
    gt_topic: str = DEPTH_GT
    extra_input_topics: list = field(default_factory=list)  # e.g. a stereo partner's topics
    pose_topic: str = ''             # PoseStamped output to check against the stereo rig
    pose_gt_baseline_m: float = 0.0
    prebuffer: int = 100
    rates_hz: list = field(default_factory=lambda: [1.0, 2.0, 5.0])
    duration_s: float = 5.0
    repeats: int = 1
    peak: bool = True
    peak_lo_hz: float = 1.0
    peak_hi_hz: float = 30.0
    peak_steps: int = 5
    warmup_frames: int = 3
    startup_timeout_s: float = 120.0
    baseline_s: float = 1.0
    accuracy: bool = True
    monitor_interval_s: float = 0.1
    extra: dict = field(default_factory=dict)   # free-form notes (e.g. weights provenance)
    # trajectory pass (tools/bench/trajectory.py): pair-node engines 'MODEL' or 'MODEL@WINDOW'
    trajectory_engines: list = field(default_factory=list)
    trajectory_weights: dict = field(default_factory=dict)  # model -> file or 'rule-v1'
    trajectory_rate_hz: float = 4.0
    trajectory_network_size: int = 128


def node_command(cfg: BenchConfig, weights_path: str) -> list[str]:
    """Command line of the node under test."""
    if cfg.node_cmd:
        return list(cfg.node_cmd)
    cmd = [sys.executable, '-m', 'tt_depth_ros.ros.depth', '--ros-args',
           '-r', f'__node:={cfg.node_name}',
           '-p', f'model:={cfg.model}', '-p', f'backend:={cfg.backend}',
           '-p', f'process_res:={cfg.process_res}', '-p', 'diagnostics_period:=0.5',
           '-r', f'image:={cfg.image_topic}', '-r', f'camera_info:={cfg.info_topic}',
           '-r', f'depth:={cfg.output_topic}']
    if weights_path:
        cmd += ['-p', f'weights_path:={weights_path}']
    for p in cfg.node_params:
        cmd += ['-p', p]
    return cmd


class BenchSession:
    """One benchmark: player, monitors, counters; `run_once` and `accuracy_pass`."""

    def __init__(self, cfg: BenchConfig, log):
        self.cfg, self.log = cfg, log
        self.offset_ns = 0
        self.late_discarded = 0
        self.runs: list[dict] = []
        self.pose_monitor = None

    def run_once(self, rate: float, label: str) -> dict:
        cfg, player, mon = self.cfg, self.player, self.monitor
        stale = mon.take()
        self.late_discarded += len(stale)
        frames = max(3, int(round(rate * cfg.duration_s)))
        sent: dict[int, int] = {}
        t0 = time.monotonic()
        player.play('rate', rate_hz=rate, loops=0, max_frames=frames,
                    stamp_offset_ns=self.offset_ns, on_frame=lambda s, t, i: sent.__setitem__(s, t))
        self.offset_ns += (frames // len(player.frames) + 1) * player.loop_span_ns
        mon.wait_for(set(sent), timeout_s=self.drain_timeout_s, idle_s=self.drain_idle_s)
        received = mon.take()
        t1 = time.monotonic()
        metrics = st.basic_metrics(sent, received)
        pairs, _ = st.match_latencies(sent, received)
        first = next(iter(sent.values()))
        run = {'label': label, 'rate_hz': rate, 'metrics': metrics,
               'resources': self.resources.summary(t0, t1),
               'diagnostics': self.diag.snapshot(), 'stages_ms': self.diag.stages_ms(),
               'series': {'t_s': [(t - first) / 1e9 for _, t, _ in pairs],
                          'latency_ms': [(r - t) / 1e6 for _, t, r in pairs]}}
        self.runs.append(run)
        self.log(f'  {label}: sent {metrics[st.NUM_FRAMES_SENT]}, received '
                 f'{metrics["num_matched"]}, drops {100 * metrics["drop_fraction"]:.1f} %, '
                 f'p50 {metrics.get("latency_p50_ms", float("nan")):.1f} ms, p99 '
                 f'{metrics.get("latency_p99_ms", float("nan")):.1f} ms, out '
                 f'{metrics.get(st.MEAN_FRAME_RATE, 0.0):.2f} fps')
        return run

    def accuracy_pass(self, depth_gt: bool = True) -> dict:
        """Each pre-buffered frame once, as fast as the node keeps up; metric depth vs GT.

        With `cfg.pose_topic` and `cfg.pose_gt_baseline_m`, the poses published meanwhile are
        compared with the stereo rig (camera 2 at +x baseline in camera 1, no rotation).
        """
        from tt_depth_ros.tools.eval import accuracy as acc
        cfg, player, mon = self.cfg, self.player, self.monitor
        self.late_discarded += len(mon.take())
        gt = {}
        if depth_gt:
            gt = {header_stamp_ns(m.raw): m.raw for m in read_bag(cfg.bag, [cfg.gt_topic])[0]}
        orig = [header_stamp_ns(f[-1].raw) for f in player.frames]
        sent: dict[int, int] = {}
        index: dict[int, int] = {}

        def on_frame(stamp, t, i):
            sent[stamp] = t
            index[stamp] = i

        mon.keep_payloads = True
        if self.pose_monitor is not None:
            self.pose_monitor.take()
            self.pose_monitor.payloads.clear()
        player.play('consumer', loops=1, consumer=mon, consumer_timeout_s=self.drain_timeout_s,
                    stamp_offset_ns=self.offset_ns, on_frame=on_frame)
        self.offset_ns += 2 * player.loop_span_ns
        mon.keep_payloads = False
        received = mon.take()
        per_frame, missing_gt = [], 0
        for stamp in sent if depth_gt else ():
            raw = mon.payloads.get(stamp)
            truth = gt.get(orig[index[stamp]])
            if raw is None:
                continue
            if truth is None:
                missing_gt += 1
                continue
            g = decode_depth(truth)
            pred = decode_depth(raw)
            if pred.shape != g.shape:
                pred = acc.resize_nearest(pred, g.shape)
            per_frame.append(acc.depth_metrics(pred, g))
        mon.payloads.clear()
        out = acc.mean_metrics(per_frame) if depth_gt else {'depth': 'no ground truth / not depth'}
        out.update(frames_sent=len(sent), outputs=len(received), frames_without_gt=missing_gt,
                   scale_alignment='none (metric)', per_frame=per_frame)
        nan = float('nan')
        if depth_gt:
            self.log(f'accuracy over {len(per_frame)} frames: AbsRel '
                     f'{out.get("abs_rel", nan):.4f}, RMSE {out.get("rmse_m", nan):.3f} m, '
                     f'delta1 {out.get("delta1", nan):.3f}')
        if self.pose_monitor is not None and cfg.pose_gt_baseline_m > 0:
            out['pose'] = stereo_pose_accuracy(
                [self.pose_monitor.payloads[s] for s in sent if s in self.pose_monitor.payloads],
                cfg.pose_gt_baseline_m, len(sent))
            self.log(f'pose: {out["pose"]["poses"]}/{len(sent)} pairs with a pose, rotation '
                     f'error {out["pose"].get("rot_err_deg", nan):.2f} deg, translation '
                     f'direction error {out["pose"].get("trans_dir_err_deg", nan):.2f} deg')
        return out


def stereo_pose_accuracy(pose_payloads: list[bytes], baseline_m: float, pairs: int) -> dict:
    """Mean pose errors of serialized PoseStamped (camera 2 in camera 1) vs a rectified rig.

    Args:
        pose_payloads: raw geometry_msgs/PoseStamped messages.
        baseline_m: true camera-2 offset along camera 1's +x (ROS stereo convention).
        pairs: number of pairs sent (for the pose rate).
    """
    import numpy as np

    from tt_depth_ros.tools.eval import accuracy as acc
    T_gt = np.eye(4)
    T_gt[0, 3] = baseline_m
    errors = [acc.pose_errors(decode_pose(raw).T, T_gt) for raw in pose_payloads]
    out = acc.mean_metrics(errors)
    out.update(poses=len(errors), pairs=pairs, gt_T_1_2=T_gt.tolist(), per_pair=errors)
    return out
