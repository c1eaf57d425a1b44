#!/usr/bin/env python3
"""Edge runtimes side by side: torch-cpu fp32 / bf16 / cpu-fast, onnxruntime, LiteRT fp32 / fp16.

Not a test: it prints figures. For each model and size it exports the ONNX and the LiteRT files
(`tt-depth export`'s functions: the LiteRT fp16 file comes from the same conversion), then times
one forward of each runtime on the golden 280x504 scene image (resized to the size when it differs)
with the same thread count (torch.set_num_threads, onnxruntime intra-op threads, the LiteRT
interpreter's num_threads; XNNPACK on CPU), one warm-up and --runs rounds of one call per runtime
(interleaved: a shared machine's load changes slow all alike; median), and
prints the depth PCC and max relative error against the torch-cpu fp32 engine on that image, the
file size, the conversion time and the static mobile-GPU check. Weights: rule-v1 + X1 synthetic
values (models/weight_rule.py; times do not depend on them, PCC needs non-degenerate outputs).

    .venv/bin/python -m benchmarks.bench_edge_export [--models da3-small] [--sizes 280x504,896x504]
        [--threads 2] [--runs 3] [--keep DIR [--reuse]] [--no-onnx]

Sizes: 280x504 (the tests' size) and 896x504, the native-aspect portrait size a phone ships.
Models: any exported DA3 model (not NESTED); the Large ones take minutes per conversion.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / 'test' / 'data' / 'da3_anyview' / 'scene0_280x504_view0.png'
KEY_LISTS = ROOT / 'test' / 'data' / 'da3_anyview'


def rule_state(name: str) -> dict:
    """rule-v1 + X1 checkpoint of `name` with HF key names (the golden key list, else the model)."""
    import torch

    from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
    from tt_depth_ros.models.da3.model import DA3Model
    from tt_depth_ros.models.weight_rule import rule_v1_tensor

    keys = KEY_LISTS / f'keys_{name}.txt'
    if keys.is_file():
        shapes = {}
        for line in keys.read_text().splitlines():
            key, shape, _ = line.split('\t')
            shapes[key] = tuple(int(v) for v in shape.strip('()').split(',') if v.strip())
    else:
        with torch.device('meta'):
            net = DA3Model({**CONFIGS, **ANYVIEW_CONFIGS}[name])
        shapes = {'model.' + k: tuple(v.shape) for k, v in net.state_dict().items()}
    return {k: rule_v1_tensor(k, s, x1=True) for k, s in shapes.items()}


def interleaved(fns: dict, runs: int) -> tuple[dict, dict]:
    """Median seconds per callable, timed round-robin; the last outputs.

    One call of each per round after one warm-up each: a machine whose load changes slows every
    runtime alike.
    """
    outs = {k: fn() for k, fn in fns.items()}
    times: dict = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            outs[k] = fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}, outs


def figures(depth: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    from tt_depth_ros.engines.parity import pcc

    rel = float(np.max(np.abs(depth.astype(np.float64) - ref)) / np.max(np.abs(ref)))
    return pcc(depth, ref), rel


def tflite_runner(path: Path, threads: int):
    """A callable running the file on one prepared input (the interpreter is built once)."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path), num_threads=threads).get_signature_runner()
    (name,) = runner.get_input_details()
    return lambda x: runner(**{name: x})['output_0'][0]


def bench(name: str, size: tuple[int, int], a, out_dir: Path) -> list[tuple]:
    import cv2
    import torch

    from tt_depth_ros.engines.export.litert_da3 import export_da3_litert
    from tt_depth_ros.engines.export.onnx_da3 import export_da3_onnx
    from tt_depth_ros.engines.onnxruntime.engine import OnnxRuntimeEngine
    from tt_depth_ros.engines.torch.da3 import build_torch_engine
    from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize

    h, w = size
    rgb = cv2.cvtColor(cv2.imread(str(IMAGE)), cv2.COLOR_BGR2RGB)
    if rgb.shape[:2] != (h, w):
        rgb = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA)
    state = {k: torch.from_numpy(v) for k, v in rule_state(name).items()}
    stem = out_dir / f'{name}_{h}x{w}'
    # distinct stems: a file's sidecar is <stem>.json (engines/export/sidecar.py)
    onnx, tfl, fp16 = (Path(f'{stem}_onnx.onnx'), Path(f'{stem}_litert.tflite'),
                       Path(f'{stem}_litert_fp16.tflite'))
    conv = {}
    if not a.no_onnx and not (a.reuse and onnx.is_file()):
        t0 = time.perf_counter()
        export_da3_onnx(name, size, onnx, state_dict=state)
        conv['onnx'] = f'{time.perf_counter() - t0:.0f}'
    if not (a.reuse and tfl.is_file() and fp16.is_file()):
        t0 = time.perf_counter()
        export_da3_litert(name, size, tfl, state_dict=state, also_fp16=fp16)
        conv['litert'] = f'{time.perf_counter() - t0:.0f}'
    torch_rows = {'torch-cpu fp32': 'float32', 'torch-cpu bf16': 'bfloat16',
                  'torch-cpu cpu-fast': 'cpu-fast'}
    engines, fns = [], {}
    for label, dtype in torch_rows.items():
        engines.append(build_torch_engine(name, state_dict=state, dtype=dtype))
        fns[label] = lambda eng=engines[-1]: eng.infer(rgb)['depth']
    if not a.no_onnx:
        engines.append(OnnxRuntimeEngine(onnx, model=name, threads=a.threads))
        fns['onnxruntime fp32'] = lambda eng=engines[-1]: eng.infer(rgb)['depth']
    x = np.ascontiguousarray(normalize(rgb)[None].transpose(0, 2, 3, 1), np.float32)
    files = {'LiteRT XNNPACK fp32': tfl, 'LiteRT XNNPACK fp16': fp16}
    for label, path in files.items():
        run = tflite_runner(path, a.threads)
        fns[label] = lambda run=run: run(x)
    times, outs = interleaved(fns, a.runs)
    for eng in engines:
        eng.close()
    ref = outs['torch-cpu fp32'].astype(np.float64)
    rows = []
    for label, t in times.items():
        mb, cs, gpu = '', '', ''
        if label in files:
            path = files[label]
            check = json.loads(path.with_suffix('.json').read_text())['gpu_delegate_check']
            gpu = ('pass' if check['passed']
                   else f'FAIL {check["rejected_ops"]} rank {check["max_rank"]}')
            mb = f'{path.stat().st_size / 1e6:.1f}'
            cs = conv.get('litert', 'reused') if 'fp32' in label else '(same)'
        elif label.startswith('onnx'):
            data = onnx.with_name(onnx.name + '.data')    # a > 2 GB model's tensors
            size = onnx.stat().st_size + (data.stat().st_size if data.is_file() else 0)
            mb, cs = f'{size / 1e6:.1f}', conv.get('onnx', 'reused')
        rows.append((label, t, *figures(outs[label], ref), mb, cs, gpu))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', default='da3-small')
    ap.add_argument('--sizes', default='280x504,896x504')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--keep', help='write the exported files here (default: a temp folder)')
    ap.add_argument('--no-onnx', action='store_true', help='skip the onnxruntime column')
    ap.add_argument('--reuse', action='store_true',
                    help='time the files already in --keep instead of exporting them again')
    a = ap.parse_args()
    import torch

    from tt_depth_ros.engines.export.size import parse_size

    torch.set_num_threads(a.threads)
    out_dir = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix='edge_export_'))
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f'torch {torch.__version__}, {a.threads} threads everywhere, {a.runs} rounds after 1 '
          'warm-up, one call of each runtime per round (median); PCC / max rel err of depth vs '
          'torch-cpu fp32 on the golden scene image; bf16 = backbone bf16, heads fp32; conv s: '
          'export + checks; files in', out_dir)
    head = (f'{"model":14s} {"size":8s} {"runtime":20s} {"median s":>9s} {"x fp32":>7s} '
            f'{"depth PCC":>10s} {"max rel":>9s} {"MB":>7s} {"conv s":>7s}  GPU check')
    print(head)
    for name in a.models.split(','):
        for text in a.sizes.split(','):
            size = parse_size(text)
            rows = bench(name, size, a, out_dir)
            base = rows[0][1]
            for label, t, p, rel, mb, conv, gpu in rows:
                print(f'{name:14s} {text:8s} {label:20s} {t:9.3f} {t / base:7.2f} {p:10.7f} '
                      f'{rel:9.2e} {mb:>7s} {conv:>7s}  {gpu}', flush=True)
            gc.collect()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
