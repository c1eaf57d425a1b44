"""Many cameras on one CPU: one depth node for all of them vs one node per camera; printed.

For 1..4 cameras, each publishing 320x240 rgb8 at `rate` Hz (over the engine's capacity from two
cameras on), three setups of real depth node processes on loopback ROS (the tiny DA3 model,
rule-v1 weights, torch-cpu float32, process_res 252):

* shared: ONE node with `cameras` listing every camera (one engine, frames taken round-robin);
* shared+batch: the same with `batch_frames` (same-size frames waiting together in one forward;
  not byte-equal to one-at-a-time: the batched matmuls round differently);
* per-camera: one node per camera (one engine each), as multi_camera.launch.py share_engine:=false.

After a warm-up it counts the depth images received over `seconds`: aggregate frames/s, and per
camera the latency from the image stamp to receipt (p50 / p95 over the cameras' frames, the worst
camera's p95), then the node processes' memory (summed RSS, and PSS, which counts pages the
processes share once).

    .venv/bin/python -m benchmarks.bench_multi_camera [rate_hz] [seconds]

Run it in a loopback-only network namespace as the tests do: `unshare -n sh -c 'ip link set lo up
&& exec "$0" "$@"' .venv/bin/python -m benchmarks.bench_multi_camera`.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env

apply_loopback_env()
import numpy as np  # noqa: E402
import psutil  # noqa: E402
import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from tt_depth_ros.ros.msgs.camera_info import camera_info_for  # noqa: E402
from tt_depth_ros.ros.msgs.depth import rgb_image_msg  # noqa: E402
from tt_depth_ros.tools.bench.rule_v1_checkpoint import write_rule_v1_checkpoint  # noqa: E402

W, H = 320, 240
WARM_S = 3.0
K = np.array([[250.0, 0, 159.5], [0, 250.0, 119.5], [0, 0, 1]])
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
BEST_EFFORT = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


def node_cmd(ns: str, params: dict) -> list[str]:
    args = ['--ros-args', '-r', f'__ns:={ns}', '-r', '__node:=depth_node']
    for k, v in params.items():
        if isinstance(v, bool):
            v = 'true' if v else 'false'
        elif isinstance(v, str):
            v = "'" + v + "'"
        args += ['-p', f'{k}:={v}']
    return [sys.executable, '-m', 'tt_depth_ros.ros.depth', *args]


def start_nodes(setup: str, cams: list[str], weights: Path, log_dir: Path) -> list:
    common = {'model': 'da3metric-tiny', 'weights_path': str(weights), 'backend': 'torch-cpu',
              'torch_dtype': 'float32', 'process_res': 252, 'camera_info_sync': 'latest',
              'expected_width': W, 'expected_height': H}
    if setup.startswith('shared'):
        runs = [('/bench', {**common, 'cameras': cams, 'batch_frames': setup == 'shared+batch'})]
    else:
        runs = [(cam, common) for cam in cams]
    procs = []
    for i, (ns, params) in enumerate(runs):
        log = open(log_dir / f'{setup}-{len(cams)}-{i}.log', 'w')
        procs.append(subprocess.Popen(node_cmd(ns, params), stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    return procs


def stop_nodes(procs: list) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)


def memory_mb(procs: list) -> tuple[float, float]:
    rss = pss = 0.0
    for p in procs:
        info = psutil.Process(p.pid).memory_full_info()
        rss += info.rss / 2**20
        pss += getattr(info, 'pss', info.rss) / 2**20
    return rss, pss


def run_case(node, setup: str, n: int, rate: float, seconds: float, weights: Path,
             log_dir: Path) -> dict:
    cams = [f'/bench/c{n}_{i}' for i in range(n)]
    got: dict[str, list] = defaultdict(list)
    subs, pubs = [], {}
    for cam in cams:
        subs.append(node.create_subscription(
            Image, f'{cam}/depth', lambda m, c=cam: got[c].append((time.time(), m.header.stamp)),
            RELIABLE))
        pubs[cam] = (node.create_publisher(Image, f'{cam}/image', BEST_EFFORT),
                     node.create_publisher(CameraInfo, f'{cam}/camera_info', RELIABLE))
    procs = start_nodes(setup, cams, weights, log_dir)
    rgb = [np.random.default_rng(i).integers(0, 256, (H, W, 3), dtype=np.uint8)
           for i in range(n)]
    try:
        t_start = time.monotonic()
        next_due = t_start
        phase_end = None
        while True:
            now = time.monotonic()
            if phase_end is None and all(got[c] for c in cams):
                phase_end = now + WARM_S               # every camera served: warm up, then count
            if phase_end is not None and now >= phase_end:
                break
            if now - t_start > 120:
                raise RuntimeError(f'{setup} x{n}: no depth from every camera within 120 s; '
                                   f'logs in {log_dir}')
            if now >= next_due:
                for i, cam in enumerate(cams):
                    header = Header(stamp=node.get_clock().now().to_msg(), frame_id=f'c{i}')
                    pubs[cam][1].publish(camera_info_for(K, W, H, header))
                    pubs[cam][0].publish(rgb_image_msg(rgb[i], header))
                next_due += 1.0 / rate
            time.sleep(max(0.0, min(next_due - time.monotonic(), 0.005)))
        for c in cams:
            got[c].clear()
        t0 = time.time()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if time.monotonic() >= next_due:
                for i, cam in enumerate(cams):
                    header = Header(stamp=node.get_clock().now().to_msg(), frame_id=f'c{i}')
                    pubs[cam][0].publish(rgb_image_msg(rgb[i], header))
                next_due += 1.0 / rate
            time.sleep(max(0.0, min(next_due - time.monotonic(), 0.005)))
        t1 = time.time()
        rss, pss = memory_mb(procs)
        lat = {c: np.array([t - (s.sec + s.nanosec * 1e-9) for t, s in got[c] if t <= t1])
               for c in cams}
        frames = sum(len(v) for v in lat.values())
        every = np.concatenate([v for v in lat.values() if len(v)]) if frames else np.zeros(1)
        return {'setup': setup, 'cameras': n, 'fps': frames / (t1 - t0),
                'per_camera_fps': [len(lat[c]) / (t1 - t0) for c in cams],
                'p50_ms': 1e3 * float(np.percentile(every, 50)),
                'p95_ms': 1e3 * float(np.percentile(every, 95)),
                'worst_p95_ms': 1e3 * max(float(np.percentile(v, 95)) for v in lat.values()
                                          if len(v)),
                'rss_mb': rss, 'pss_mb': pss, 'processes': len(procs)}
    finally:
        stop_nodes(procs)
        for s in subs:
            node.destroy_subscription(s)
        for a, b in pubs.values():
            node.destroy_publisher(a)
            node.destroy_publisher(b)


def main() -> None:
    rate = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    folder = Path(tempfile.mkdtemp(prefix='bench-multi-camera-'))
    weights = write_rule_v1_checkpoint('da3metric-tiny', folder / 'da3metric_tiny.safetensors')
    rclpy.init()
    node = rclpy.create_node('bench_multi_camera')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    import threading
    threading.Thread(target=executor.spin, daemon=True).start()
    print(f'{W}x{H} rgb8 at {rate:g} Hz per camera, da3metric-tiny torch-cpu float32, '
          f'process_res 252, {os.cpu_count()} CPUs, {seconds:g} s per case')
    print('cameras  setup          processes  frames/s  per camera       p50 ms  p95 ms  '
          'worst p95  RSS MB  PSS MB')
    try:
        for n in range(1, 5):
            for setup in ('shared', 'shared+batch', 'per-camera'):
                if n == 1 and setup != 'shared':
                    continue        # one camera: the three setups are the same node
                r = run_case(node, setup, n, rate, seconds, weights, folder)
                per = '/'.join(f'{f:.1f}' for f in r['per_camera_fps'])
                print(f'{n:>7}  {setup:<13}  {r["processes"]:>9}  {r["fps"]:>8.1f}  {per:<15}  '
                      f'{r["p50_ms"]:>6.0f}  {r["p95_ms"]:>6.0f}  {r["worst_p95_ms"]:>9.0f}  '
                      f'{r["rss_mb"]:>6.0f}  {r["pss_mb"]:>6.0f}', flush=True)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
