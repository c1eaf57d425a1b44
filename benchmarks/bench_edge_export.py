#!/usr/bin/env python3
"""Edge-export runtimes side by side: torch-cpu fp32 / bf16, onnxruntime fp32, LiteRT fp32 / fp16.

Not a test: it prints figures. For each model and size it exports the ONNX and the LiteRT files
(`tt-depth export`'s functions: the LiteRT fp16 file comes from the same conversion), then times
one forward of each runtime on the golden 280x504 scene image (resized to the size when it differs)
with the same thread count (torch.set_num_threads, onnxruntime intra-op threads, the LiteRT
interpreter's num_threads; XNNPACK on CPU), one warm-up and --runs timed calls (median), and
prints the depth PCC and max relative error against the torch-cpu fp32 engine on that image, the
file size, the conversion time and the static mobile-GPU check. Weights: rule-v1 + X1 synthetic
values (models/weight_rule.py; times do not depend on them, PCC needs non-degenerate outputs).

    .venv/bin/python benchmarks/bench_edge_export.py [--models da3-small] [--sizes 280x504,896x504]
        [--threads 2] [--runs 3] [--keep DIR] [--no-onnx]

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


def timed(fn, runs: int) -> tuple[float, object]:
    out = fn()                                    # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def figures(depth: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    from tt_depth_ros.engines.export.graph import pcc

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
    from tt_depth_ros.geometry.da3_preprocess import normalize

    h, w = size
    rgb = cv2.cvtColor(cv2.imread(str(IMAGE)), cv2.COLOR_BGR2RGB)
    if rgb.shape[:2] != (h, w):
        rgb = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA)
    state = {k: torch.from_numpy(v) for k, v in rule_state(name).items()}
    rows = []
    eng = build_torch_engine(name, state_dict=state)
    t, out = timed(lambda: eng.infer(rgb), a.runs)
    ref = out['depth'].astype(np.float64)
    eng.close()
    rows.append(('torch-cpu fp32', t, 1.0, 0.0, '', '', ''))
    eng = build_torch_engine(name, state_dict=state, dtype='bfloat16')
    t, out = timed(lambda: eng.infer(rgb), a.runs)
    eng.close()
    rows.append(('torch-cpu bf16', t, *figures(out['depth'], ref), '', '', ''))
    stem = out_dir / f'{name}_{h}x{w}'
    if not a.no_onnx:
        t0 = time.perf_counter()
        export_da3_onnx(name, size, stem.with_suffix('.onnx'), state_dict=state)
        conv = time.perf_counter() - t0
        eng = OnnxRuntimeEngine(stem.with_suffix('.onnx'), model=name, threads=a.threads)
        t, out = timed(lambda: eng.infer(rgb), a.runs)
        eng.close()
        mb = stem.with_suffix('.onnx').stat().st_size / 1e6
        rows.append(('onnxruntime fp32', t, *figures(out['depth'], ref), f'{mb:.1f}',
                     f'{conv:.0f}', ''))
    fp16 = Path(f'{stem}_fp16.tflite')
    t0 = time.perf_counter()
    side = export_da3_litert(name, size, stem.with_suffix('.tflite'), state_dict=state,
                             also_fp16=fp16)
    conv = time.perf_counter() - t0
    x = np.ascontiguousarray(normalize(rgb)[None].transpose(0, 2, 3, 1), np.float32)
    for label, path in (('LiteRT XNNPACK fp32', stem.with_suffix('.tflite')),
                        ('LiteRT XNNPACK fp16', fp16)):
        run = tflite_runner(path, a.threads)
        t, depth = timed(lambda run=run: run(x), a.runs)
        check = json.loads(path.with_suffix('.json').read_text())['gpu_delegate_check']
        gpu = ('pass' if check['passed']
               else f'FAIL {check["rejected_ops"]} rank {check["max_rank"]}')
        rows.append((label, t, *figures(depth, ref), f'{path.stat().st_size / 1e6:.1f}',
                     f'{conv:.0f}' if 'fp32' in label else '(same)', gpu))
    print(f'  LiteRT fp32 parity at export (seeded input): {side["parity"]["outputs"]["depth"]}',
          flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', default='da3-small')
    ap.add_argument('--sizes', default='280x504,896x504')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--keep', help='write the exported files here (default: a temp folder)')
    ap.add_argument('--no-onnx', action='store_true', help='skip the onnxruntime column')
    a = ap.parse_args()
    import torch

    from tt_depth_ros.engines.export.size import parse_size

    torch.set_num_threads(a.threads)
    out_dir = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix='edge_export_'))
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f'torch {torch.__version__}, {a.threads} threads everywhere, {a.runs} runs after 1 '
          'warm-up (median); PCC / max rel err of depth vs torch-cpu fp32 on the golden scene '
          'image; bf16 = backbone bf16, heads fp32; files in', out_dir)
    head = (f'{"model":14s} {"size":8s} {"runtime":20s} {"median s":>9s} {"x fp32":>7s} '
            f'{"depth PCC":>10s} {"max rel":>9s} {"MB":>7s} {"conv s":>7s}  GPU check')
    print(head)
    for name in a.models.split(','):
        for text in a.sizes.split(','):
            size = parse_size(text)
            rows = bench(name, size, a, out_dir)
            base = rows[0][1]
            for label, t, p, rel, mb, conv, gpu in rows:
                print(f'{name:14s} {text:8s} {label:20s} {t:9.3f} {t / base:7.2f} {p:10.6f} '
                      f'{rel:9.2e} {mb:>7s} {conv:>7s}  {gpu}', flush=True)
            gc.collect()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
