"""Stable metric scale: the scale stage's per-frame cost, and the README's raw-vs-filtered plot.

Cost (target: <= 1 ms per 640x480 frame with a 30k-point LiDAR scan, docs/design.md §4): the
depth node's own per-frame scale work, in-process and ROS-free where the node is: the scan's
conversion (PointCloud2 -> points, once per scan, on the executor), the side inputs (nearest
scan, two TF lookups with time travel: ros/depth/scale_inputs.py) and the scale stage
(projection + z-buffer, gated fit, Kalman filter, the scale applied: pipelines/depth_scale.py),
for a metric model with scale_source cloud and, without a sensor, temporal. Medians and p95
over the frames of the thread's CPU time (the cost, whatever else the machine runs) and of the
wall time, printed, never asserted.

Stability: the scale oracle of the tests (test/support/scale_oracle.py: the network's depth is
the truth times s_i, 10 % log-normal jitter and a x2 step; a LiDAR at 12.5 Hz against the
camera's 10 Hz, 2 % range noise, 5 % gross outliers) through the real frame path and scale
stage: the published scale error per frame, raw (the network) against cloud + kalman and
temporal + kalman, printed and drawn into docs/images/stable_scale.png (the README section
"Stable metric scale").

    PYTHONPATH=test .venv/bin/python -m benchmarks.bench_scale_stability [--frames N] [--plot P]

(test/ on PYTHONPATH: the oracle and its engine double are the tests' support modules.)
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks import require_test_helpers

require_test_helpers('bench_scale_stability')

from std_msgs.msg import Header  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from support import scale_oracle as so  # noqa: E402
from tt_depth_ros.models.kind import ModelKind  # noqa: E402
from tt_depth_ros.pipelines.depth import DepthFrame  # noqa: E402
from tt_depth_ros.pipelines.depth_scale import ScaleState, scale_depth_frame  # noqa: E402
from tt_depth_ros.pipelines.relative_scale import RelativeScaleSettings  # noqa: E402
from tt_depth_ros.pipelines.scale_filter import (  # noqa: E402
    MEASURED,
    RESET,
    ScaleFilterSettings,
)
from tt_depth_ros.pipelines.sensor_scale import MAX_FIT_PIXELS, cloud_scale  # noqa: E402
from tt_depth_ros.ros.depth.scale_inputs import ScaleSideInputs  # noqa: E402
from tt_depth_ros.ros.msgs.cloud import pointcloud2_msg  # noqa: E402
from tt_depth_ros.ros.msgs.pose import transform_stamped_msg  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLOT = ROOT / 'docs' / 'images' / 'stable_scale.png'
CLOUD_POINTS = 30_000
CLOUD = RelativeScaleSettings('cloud', filter=ScaleFilterSettings('kalman'))
TEMPORAL = RelativeScaleSettings('temporal', filter=ScaleFilterSettings(
    'kalman', process_noise=0.01, model_sigma=0.1))


def _header(frame: str, stamp_ns: int) -> Header:
    h = Header(frame_id=frame)
    h.stamp.sec, h.stamp.nanosec = divmod(stamp_ns, 10**9)
    return h


def _stats(cpu_ms: list[float], wall_ms: list[float]) -> str:
    c, w = np.asarray(cpu_ms), np.asarray(wall_ms)
    return (f'cpu median {np.median(c):6.3f} ms  p95 {np.percentile(c, 95):6.3f} ms   '
            f'wall median {np.median(w):6.3f} ms')


class _Clock:
    """Per-part thread CPU time and wall time, in ms."""

    def __init__(self) -> None:
        self.cpu: dict[str, list] = {}
        self.wall: dict[str, list] = {}
        self._t = None

    def start(self) -> None:
        self._t = (time.thread_time(), time.perf_counter())

    def lap(self, part: str) -> None:
        c, w = time.thread_time(), time.perf_counter()
        self.cpu.setdefault(part, []).append(1e3 * (c - self._t[0]))
        self.wall.setdefault(part, []).append(1e3 * (w - self._t[1]))
        self._t = (c, w)

    def line(self, *parts: str) -> str:
        cpu = np.sum([self.cpu[p] for p in parts], axis=0)
        wall = np.sum([self.wall[p] for p in parts], axis=0)
        return _stats(cpu, wall)


def cost(frames: int) -> None:
    """Per-frame cost of the scale work at 640x480 with a 30k-point scan (module docstring)."""
    oracle = so.Oracle(640, 480, seed=1)
    rgb, true = oracle.frame(0)
    depth = (true * np.float32(1.07)).astype(np.float32)
    K = oracle.K
    frame = DepthFrame(depth=depth, K=K, tx=0.0, image=rgb, conf=None, K_estimated=None,
                       K_network=K, intrinsics_source='camera_info', focal_used_px=K[0, 0],
                       focal_estimated_px=None, raw_depth=depth, sky_score=None, timings={})
    side = ScaleSideInputs()
    t0 = so.frame_stamp(0)
    side.tf.add_msg(TFMessage(transforms=[
        transform_stamped_msg(so.T_BASE_OPTICAL, _header('', 0).stamp, so.BASE, so.OPTICAL),
        transform_stamped_msg(so.T_BASE_LIDAR, _header('', 0).stamp, so.BASE, so.LIDAR)]), True)
    def odometry(k: int) -> None:            # 10 Hz odometry, as the executor would add it
        t = t0 + k * 10**8
        side.tf.add(so.ODOM, so.BASE, so.T_odom_base(so.seconds(t)), t)

    for k in (-2, -1, 0):
        odometry(k)
    points = oracle.scan(t0, n_rays=int(CLOUD_POINTS * 1.25))   # ~20 % of the rays are sky
    points = np.resize(points, (CLOUD_POINTS, 3))
    params = type('P', (), dict(
        scale_source='cloud', metric_cloud_tolerance_s=0.05, metric_cloud_wait_s=0.0,
        scale_fixed_frame=so.ODOM, metric_depth_wait_s=0.0, camera_height_frame=''))
    state = ScaleState()
    clock = _Clock()
    for i in range(frames):
        t = t0 + i * 10**8
        odometry(i + 1)
        msg = pointcloud2_msg(points.reshape(1, -1, 3), None, _header(so.LIDAR, t - 10**7))
        clock.start()
        side.clouds.put(msg)
        clock.lap('convert')
        inputs = side.for_frame(params, _header(so.OPTICAL, t))
        clock.lap('gather')
        scaled = scale_depth_frame(ModelKind.METRIC, frame, CLOUD, 0.0, 0.0, inputs, state)
        clock.lap('stage')
        if scaled.filtered.state not in (MEASURED, RESET):
            raise RuntimeError(f'frame {i} was not measured: {scaled.figures}')
    print(f'cloud, 640x480, {CLOUD_POINTS} points, {scaled.figures["cloud_points_in_view"]} in '
          f'view, {scaled.figures["cloud_pixels"]} pixels fitted, {frames} frames:')
    print(f'  scan conversion (executor, per scan)  {clock.line("convert")}')
    print(f'  side inputs (scan, TF time travel)    {clock.line("gather")}')
    print(f'  scale stage (project, fit, filter)    {clock.line("stage")}')
    print(f'  worker per frame                      {clock.line("gather", "stage")}')
    _lattice_against_every_pixel(frames, points, side.cloud_to_camera(
        so.OPTICAL, t, so.LIDAR, t - 10**7, so.ODOM), depth, K)
    params.scale_source = 'temporal'
    state = ScaleState()
    for i in range(frames, 2 * frames):       # later stamps: TF keeps the last 10 s
        t = t0 + i * 10**8
        odometry(i + 1)
        clock.start()
        inputs = side.for_frame(params, _header(so.OPTICAL, t))
        scaled = scale_depth_frame(ModelKind.METRIC, frame, TEMPORAL, 0.0, 0.0, inputs, state)
        clock.lap('temporal')
        if i > frames and scaled.figures['scale_measured'] is None:
            raise RuntimeError(f'frame {i} had no camera-motion ratio: {scaled.figures}')
    print(f'temporal, 640x480, worker per frame     {clock.line("temporal")}')


def _lattice_against_every_pixel(frames: int, points: np.ndarray, T: np.ndarray,
                                 depth: np.ndarray, K: np.ndarray) -> None:
    """The scan's projection and fit with the fit's pixel lattice and with every pixel hit.

    Interleaved frame by frame, the order alternating, so the ratio holds however fast the
    machine is at the time; a large array is rewritten between calls, as a forward would.
    """
    clock = _Clock()
    evict = np.ones(4 << 20, np.float32)
    variants = (('lattice', MAX_FIT_PIXELS), ('every pixel', 0))
    for i in range(frames):
        for name, max_pixels in variants[::1 if i % 2 else -1]:
            evict += 1
            clock.start()
            cloud_scale(points, T, depth, None, K, max_pixels=max_pixels)
            clock.lap(name)
    lattice, every = (np.median(clock.cpu[name]) for name, _ in variants)
    print(f'  projection + fit, lattice of ~{MAX_FIT_PIXELS} pixels   {clock.line("lattice")}')
    print(f'  projection + fit, every pixel hit     {clock.line("every pixel")}')
    print(f'  every pixel / lattice (same run)      {every / lattice:.2f}x')


def stability(frames: int, plot: Path | None) -> None:
    """The oracle sequence raw vs filtered (module docstring); the plot when `plot` is set."""
    step = frames // 2
    oracle = so.Oracle(112, 84, seed=1, step_at=step)
    runs = {'cloud, no filter': so.run_sequence('metric', oracle, frames,
                                                RelativeScaleSettings('cloud')),
            'cloud + kalman': so.run_sequence('metric', oracle, frames, CLOUD),
            'temporal + kalman (no sensor, no step)': so.run_sequence(
                'metric', so.Oracle(112, 84, seed=1), frames, TEMPORAL)}
    first = int(so.CAMERA_HZ)                 # after the first second, without the step's resets
    segments = [(first, step), (step + 3, frames)]

    def jitter(err, segs):
        return float(np.std(np.concatenate([np.diff(np.log(err[a:b])) for a, b in segs])))

    raw = runs['cloud + kalman'].raw
    print(f'\nstability, oracle 112x84, {frames} frames at {so.CAMERA_HZ:g} Hz, x2 step at '
          f'frame {step}: frame-to-frame log-scale jitter, median |error|')
    print(f'  network (raw)                           jitter {jitter(raw, segments):.4f}')
    for name, r in runs.items():
        segs = [(first, frames)] if name.startswith('temporal') else segments
        err = r.error
        print(f'  {name:40s} jitter {jitter(err, segs):.4f}  (raw {jitter(r.raw, segs):.4f})'
              f'  median |error| {np.nanmedian(np.abs(err[first:] - 1)):.4f}'
              f'  end error {err[-1] - 1:+.4f}')
    if plot is not None:
        _plot(runs, plot, step)


def _plot(runs: dict, path: Path, step: int) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(8, 4.6), sharex=True)
    t = np.arange(len(runs['cloud + kalman'].raw)) / so.CAMERA_HZ
    top, bottom = axes
    top.plot(t, runs['cloud + kalman'].raw, color='0.65', lw=1, label='network (raw)')
    top.plot(t, runs['cloud + kalman'].error, color='tab:blue', lw=1.6,
             label='scale_source cloud + kalman')
    top.axvline(step / so.CAMERA_HZ, color='0.8', ls=':', lw=1)
    top.set_ylabel('depth / true')
    top.legend(loc='upper left', fontsize=8, frameon=False)
    temporal = runs['temporal + kalman (no sensor, no step)']
    bottom.plot(t, temporal.raw, color='0.65', lw=1, label='network (raw)')
    bottom.plot(t, temporal.error, color='tab:orange', lw=1.6,
                label='scale_source temporal + kalman (odometry only)')
    bottom.set_ylabel('depth / true')
    bottom.set_xlabel('time (s), oracle sequence at 10 Hz')
    bottom.legend(loc='upper left', fontsize=8, frameon=False)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    print(f'\nplot: {path}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--frames', type=int, default=200, help='frames of each run')
    parser.add_argument('--plot', type=Path, default=PLOT, help='PNG to write')
    parser.add_argument('--no-plot', action='store_true', help='print only')
    args = parser.parse_args()
    print(f'cpus available {len(os.sched_getaffinity(0))}, load average '
          f'{os.getloadavg()[0]:.1f}')
    cost(args.frames)
    stability(args.frames, None if args.no_plot else args.plot)


if __name__ == '__main__':
    main()
