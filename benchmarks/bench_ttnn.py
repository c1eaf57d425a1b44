"""Benchmark of the traced ttnn engines on a Tenstorrent Blackhole p150 (printed, never asserted).

Reports, per model and shape: device open / weight conversion / warm-up / capture times; per-frame
stages of `infer` (upload, enqueue, device+readback, unpack) as percentiles; bare trace replay
(execute_trace blocking, no I/O) = device time per forward; frames per second; and the depth
node's host overhead relative to the engine (docs/design.md §4 target: <= 10 %). Targets: DA3
<= 15 ms per frame, DUSt3R pair <= 28 ms.

    PYTHONPATH=test .venv/bin/python -m benchmarks.bench_ttnn --model da3metric-large \
        --shape 280x504 [--camera 480x640] [--weights PATH] [--dtype bfloat16|bfloat8_b|...] \
        [--frames 200] [--json out.json]

The node's host overhead runs the depth node with the tests' known-depth engine double
(bench_depth_host_overhead): test/ on PYTHONPATH; without it that figure is left out and the
output says why (`--no-node-overhead` leaves it out).

`--camera HxW` (DA3) measures what the depth node runs on the camera grid: the camera frame
uploaded as it came and resized on the device inside the trace (`infer_camera`; the network size
is the one the node picks at `--process-res`, default 504; `--shape` is then ignored).

`--command-queues 2` opens the device with two command queues and also runs the frames as a
depth-2 pipeline (submit frame N+1, then collect frame N: CQ1 uploads while CQ0 replays the
trace): its time per frame and stages (submit, wait, readback_and_unpack) print beside the serial
`infer` figures of the same engine.

Measured beside estimated, per op group and op class (the first card run recalibrates the
estimate, docs/ttnn-estimate.md "Measuring on a card"): run this benchmark under tt-metal's
device profiler (`python -m tracy -r -p -m benchmarks.bench_ttnn ... --frames 5`), then

    .venv/bin/python -m benchmarks.bench_ttnn --model M --shape HxW \
        --ops-csv generated/profiler/reports/<run>/ops_perf_results_<run>.csv \
        --estimate-json EST.json      (benchmarks.ttnn_estimate --json of the same preset)

prints the last traced forward's device-kernel time and op-to-op gaps per group beside the
estimate's kernel time, dispatch gaps and roofline (devtools/ttnn/profile_compare.py); it needs
no device. With TT_METAL_DEVICE_PROFILER=1 the benchmark reads the device profiler after the
trace replays (ttnn.ReadDeviceProfiler), so the report holds them.

Without a device (no /dev/tenstorrent/<id> or no `ttnn` package) it says so and exits 0.
`--ttnn-module devtools.ttnn.standin` runs the same code on the CPU stand-in (tests only: the
figures are then meaningless); rule-v1 weights are used when --weights is not given and the
model is a tiny test config.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def _pct(xs, q):
    return float(np.percentile(np.asarray(xs) * 1e3, q))


def _tiny_state(model: str):
    from devtools.checkpoints import torch_state_dict
    return torch_state_dict('da3-tiny' if model == 'da3metric-tiny' else 'dust3r-tiny')


def host_overhead_ms(frames: int = 100) -> float | None:
    """Median host ms per 640x480 frame of the depth node without the network (ROS in-process)."""
    try:
        import rclpy

        from benchmarks.bench_depth_host_overhead import run
        rclpy.init()
        try:
            # the node's own work next to a ttnn DA3 engine, which resizes on its device
            return float(run(True, frames, engine_resize=True)['host_ms'])
        finally:
            rclpy.shutdown()
    except Exception as e:   # noqa: BLE001 - the overhead part is optional
        print(f'(node overhead not measured: {e})')
        return None


def pipelined(eng, views, rmap, frames: int) -> dict:
    """Depth-2 pipeline: submit N+1 before collecting N; per-frame interval and stages."""
    submit = (lambda: eng.submit(views[0], resize=rmap)) if rmap is not None else \
        (lambda: eng.submit(*views))
    stages: dict[str, list] = {}
    pending = submit()
    t0 = time.perf_counter()
    for _ in range(frames):
        nxt = submit()
        sub = eng.last_timings.get('submit')
        eng.collect(pending)
        for k, v in {**eng.last_timings, 'submit': sub}.items():
            stages.setdefault(k, []).append(v)
        pending = nxt
    eng.collect(pending)
    per_frame = (time.perf_counter() - t0) / frames
    return {'pipelined_ms_per_frame': per_frame * 1e3, 'pipelined_fps': 1.0 / per_frame,
            'pipelined_stages_ms_p50': {k: _pct(v, 50) for k, v in stages.items()
                                        if None not in v}}


def measured_vs_estimate(model: str, shape: tuple[int, int], ops_csv: str,
                         estimate_json: str) -> str:
    """The profiler's per-group device time beside the estimate of the same forward (text)."""
    from devtools.ttnn import profile_compare
    runs = json.loads(Path(estimate_json).read_text())['runs']
    size = f'{shape[0]}x{shape[1]}'
    hits = [r for r in runs if size in r['sizes'] and r.get('engine_model') in (model, None)]
    if not hits:
        raise ValueError(f'{estimate_json}: no run of {model} at {size} (it has '
                         f'{[(r.get("engine_model"), list(r["sizes"])) for r in runs]}); run '
                         f'benchmarks.ttnn_estimate --model ... --size {size} --json')
    est = hits[0]['sizes'][size]
    cmp = profile_compare.compare(est, profile_compare.read_ops_csv(ops_csv))
    return profile_compare.format_compare(
        cmp, f'{model} {size} [{hits[0].get("precision")}]')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default='da3metric-large')
    ap.add_argument('--shape', default=None, help='HxW network size (default 280x504 / 384x512)')
    ap.add_argument('--camera', default=None, help='HxW camera frame resized on the device (DA3)')
    ap.add_argument('--process-res', type=int, default=504, help='network long side (--camera)')
    ap.add_argument('--weights', default=None)
    ap.add_argument('--dtype', default=None)
    ap.add_argument('--device-id', type=int, default=0)
    ap.add_argument('--frames', type=int, default=200)
    ap.add_argument('--json', default=None)
    ap.add_argument('--ttnn-module', default=None, help='inject a ttnn implementation (tests)')
    ap.add_argument('--no-node-overhead', action='store_true')
    ap.add_argument('--command-queues', type=int, default=1, choices=(1, 2))
    ap.add_argument('--ops-csv', help="tt-metal's device-profiler ops report of a run of this "
                    'benchmark: print it per op group beside --estimate-json, then exit')
    ap.add_argument('--estimate-json', help='benchmarks.ttnn_estimate --json of the same model, '
                    'preset and size (with --ops-csv)')
    a = ap.parse_args(argv)
    if a.ops_csv or a.estimate_json:
        if not (a.ops_csv and a.estimate_json):
            ap.error('--ops-csv and --estimate-json go together')
        shape = tuple(int(x) for x in (a.shape or ('384x512' if a.model.startswith('dust3r')
                                                   else '280x504')).split('x'))
        print(measured_vs_estimate(a.model, shape, a.ops_csv, a.estimate_json))
        return 0
    from tt_depth_ros.engines.select import ttnn_status
    if a.ttnn_module:
        sys.modules['ttnn'] = importlib.import_module(a.ttnn_module)
        print(f'NOTE: ttnn replaced by {a.ttnn_module}: timings are NOT hardware figures')
    else:
        ok, why = ttnn_status(a.device_id)
        if not ok:
            print(f'no Tenstorrent device present: {why}. Nothing to benchmark.')
            return 0
    from tt_depth_ros.engines.ttnn import build_ttnn_engine
    dust3r = a.model.startswith('dust3r')
    shape = tuple(int(x) for x in (a.shape or ('384x512' if dust3r else '280x504')).split('x'))
    camera, rmap = None, None
    if a.camera:
        from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size
        from tt_depth_ros.geometry.preprocess.resize_map import resize_map
        camera = tuple(int(x) for x in a.camera.split('x'))
        rmap = resize_map(camera, network_size(camera[1], camera[0], a.process_res),
                          a.process_res)
        shape = rmap.net_hw
    sd = _tiny_state(a.model) if a.weights is None and a.model.endswith('tiny') else None
    res: dict = {'model': a.model, 'shape': list(shape), 'dtype': a.dtype or 'bfloat16',
                 'camera': list(camera) if camera else None}
    t0 = time.perf_counter()
    eng = build_ttnn_engine(a.model, device_id=a.device_id, dtype=a.dtype, weights=a.weights,
                            state_dict=sd, command_queues=a.command_queues)
    res['build_s'] = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        if rmap is not None:
            eng.prepare_camera(rmap)
        else:
            eng.prepare(shape)
        res['prepare_s'] = time.perf_counter() - t0
        res.update(eng.info.details)
        rng = np.random.default_rng(0)
        views = [rng.integers(0, 256, (*(camera or shape), 3), dtype=np.uint8)
                 for _ in range(eng.num_views)]

        def infer():
            return eng.infer_camera(views[0], rmap) if rmap is not None else eng.infer(*views)
        for _ in range(3):
            infer()
        stages: dict[str, list] = {}
        walls = []
        for _ in range(a.frames):
            t = time.perf_counter()
            infer()
            walls.append(time.perf_counter() - t)
            for k, v in eng.last_timings.items():
                stages.setdefault(k, []).append(v)
        res['infer_ms'] = {'p50': _pct(walls, 50), 'p95': _pct(walls, 95)}
        res['fps'] = 1.0 / float(np.median(walls))
        res['stages_ms_p50'] = {k: _pct(v, 50) for k, v in stages.items()}
        if a.command_queues == 2:
            res.update(pipelined(eng, views, rmap, a.frames))
        ttnn = eng.ctx.ttnn
        entry = eng._shapes[(tuple(shape), camera)]      # (network size, camera size or None)
        reps = []
        for _ in range(max(10, a.frames // 4)):
            t = time.perf_counter()
            ttnn.execute_trace(eng.ctx.device, entry.trace, cq_id=0, blocking=True)
            reps.append(time.perf_counter() - t)
        res['trace_replay_ms'] = {'p50': _pct(reps, 50), 'p95': _pct(reps, 95)}
        if os.environ.get('TT_METAL_DEVICE_PROFILER') and hasattr(ttnn, 'ReadDeviceProfiler'):
            ttnn.ReadDeviceProfiler(eng.ctx.device)     # the replays into the ops report
    finally:
        eng.close()
    if not dust3r and not a.no_node_overhead:
        host = host_overhead_ms()
        if host is not None:
            res['node_host_ms'] = host
            res['node_overhead_ratio'] = host / res['infer_ms']['p50']
    print(json.dumps(res, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
