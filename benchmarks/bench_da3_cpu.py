#!/usr/bin/env python3
"""CPU fp32 forward time of our DA3METRIC-LARGE torch engine vs upstream `depth-anything-3==0.1.1`.

Not a test: it prints figures. Both sides load the same rule-v1 full-size weights (a real
`model.safetensors` key layout), see the same 280x504 image, use the same thread count, and are
timed in one run, alternating round by round so machine load hits both alike. Upstream is
installed by this script into its own virtualenv (default `.venv-bench-da3`, ignored by git) with
the local torch wheel and only the packages its network code imports (`--no-deps` for the package
itself: its full dependency list pulls in GUI/3-D tools the network does not use).

What is timed:
* ours: `engine.infer(uint8 image)` - upload, ImageNet normalisation, forward, readback.
* upstream "net": backbone + DPT head on the normalised tensor (what ours computes; its random
  sky post-process excluded) - the ratio that counts; also its full `DepthAnything3Net.forward`.
Both report wall time (median and best of N) and process CPU time.

    .venv/bin/python -m benchmarks.bench_da3_cpu [--threads 2] [--runs 5] [--no-upstream]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / 'test' / 'data' / 'da3' / 'large_280x504.png'
GOLDEN = ROOT / 'test' / 'data' / 'da3' / 'large_280x504.npz'
UPSTREAM_PKG = 'depth-anything-3==0.1.1'
UPSTREAM_DEPS = ['numpy', 'einops', 'omegaconf', 'addict', 'safetensors', 'huggingface_hub',
                 'pillow', 'opencv-python-headless', 'imageio']
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


# ----------------------------------------------------------------------------------------------
# workers (one process per side; a line protocol on stdin/stdout)
# ----------------------------------------------------------------------------------------------
def _load_image():
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(IMAGE).convert('RGB'), dtype=np.uint8).copy()


def _ours(weights: str):
    from tt_depth_ros.engines.factory import build_engine

    engine = build_engine('da3metric-large', weights=weights, backend='torch-cpu')
    img = _load_image()
    engine.prepare(img.shape[:2])
    state = {}

    def run():
        state['depth'] = engine.infer(img)['depth']

    return {'run': run}, state


def _upstream(weights: str):
    import depth_anything_3
    import numpy as np
    import torch
    from depth_anything_3.cfg import create_object, load_config
    from safetensors.torch import load_file

    cfg = Path(list(depth_anything_3.__path__)[0]) / 'configs' / 'da3metric-large.yaml'
    net = create_object(load_config(str(cfg)))
    sd = {k[len('model.'):]: v for k, v in load_file(weights).items()}
    net.load_state_dict(sd, strict=True)
    net.eval()
    img = _load_image().astype(np.float32) / np.float32(255.0)
    x = (img - np.asarray(MEAN, np.float32)) / np.asarray(STD, np.float32)
    x = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None, None]  # (B, S, 3, H, W)
    h, w = x.shape[-2:]
    state = {}

    def run_net():
        with torch.inference_mode():
            feats, _ = net.backbone(x, cam_token=None, export_feat_layers=[])
            with torch.autocast(device_type='cpu', enabled=False):
                out = net._process_depth_head(feats, h, w)
        state['depth'] = out['depth'][0, 0].numpy()

    def run_full():
        with torch.inference_mode():
            net(x)

    return {'run': run_net, 'full': run_full}, state


def worker(side: str, weights: str, threads: int) -> None:
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    fns, state = (_ours if side == 'ours' else _upstream)(weights)
    print(json.dumps({'ready': side, 'threads': torch.get_num_threads(),
                      'torch': torch.__version__}), flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(' ')
        if cmd == 'quit':
            break
        if cmd == 'save':
            np.save(arg, state['depth'])
            print(json.dumps({'saved': arg}), flush=True)
            continue
        w0, c0 = time.perf_counter(), time.process_time()
        fns[cmd]()
        print(json.dumps({'wall': time.perf_counter() - w0, 'cpu': time.process_time() - c0}),
              flush=True)


class Worker:
    def __init__(self, python: str, side: str, weights: Path, threads: int) -> None:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                   PYTHONPATH=str(ROOT) if side == 'ours' else '')
        self.side = side
        self.proc = subprocess.Popen([python, '-m', 'benchmarks.bench_da3_cpu', '--worker', side,
                                      '--weights', str(weights), '--threads', str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=str(ROOT))
        self.hello = self._read()

    def _read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f'{self.side} worker exited (code {self.proc.wait()})')
            if line.startswith('{'):
                return json.loads(line)

    def ask(self, cmd: str) -> dict:
        self.proc.stdin.write(cmd + '\n')
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('quit\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


# ----------------------------------------------------------------------------------------------
# setup
# ----------------------------------------------------------------------------------------------
def ensure_weights(path: Path) -> Path:
    if path.is_file():
        return path
    import torch
    from safetensors.numpy import save_file

    from tt_depth_ros.models.da3.config import LARGE
    from tt_depth_ros.models.da3.model import DA3Model
    from tt_depth_ros.models.weight_rule import rule_v1_tensor

    print(f'building rule-v1 DA3METRIC-LARGE weights -> {path} (1.3 GB, once)')
    with torch.device('meta'):
        shapes = {'model.' + k: tuple(v.shape) for k, v in DA3Model(LARGE).state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix('.tmp')
    save_file({k: rule_v1_tensor(k, s) for k, s in shapes.items()}, str(tmp))
    tmp.rename(path)
    return path


def ensure_upstream(venv: Path) -> tuple[str | None, str]:
    """Python of a venv with upstream installed, or (None, why not)."""
    py = venv / 'bin' / 'python'
    probe = [str(py), '-c', 'import depth_anything_3.model.da3, torch, PIL, safetensors']
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(py), 'existing venv'
    import torch

    torch_pin = 'torch==' + torch.__version__.split('+')[0]
    print(f'installing upstream {UPSTREAM_PKG} into {venv} ({torch_pin}, minimal deps) ...')
    steps = [[sys.executable, '-m', 'venv', '--clear', str(venv)],
             [str(py), '-m', 'pip', 'install', '-q', torch_pin, *UPSTREAM_DEPS],
             [str(py), '-m', 'pip', 'install', '-q', '--no-deps', UPSTREAM_PKG]]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return None, f'`{" ".join(cmd[-3:])}` failed: {(r.stderr or r.stdout).strip()[-600:]}'
    r = subprocess.run(probe, capture_output=True, text=True)
    if r.returncode != 0:
        return None, f'upstream installed but does not import: {r.stderr.strip()[-600:]}'
    return str(py), 'installed now'


def _stats(xs: list[float]) -> str:
    return f'median {statistics.median(xs):6.3f} s  best {min(xs):6.3f} s'


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--warmup', type=int, default=1)
    ap.add_argument('--venv', type=Path, default=ROOT / '.venv-bench-da3')
    ap.add_argument('--weights', type=Path, default=Path.home() / '.cache' / 'tt_depth_ros'
                    / 'da3metric_large_rule_v1.safetensors')
    ap.add_argument('--no-upstream', action='store_true')
    ap.add_argument('--worker', choices=('ours', 'upstream'), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, str(args.weights), args.threads)
        return 0

    weights = ensure_weights(args.weights)
    up_py, why = (None, 'skipped (--no-upstream)') if args.no_upstream else \
        ensure_upstream(args.venv)
    if up_py is None:
        print(f'UPSTREAM NOT AVAILABLE: {why}\n-> timing ours only')
    print(f'input 280x504 (large_280x504.png), fp32, {args.threads} threads, '
          f'{args.runs} runs after {args.warmup} warm-up; {os.cpu_count()} CPUs, '
          f'load average {os.getloadavg()[0]:.2f}')
    workers = {'ours': Worker(sys.executable, 'ours', weights, args.threads)}
    try:
        if up_py:
            try:
                workers['upstream'] = Worker(up_py, 'upstream', weights, args.threads)
            except RuntimeError as e:
                print(f'UPSTREAM NOT AVAILABLE: its worker failed ({e}); timing ours only')
                up_py = None
        cmds = [('ours', 'run')] + ([('upstream', 'run'), ('upstream', 'full')] if up_py else [])
        for _ in range(args.warmup):
            for side, cmd in cmds:
                workers[side].ask(cmd)
        res = {c: {'wall': [], 'cpu': []} for c in cmds}
        for r in range(args.runs):
            for c in (cmds if r % 2 == 0 else cmds[::-1]):
                t = workers[c[0]].ask(c[1])
                res[c]['wall'].append(t['wall'])
                res[c]['cpu'].append(t['cpu'])
        names = {('ours', 'run'): 'ours engine.infer        ',
                 ('upstream', 'run'): 'upstream backbone+head   ',
                 ('upstream', 'full'): 'upstream full net forward'}
        for c in cmds:
            print(f'{names[c]}: wall {_stats(res[c]["wall"])} | cpu {_stats(res[c]["cpu"])}')
        import numpy as np

        out = Path(os.environ.get('TMPDIR', '/tmp'))
        ours_d = workers['ours'].ask(f'save {out / "bench_da3_ours.npy"}') and \
            np.load(out / 'bench_da3_ours.npy')
        with np.load(GOLDEN) as g:
            ref = g['depth'][0]
        tol = dict(rtol=1e-4, atol=1e-5 * float(np.abs(ref).max()))
        print(f'ours vs golden large_280x504: max rel {np.max(np.abs(ours_d - ref) / ref):.2e} '
              f'-> {"within" if np.allclose(ours_d, ref, **tol) else "OUTSIDE"} tolerance')
        if up_py:
            workers['upstream'].ask(f'save {out / "bench_da3_upstream.npy"}')
            up_d = np.load(out / 'bench_da3_upstream.npy')
            ok = np.allclose(ours_d, up_d, rtol=1e-4, atol=1e-5 * float(np.abs(up_d).max()))
            print(f'ours vs upstream (same run): max rel {np.max(np.abs(ours_d - up_d) / up_d):.2e}'
                  f' -> {"within" if ok else "OUTSIDE"} tolerance')
            for key in ('wall', 'cpu'):
                for name, agg in (('medians', statistics.median), ('best', min)):
                    o = agg(res[('ours', 'run')][key])
                    u = agg(res[('upstream', 'run')][key])
                    uf = agg(res[('upstream', 'full')][key])
                    print(f'ratio ours/upstream ({key}, {name}): {o / u:.3f} vs backbone+head, '
                          f'{o / uf:.3f} vs full forward (target <= 0.8)')
            print(f'load average now {os.getloadavg()[0]:.2f} (other jobs on the machine skew '
                  'single runs; compare best and CPU-time figures)')
    finally:
        for w in workers.values():
            w.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
