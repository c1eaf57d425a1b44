#!/usr/bin/env python3
"""CPU precision presets side by side: upstream DA3 fp32 / bf16 autocast vs ours for every preset.

Not a test: it prints figures, never asserts. One run, alternating rounds (the order flips every
round, so machine load hits every row alike), `--threads` threads everywhere:

* upstream DA3METRIC-LARGE 280x504 (`depth-anything-3==0.1.1`, backbone + DPT head on the
  normalised tensor, in its own venv installed and loaded exactly as benchmarks/bench_da3_cpu.py
  does), fp32 and under `torch.autocast('cpu', torch.bfloat16)`;
* ours, `engine.infer` per preset (engines/torch/presets.py) for DA3METRIC-LARGE 280x504,
  DA3-SMALL 280x504 and DUSt3R 512x384 (pair, 384 high): wall and process CPU time, best and
  median; depth (DUSt3R: view-2 pointmap) PCC and median / p99 relative error against our fp32
  output of the same weights; first-call time (build excluded: prepare + first forward).

Weights are rule-v1 (real checkpoint key layouts; DA3-SMALL with X1), as the golden fixtures use.
On a CPU without native bf16 dot products the bf16 presets (and upstream's bf16 autocast) run
emulated GEMMs ~5-15x slower than fp32; they are then timed for `--slow-rounds` rounds only.

    nice -n 5 .venv/bin/python -m benchmarks.bench_cpu_presets [--rounds 3] [--threads 2]
        [--models da3metric-large,da3-small,dust3r-vitl-512-dpt] [--presets ...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks import bench_da3_cpu as da3bench  # the upstream venv, weights, worker plumbing

ROOT = Path(__file__).resolve().parents[1]

MODELS = ('da3metric-large', 'da3-small', 'dust3r-vitl-512-dpt')
PRESETS = ('float32', 'bf16-matmul', 'cpu-fast', 'int8')
IMAGES = {'da3metric-large': ['da3/large_280x504.png'],
          'da3-small': ['da3_anyview/scene0_280x504_view0.png'],
          'dust3r-vitl-512-dpt': ['dust3r/pairA_384x512_view1.png',
                                  'dust3r/pairA_384x512_view2.png']}
OUTPUT = {'da3metric-large': 'depth', 'da3-small': 'depth', 'dust3r-vitl-512-dpt': 'pts3d_2'}


# ----------------------------------------------------------------------------------------------
# workers: upstream in its venv; ours in this process's venv (one engine per model and preset)
# ----------------------------------------------------------------------------------------------
def _upstream_worker(weights: str, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    fns, state = da3bench._upstream(weights)
    net, x = _net_and_input(fns['run'])

    def f32(t):
        return [f32(v) for v in t] if isinstance(t, (list, tuple)) else t.float()

    def bf16():
        # upstream's forward: backbone under autocast, DPT head with autocast disabled (its
        # da3.py); the bf16 taps are handed to the fp32 head as fp32
        h, w = x.shape[-2:]
        with torch.inference_mode(), torch.autocast('cpu', dtype=torch.bfloat16):
            feats, _ = net.backbone(x, cam_token=None, export_feat_layers=[])
            with torch.autocast(device_type='cpu', enabled=False):
                out = net._process_depth_head(f32(feats), h, w)
        state['depth'] = out['depth'][0, 0].float().numpy()

    fns['bf16'] = bf16

    def keep(cmd, fn):   # each command's last output under its own name
        def run():
            fn()
            state[cmd] = state['depth']
        return run

    _serve({c: keep(c, f) for c, f in fns.items()}, state, 'upstream')


def _net_and_input(run):
    """The upstream network and input tensor bench_da3_cpu's `run_net` closes over."""
    cells = dict(zip(run.__code__.co_freevars, (c.cell_contents for c in run.__closure__)))
    return cells['net'], cells['x']


def _rgb(rel: str):
    import cv2

    return cv2.cvtColor(cv2.imread(str(ROOT / 'test' / 'data' / rel)), cv2.COLOR_BGR2RGB)


def _state_dict(model: str):
    """rule-v1 checkpoint tensors for `model`, keyed as its checkpoint."""
    import torch

    from tt_depth_ros.models.weight_rule import rule_v1_tensor
    if model.startswith('dust3r'):
        keys = json.loads((ROOT / 'test' / 'data' / 'dust3r' / 'full_rule_v1_keys.json')
                          .read_text())['keys']
        return {k['key']: rule_v1_tensor(k['key'], tuple(k['shape'])) for k in keys}
    from tt_depth_ros.models.da3.checkpoint import AUX_LN_ALIASES
    from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
    from tt_depth_ros.models.da3.model import DA3Model
    with torch.device('meta'):
        shapes = {k: tuple(v.shape) for k, v in
                  DA3Model({**CONFIGS, **ANYVIEW_CONFIGS}[model]).state_dict().items()
                  if not any(a in k for a in AUX_LN_ALIASES)}
    return {'model.' + k: rule_v1_tensor('model.' + k, s, x1=True) for k, s in shapes.items()}


def _ours_worker(models: list[str], presets: list[str], threads: int,
                 emulated_bf16: list[str]) -> None:
    import numpy as np
    import torch

    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.engines.torch.presets import PRESETS as ALL
    from tt_depth_ros.engines.torch.presets import cpu_has_native_bf16
    torch.set_num_threads(threads)
    native = cpu_has_native_bf16()
    fns, state, info = {}, {}, {}
    for model in models:
        sd = _state_dict(model)
        imgs = [np.ascontiguousarray(_rgb(r)) for r in IMAGES[model]]
        for preset in presets:
            if ALL[preset].matmul == 'bfloat16' and not native and model not in emulated_bf16:
                continue
            t0 = time.perf_counter()
            eng = build_engine(model, backend='torch-cpu', dtype=preset, state_dict=sd)
            built = time.perf_counter() - t0
            t0 = time.perf_counter()
            eng.prepare(imgs[0].shape[:2])
            out = eng.infer(*imgs)[OUTPUT[model]]
            first = time.perf_counter() - t0
            key = f'{model}/{preset}'
            state[key] = out

            def run(eng=eng, imgs=imgs, key=key, model=model):
                state[key] = eng.infer(*imgs)[OUTPUT[model]]

            fns[key] = run
            info[key] = {'build_s': built, 'first_s': first, 'resolved': eng.info.dtype}
        del sd
    print(json.dumps({'info': info}), flush=True)
    _serve(fns, state, 'ours')


def _serve(fns: dict, state: dict, side: str) -> None:
    import numpy as np

    print(json.dumps({'ready': side}), flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(' ')
        if cmd == 'quit':
            break
        if cmd == 'save':
            key, _, path = arg.partition(' ')
            np.save(path, np.asarray(state[key], np.float32))
            print(json.dumps({'saved': path}), flush=True)
            continue
        w0, c0 = time.perf_counter(), time.process_time()
        fns[cmd]()
        print(json.dumps({'wall': time.perf_counter() - w0, 'cpu': time.process_time() - c0}),
              flush=True)


class Worker(da3bench.Worker):
    """bench_da3_cpu's line-protocol worker, started with this script's worker arguments."""

    def __init__(self, python: str, side: str, args: list[str], threads: int) -> None:
        import subprocess
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                   PYTHONPATH=str(ROOT) if side == 'ours' else '')
        self.side = side
        self.proc = subprocess.Popen([python, '-m', 'benchmarks.bench_cpu_presets', '--worker',
                                      side, *args, '--threads', str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=str(ROOT))
        self.info = self._read() if side == 'ours' else {}
        self.hello = self._read()


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------
def _compare(ref, got) -> tuple[float, float, float]:
    from tt_depth_ros.engines.parity import compare_maps
    a = compare_maps(ref, got)
    return a.pcc, a.median_rel, a.p99_rel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--slow-rounds', type=int, default=1,
                    help='rounds for emulated-bf16 rows (CPU without native bf16)')
    ap.add_argument('--models', default=','.join(MODELS))
    ap.add_argument('--emulated-bf16-models', default='da3-small',
                    help='CPU without native bf16: the only models whose bf16 presets are built')
    ap.add_argument('--presets', default=','.join(PRESETS))
    ap.add_argument('--venv', type=Path, default=ROOT / '.venv-bench-da3')
    ap.add_argument('--weights', type=Path, default=Path.home() / '.cache' / 'tt_depth_ros'
                    / 'da3metric_large_rule_v1.safetensors')
    ap.add_argument('--no-upstream', action='store_true')
    ap.add_argument('--worker', choices=('ours', 'upstream'), help=argparse.SUPPRESS)
    a = ap.parse_args()
    models, presets = a.models.split(','), a.presets.split(',')
    if a.worker == 'upstream':
        _upstream_worker(str(a.weights), a.threads)
        return 0
    if a.worker == 'ours':
        _ours_worker(models, presets, a.threads, a.emulated_bf16_models.split(','))
        return 0

    import numpy as np

    from tt_depth_ros.engines.torch.presets import PRESETS as ALL
    from tt_depth_ros.engines.torch.presets import cpu_has_native_bf16
    native = cpu_has_native_bf16()
    up_py, why = (None, 'skipped (--no-upstream)')
    if not a.no_upstream and 'da3metric-large' in models:
        da3bench.ensure_weights(a.weights)
        up_py, why = da3bench.ensure_upstream(a.venv)
    print(f'{a.threads} threads, {a.rounds} rounds (slow rows {a.slow_rounds}); {os.cpu_count()} '
          f'CPUs, native bf16: {native}; load average {os.getloadavg()[0]:.2f}; upstream: '
          f'{why}', flush=True)
    workers = {}
    try:
        t0 = time.perf_counter()
        workers['ours'] = Worker(sys.executable, 'ours', ['--models', a.models, '--presets',
                                                          a.presets], a.threads)
        print(f'our engines built and first-called in {time.perf_counter() - t0:.0f} s',
              flush=True)
        info = workers['ours'].info['info']
        rows = [('ours', f'{m}/{p}') for m in models for p in presets if f'{m}/{p}' in info]
        skipped = [f'{m}/{p}' for m in models for p in presets if f'{m}/{p}' not in info]
        if skipped:
            print(f'not built (emulated bf16 on this CPU, --emulated-bf16-models): {skipped}')
        if up_py:
            workers['upstream'] = Worker(up_py, 'upstream', ['--weights', str(a.weights)],
                                         a.threads)
            workers['upstream'].ask('run')   # first call (bf16 autocast: see --slow-rounds)
            if native:
                workers['upstream'].ask('bf16')
            rows = [('upstream', 'run'), ('upstream', 'bf16')] + rows

        def slow(row) -> bool:
            bf16 = (row[1] == 'bf16' if row[0] == 'upstream' else
                    ALL[row[1].split('/')[-1]].matmul == 'bfloat16')
            return bf16 and not native

        res = {r: {'wall': [], 'cpu': []} for r in rows}
        for rnd in range(a.rounds):
            for r in (rows if rnd % 2 == 0 else rows[::-1]):
                if slow(r) and rnd >= a.slow_rounds or r not in rows:
                    continue
                try:
                    t = workers[r[0]].ask(r[1])
                except (RuntimeError, OSError) as e:
                    if r[0] != 'upstream':
                        raise
                    print(f'UPSTREAM FAILED on {r[1]!r} ({e}): its rows are dropped', flush=True)
                    rows = [x for x in rows if x[0] != 'upstream']
                    up_py = None
                    continue
                res[r]['wall'].append(t['wall'])
                res[r]['cpu'].append(t['cpu'])
            print(f'round {rnd + 1} done, load average {os.getloadavg()[0]:.2f}', flush=True)
        tmp = Path(os.environ.get('TMPDIR', '/tmp'))
        outs = {}
        for r in rows:
            path = tmp / f'bench_presets_{r[1].replace("/", "_")}.npy'
            workers[r[0]].ask(f'save {r[1]} {path}')
            outs[r] = np.load(path)
        print('\n| model | preset | s/frame best | median | CPU s best | FPS | x own fp32 '
              '| x upstream fp32 | x upstream bf16 | PCC vs fp32 | med / p99 rel err | '
              'first call s |')
        print('|---|---|---|---|---|---|---|---|---|---|---|---|')
        best = {r: min(v['wall']) for r, v in res.items() if v['wall']}
        med = {r: statistics.median(v['wall']) for r, v in res.items() if v['wall']}
        up, upb = best.get(('upstream', 'run')), best.get(('upstream', 'bf16'))
        for r in rows:
            if r[0] == 'upstream':
                name, preset = 'da3metric-large', ('upstream fp32' if r[1] == 'run'
                                                   else 'upstream bf16 autocast')
                ref = outs[('upstream', 'run')]
                own = up
            else:
                name, preset = r[1].split('/')
                ref = outs[('ours', f'{name}/float32')] if ('ours', f'{name}/float32') in outs \
                    else None
                own = best.get(('ours', f'{name}/float32'))
            b = best[r]
            pcc, mrel, p99 = _compare(ref, outs[r]) if ref is not None else (float('nan'),) * 3
            vs_up = f'{b / up:.3f}' if up and name == 'da3metric-large' else ''
            vs_upb = f'{b / upb:.3f}' if upb and name == 'da3metric-large' else ''
            first = f'{info[r[1]]["first_s"]:.2f}' if r[0] == 'ours' else ''
            n = len(res[r]['wall'])
            print(f'| {name} | {preset} | {b:.3f} | {med[r]:.3f} (n={n}) | '
                  f'{min(res[r]["cpu"]):.3f} | {1 / b:.2f} | {b / own:.3f} | {vs_up} | '
                  f'{vs_upb} | {pcc:.6f} | {mrel:.1e} / {p99:.1e} | {first} |')
        if up_py:
            o = outs[('ours', 'da3metric-large/float32')] if 'float32' in presets else None
            if o is not None:
                pcc, _, _ = _compare(outs[('upstream', 'run')], o)
                print(f'\nours float32 vs upstream fp32 (same run): PCC {pcc:.8f}')
        print(f'load average now {os.getloadavg()[0]:.2f}')
    finally:
        for w in workers.values():
            w.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
