#!/usr/bin/env python3
"""CPU forward time of the DA3 family (torch engine path, fused), fp32 vs bfloat16.

Not a test: it prints figures. Weights are rule-v1 + X1 synthetic values written in place into
each model (peak memory = one model; run times do not depend on the values, and the fp32-vs-bf16
comparison needs non-degenerate outputs, which the rule gives). Input: the golden 280x504 scene
image; `torch.set_num_threads(--threads)`; one warm-up, then --runs timed forwards (median, best).

For each model and dtype it reports the forward time and, for bfloat16, the depth PCC and the
median / 99th-percentile relative depth error against the fp32 run of the same weights (backbone
in bf16, heads fp32 - what `dtype='bfloat16'` does in the torch-cpu engine).

    .venv/bin/python -m benchmarks.bench_da3_family_cpu [--models da3metric-large,da3-small]
        [--dtypes float32,bfloat16] [--threads 2] [--runs 3]

Models: da3-small, da3-base, da3metric-large, da3mono-large, da3-large-1.1, da3-giant-1.1
(5.4 GB fp32), da3nested-giant-large-1.1 (6.8 GB fp32).
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / 'test' / 'data' / 'da3_anyview' / 'scene0_280x504_view0.png'
DEFAULT_MODELS = 'da3metric-large,da3-small'


def build(name: str):
    """Model with rule-v1 + X1 weights written parameter by parameter (no second copy)."""
    import torch

    from tt_depth_ros.engines.registry import model
    from tt_depth_ros.models.da3.checkpoint import AUX_LN_ALIASES
    from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
    from tt_depth_ros.models.da3.model import DA3Model
    from tt_depth_ros.models.da3.nested import NestedDA3
    from tt_depth_ros.models.weight_rule import rule_v1_tensor

    with torch.device('meta'):
        nested = model(name).kind == 'nested'
        net = NestedDA3() if nested else DA3Model({**CONFIGS, **ANYVIEW_CONFIGS}[name])
    net = net.to_empty(device='cpu').eval()
    with torch.no_grad():
        for key, p in net.state_dict(keep_vars=True).items():
            if any(a in key for a in AUX_LN_ALIASES):
                continue    # the shared aux LayerNorm: written once, under .0.2
            p.copy_(torch.from_numpy(rule_v1_tensor('model.' + key, tuple(p.shape), x1=True)))
    return net.set_fused(True)


def time_forward(net, x, runs: int) -> tuple[list[float], np.ndarray]:
    import torch

    with torch.inference_mode():
        out = net(x)                                   # warm-up
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            out = net(x)
            times.append(time.perf_counter() - t0)
    return times, out['depth'].float().numpy()


def compare(ref: np.ndarray, got: np.ndarray) -> tuple[float, float, float]:
    from tt_depth_ros.engines.parity import compare_maps
    a = compare_maps(ref, got)
    return a.pcc, a.median_rel, a.p99_rel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', default=DEFAULT_MODELS)
    ap.add_argument('--dtypes', default='float32,bfloat16')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--runs', type=int, default=3)
    a = ap.parse_args()
    import cv2
    import torch

    from tt_depth_ros.engines.torch.engine import parse_dtype, tune_cpu_malloc
    from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize

    torch.set_num_threads(a.threads)
    tune_cpu_malloc()
    rgb = cv2.cvtColor(cv2.imread(str(IMAGE)), cv2.COLOR_BGR2RGB)
    x = torch.from_numpy(normalize(rgb)[None])
    print(f'torch {torch.__version__}, {a.threads} threads, input 280x504, {a.runs} runs '
          f'after 1 warm-up; bf16 = backbone bf16, heads fp32')
    print(f'{"model":28s} {"dtype":9s} {"median s":>9s} {"best s":>8s} {"PCC":>9s} '
          f'{"med rel":>9s} {"p99 rel":>9s}')
    for name in a.models.split(','):
        t0 = time.perf_counter()
        net = build(name)
        built = time.perf_counter() - t0
        ref = None
        for dt in a.dtypes.split(','):
            net.cast_backbone(parse_dtype(dt, 'cpu'))
            times, depth = time_forward(net, x, a.runs)
            cmp = ('', '', '')
            if dt == 'float32':
                ref = depth
            elif ref is not None:
                pcc, med, p99 = compare(ref, depth)
                cmp = (f'{pcc:.6f}', f'{med:.2e}', f'{p99:.2e}')
            print(f'{name:28s} {dt:9s} {statistics.median(times):9.2f} {min(times):8.2f} '
                  f'{cmp[0]:>9s} {cmp[1]:>9s} {cmp[2]:>9s}   (built in {built:.0f} s)',
                  flush=True)
        del net
        gc.collect()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
