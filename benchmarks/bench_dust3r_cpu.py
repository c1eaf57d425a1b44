"""DUSt3R torch-cpu forward time for a 384x512 pair vs upstream (test/data/dust3r/README.md §7).

Not a test: prints figures. The upstream figure it compares with (fp32, 2 threads, idle) is the
golden fixtures' timing of that README section; it depends on the CPU, so compare ratios, on an
idle machine with the same thread count. The design target is <= 0.8x upstream's time
(docs/design.md §4). Weights do not affect speed, so the full model gets its default
initialisation unless --weights is given.

    .venv/bin/python -m benchmarks.bench_dust3r_cpu [--threads 2] [--repeats 3] [--weights FILE]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

UPSTREAM_S = 13.6   # test/data/dust3r/README.md §7: model(view1, view2), 384x512, idle, 2 threads


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--height', type=int, default=384)
    ap.add_argument('--width', type=int, default=512)
    ap.add_argument('--model', default='dust3r-vitl-512-dpt',
                    choices=('dust3r-vitl-512-dpt', 'dust3r-tiny'))
    ap.add_argument('--weights', help='checkpoint file (default: default-initialised weights)')
    args = ap.parse_args()

    import numpy as np
    import torch

    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.models.dust3r.config import CONFIGS
    from tt_depth_ros.models.dust3r.flops import pair_flops
    from tt_depth_ros.models.dust3r.model import Dust3r

    torch.set_num_threads(args.threads)
    cfg = CONFIGS[args.model]
    t0 = time.perf_counter()
    state = None if args.weights else Dust3r(cfg).state_dict()
    eng = build_engine(args.model, backend='torch-cpu', weights=args.weights, state_dict=state)
    del state
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    h, w = args.height, args.width
    views = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(2)]
    eng.infer(*views)  # warm-up (allocator, oneDNN primitives)
    times = []
    for _ in range(args.repeats):
        eng.infer(*views)
        times.append(eng.last_timings['forward'])
    eng.close()
    flops = pair_flops(cfg, h, w)
    best, med = min(times), statistics.median(times)
    print(f'DUSt3R {args.model} torch-cpu fp32, {h}x{w} pair, {args.threads} threads, '
          f'load avg {os.getloadavg()[0]:.2f}')
    print(f'  build {build_s:.1f} s; forward best {best:.2f} s, median {med:.2f} s '
          f'over {args.repeats} runs')
    print(f'  FLOPs (analytic): encoder {flops["encoder"] / 1e12:.3f} + decoder '
          f'{flops["decoder"] / 1e12:.3f} + heads {flops["heads"] / 1e12:.3f} = '
          f'{flops["total"] / 1e12:.3f} TFLOP -> {flops["total"] / best / 1e9:.0f} GFLOP/s')
    if args.model == 'dust3r-vitl-512-dpt' and (h, w) == (384, 512):
        print(f'  upstream (test/data/dust3r/README.md §7, idle, same machine class): '
              f'{UPSTREAM_S:.1f} s -> ours/upstream = {best / UPSTREAM_S:.2f} (target <= 0.80)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
