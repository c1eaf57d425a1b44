"""Run the project's ttnn engine through the REAL ttnn 0.81.1 on a mock p150 and report.

    .venv/bin/python -m devtools.ttnn.dryrun.driver --model da3-tiny [--size 280x504 ...]
        [--camera 480x640 ...] [--grid 11x10|13x10] [--dtype PRESET] [--json OUT]
    .venv/bin/python -m devtools.ttnn.dryrun.driver --plan RUNS.json --json OUT

The engine (tt_depth_ros.engines.ttnn, rule-v1 weights) runs in this interpreter with the real
library behind `ttnn` (bridge.py -> server.py in the side venv, environment.py). It goes through
its whole public life: build_ttnn_engine, prepare per size (eager warm-up, trace capture), infer
per size (upload, execute_trace, readback, unpack), then per camera size (DA3: the upstream
resize on the device, prepare_camera + infer_camera at the default process_res), close. Nothing
numeric is checked (device
reads return zeros): the report lists what the real library rejected, the buffer hazards
(monitor.py), programs per traced forward and the peak DRAM/L1 the real allocator held.
Exit status 1 when anything other than the expected ETH-dispatch refusal was recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from devtools import checkpoints
from devtools.ttnn.dryrun import environment

# name: (engine model, rule-v1 test config (devtools.checkpoints), default sizes = the golden
# fixtures' sizes; DUSt3R-Large also portrait, the tiny fixtures' other orientation: its L1
# layout differs under 'fast'; DA3-Large also a tiny fixture's size: three shapes through the LRU
# of two, whose eviction must give back what the library's program cache holds in L1_SMALL
# (engine.py); other sizes by --size
MODELS = {
    'da3-tiny': ('da3metric-tiny', 'da3-tiny', ['280x504', '378x504', '518x518']),
    'dust3r-tiny': ('dust3r-tiny', 'dust3r-tiny', ['80x112', '384x512', '512x384']),
    'da3-large': ('da3metric-large', 'da3-large', ['280x504', '518x518', '378x504']),
    'dust3r-large': ('dust3r-vitl-512-dpt', 'dust3r-large', ['384x512', '512x384']),
}
# Tensix columns harvested in the mock descriptor: with Tensix dispatch (the only kind the mock
# opens) one column of the rest goes to dispatch. '12x10' (one harvested) is a p150's 120-core
# grid under ETH dispatch: the real library validates and allocates every op on those 12 x 10
# workers (docs/ttnn-levers.md "12x10 grid")
HARVEST = {'13x10': 0, '12x10': 1, '11x10': 3}


def mock_descriptor(grid: str, workdir: Path) -> Path:
    text = environment.MOCK_DESC.read_text()
    text, n = re.subn(r'(\n\s+harvest_mask:\s*)\d+', rf'\g<1>{HARVEST[grid]}', text)
    if n != 1:
        raise RuntimeError(f'{environment.MOCK_DESC}: expected one harvest_mask line, got {n}')
    out = workdir / f'p150_mock_{grid}.yaml'
    out.write_text(text)
    return out


def run(model: str, sizes: list[str], grid: str = '11x10', max_traced_shapes=None,
        op_records: bool = False, dtype: str | None = None,
        cameras: tuple[str, ...] = (), command_queues: int = 1,
        weight_cache: bool = True) -> dict:
    """One model through build/prepare/infer/close; returns the report (see module doc).

    cameras: HxW camera sizes resized on the device (DA3 only), after the network sizes.
    command_queues: 2 opens the device with two queues and runs each size as two frames in
    flight (submit, submit, collect, collect). The mock device's dispatch crashes in
    `wait_for_event` (no card behind it), so those calls are counted, not sent
    (report['skipped_wait_for_event']); every other op of the pipeline goes to the library.

    op_records: each trace in the report also lists the device ops its body ran, read from the
    real library's graph capture (monitor.py, op_records.py; benchmarks/ttnn_estimate.py).
    dtype: the engine's precision preset (precision.PRESETS; None = the family's default).
    weight_cache: upload the weights through the real `as_tensor` cache (a scratch folder, as
    a user's first start does); False uploads with `from_torch` and writes no .tensorbin files
    (over 1 GB at full size, where the tiny models have already taken the cached path).
    """
    import numpy as np

    from devtools.ttnn.dryrun.bridge import Bridge
    engine_name, source, default_sizes = MODELS[model]
    sizes = sizes or default_sizes
    work = Path(tempfile.mkdtemp(prefix='tt_depth_ros_dryrun_'))
    env = environment.side_env()
    env['TT_METAL_MOCK_CLUSTER_DESC_PATH'] = str(mock_descriptor(grid, work))
    if op_records:
        env['TT_DRYRUN_OP_RECORDS'] = '1'
    py = environment.ensure_dryrun_venv()
    cache_before = os.environ.get('TT_DEPTH_ROS_TTNN_CACHE')
    os.environ['TT_DEPTH_ROS_TTNN_CACHE'] = str(work / 'weight_cache') if weight_cache else 'off'
    t_start = time.perf_counter()
    bridge = Bridge(str(py), env, work / 'real_ttnn.log')
    sys.modules['ttnn'] = bridge.module
    result = {'model': model, 'engine_model': engine_name, 'grid_requested': grid,
              'sizes': sizes, 'status': 'started', 'timings_s': {}}
    eng = None
    skipped_waits = []
    if command_queues == 2:
        bridge.module.__dict__['wait_for_event'] = \
            lambda cq_id=None, mesh_event=None: skipped_waits.append(cq_id)
    try:
        from tt_depth_ros.engines.ttnn import build_ttnn_engine
        sd = checkpoints.torch_state_dict(source)
        bridge.phase('build')
        t0 = time.perf_counter()
        kwargs = {} if max_traced_shapes is None else {'max_traced_shapes': max_traced_shapes}
        if dtype is not None:
            kwargs['dtype'] = dtype
        if command_queues != 1:
            kwargs['command_queues'] = command_queues
        eng = build_ttnn_engine(engine_name, state_dict=sd, **kwargs)
        del sd
        result['timings_s']['build'] = round(time.perf_counter() - t0, 1)
        result['dispatch'], result['grid'] = eng.ctx.dispatch, list(eng.ctx.grid)
        result['programs_estimate'] = eng.net.programs_estimate(eng.net.cfg, eng.ctx.precision)
        result['max_traced_shapes'] = eng.max_traced_shapes
        rng = np.random.default_rng(0)
        outputs = {}
        for s in sizes:
            h, w = (int(v) for v in s.split('x'))
            bridge.phase(f'prepare {s}')
            t0 = time.perf_counter()
            eng.prepare((h, w))
            result['timings_s'][f'prepare {s}'] = round(time.perf_counter() - t0, 1)
            bridge.phase(f'infer {s}')
            imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
                    for _ in range(eng.num_views)]
            if command_queues == 2:
                tickets = [eng.submit(*imgs), eng.submit(*imgs)]     # two frames in flight
                out = [eng.collect(t) for t in tickets][-1]
            else:
                out = eng.infer(*imgs)
            outputs[s] = {k: list(v.shape) for k, v in out.items()}
        for c in cameras:
            from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size
            from tt_depth_ros.geometry.preprocess.resize_map import resize_map
            h, w = (int(v) for v in c.split('x'))
            rmap = resize_map((h, w), network_size(w, h, 504), 504)
            bridge.phase(f'prepare camera {c}')
            t0 = time.perf_counter()
            eng.prepare_camera(rmap)
            result['timings_s'][f'prepare camera {c}'] = round(time.perf_counter() - t0, 1)
            bridge.phase(f'infer camera {c}')
            out = eng.infer_camera(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), rmap)
            outputs[f'camera {c}'] = {k: list(v.shape) for k, v in out.items()}
            result['camera_network'] = {**result.get('camera_network', {}),
                                        c: list(rmap.net_hw)}
        result['outputs'] = outputs
        result['engine_info'] = eng.info.details
        bridge.phase('close')
        eng.close()
        eng = None
        result['status'] = 'completed'
    except Exception as e:
        import traceback
        result['status'] = 'stopped'
        result['exception'] = f'{type(e).__name__}: {e}'[:3000]
        result['traceback'] = traceback.format_exc()[-4000:]
    finally:
        if eng is not None:
            try:
                eng.close()
            except Exception as e:
                result['close_error'] = str(e)[:500]
        try:
            rep = bridge.report()
        except Exception as e:
            rep = {'records': [], 'report_error': str(e)}
        bridge.close()
        sys.modules.pop('ttnn', None)
        restore_env('TT_DEPTH_ROS_TTNN_CACHE', cache_before)
    result.update(rep)
    if command_queues == 2:
        result['skipped_wait_for_event'] = len(skipped_waits)
    result['timings_s']['total'] = round(time.perf_counter() - t_start, 1)
    for rec in result['records']:
        # the engine asks for ETH dispatch first and reopens with Tensix dispatch by design
        if rec['op'] in ('ttnn.open_device', 'ttnn.open_mesh_device') and \
                result.get('dispatch') == 'worker' and \
                'ETH' in rec['error'] + json.dumps(rec['kwargs']):
            rec['kind'] = 'expected'
    result['problems'] = problems(result)
    clean_work_dir(work, keep_log=bool(result['problems']))
    if result['problems']:
        result['log'] = str(work / 'real_ttnn.log')
    return result


def restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def clean_work_dir(work: Path, keep_log: bool) -> None:
    """Remove the run's scratch: a full-size weight cache is over 1 GB per run.

    The real library's log stays when something was rejected, for the report's reader.
    """
    if not keep_log:
        shutil.rmtree(work, ignore_errors=True)
        return
    for child in work.iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        elif child.name != 'real_ttnn.log':
            child.unlink()


def problems(result: dict) -> list[str]:
    """One line per distinct unexpected record (kind, op, site, last error line) or failure."""
    out = []
    if result['status'] != 'completed':
        out.append(f"run {result['status']}: {result.get('exception', '?')}")
    seen = set()
    for rec in result.get('records', []):
        if rec['kind'] == 'expected':
            continue
        line = rec['error'].strip().splitlines()[-1][:240] if rec['error'].strip() else '?'
        key = (rec['kind'], rec['op'], rec['site'], line)
        if key not in seen:
            seen.add(key)
            out.append(f"{rec['kind']}: {rec['op']} at {rec['site']} [{rec['phase']}]: {line}")
    return out


def run_plan(plan: list[dict]) -> list[dict]:
    """Several runs in this one interpreter, each with its own real-library process.

    A plan entry holds `run`'s keyword arguments (model, sizes, dtype, cameras, command_queues,
    ...); this saves each run the interpreter's start and the torch import.
    """
    reports = []
    for entry in plan:
        entry = dict(entry)
        entry['cameras'] = tuple(entry.get('cameras', ()))
        reports.append(run(entry.pop('model'), list(entry.pop('sizes', [])), **entry))
    return reports


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--plan', help="a JSON list of runs (run()'s keyword arguments): --json "
                    'gets the list of their reports')
    ap.add_argument('--model', choices=sorted(MODELS))
    ap.add_argument('--size', action='append', default=[], help='HxW (repeatable)')
    ap.add_argument('--camera', action='append', default=[],
                    help='HxW camera size resized on the device (DA3; repeatable)')
    ap.add_argument('--grid', choices=sorted(HARVEST), default='11x10')
    ap.add_argument('--max-traced-shapes', type=int)
    ap.add_argument('--dtype', help='precision preset (default: the family default)')
    ap.add_argument('--command-queues', type=int, default=1, choices=(1, 2))
    ap.add_argument('--no-weight-cache', action='store_true',
                    help='upload with from_torch, no .tensorbin weight cache')
    ap.add_argument('--json', help='write the full report here')
    a = ap.parse_args()
    if a.plan:
        reports = run_plan(json.loads(Path(a.plan).read_text()))
        if a.json:
            Path(a.json).write_text(json.dumps(reports, indent=1))
        for r in reports:
            print(r['model'], r.get('engine_info', {}).get('precision'), r['status'],
                  r['timings_s'], *(f'PROBLEM {p}' for p in r['problems']))
        return 1 if any(r['problems'] for r in reports) else 0
    if not a.model:
        ap.error('--model (or --plan) is required')
    r = run(a.model, a.size, a.grid, a.max_traced_shapes, dtype=a.dtype,
            command_queues=a.command_queues, cameras=tuple(a.camera),
            weight_cache=not a.no_weight_cache)
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))
    summary = {k: r.get(k) for k in ('model', 'status', 'dispatch', 'grid', 'sizes',
                                     'timings_s', 'peak_bytes', 'traces')}
    print(json.dumps(summary, indent=1))
    for p in r['problems']:
        print('PROBLEM', p)
    if 'log' in r:
        print('the real library\'s log:', r['log'])
    if 'traceback' in r:
        print(r['traceback'])
    return 1 if r['problems'] else 0


if __name__ == '__main__':
    sys.exit(main())
