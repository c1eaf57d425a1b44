"""Accuracy of every ttnn precision preset on the CPU stand-in vs the fp32 golden outputs (printed).

    .venv/bin/python -m benchmarks.ttnn_precision_table --model da3-tiny [--model da3-large ...]
        [--preset fast --preset bfloat16 ...] [--variant 'fc1=HiFi2' --variant 'sdpa=LoFi/bf16']
        [--estimate-json ESTIMATE.json ...]

The stand-in (devtools/ttnn/standin) rounds like the device: bf16 / bfloat8_b storage (bit
for bit with the real library's host conversion: devtools/ttnn/conformance), the FPU's operand
truncation per math fidelity and a bf16 destination without fp32 accumulation (ops_math.py
documents the model; not bit-exact). Per preset it prints DA3 depth PCC / max relative error or
DUSt3R pts3d PCC (both views) against the golden fp32 outputs, with the issue's gates (DA3METRIC-
LARGE depth PCC >= 0.9998, DUSt3R pts3d >= 0.995; tiny models: the same numbers, for mechanics).
`--variant` runs the 'fast' preset with some settings changed (variant(): matmul roles as
role=FIDELITY[/bf16], /bf16 turning fp32 accumulation off; activation dtypes; weight groups): the
measurement of which matmuls need HiFi2 or fp32 accumulation and where float32 is needed.
`--estimate-json` (benchmarks/ttnn_estimate.py --json, one per preset run with --dtype) adds
the estimated p150 time of that preset (per-class estimate, ms) to its row.
Models: da3-tiny (280x504), da3-large (280x504, ~1-2 min a preset on 2 cores), dust3r-tiny
(80x112), dust3r-large (384x512, several minutes a preset).
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

from tt_depth_ros.engines.parity import pcc

FIXTURES = Path(__file__).resolve().parents[1] / 'test' / 'data'   # golden inputs and outputs

GATES = {'da3': 0.9999, 'dust3r': 0.995}       # what the default presets keep
DITHER_REL = 2.0 ** -20                          # the noise measurement's fp32 perturbation
# The anchor gate's noise bound per model: --noise-seeds' measurement, rounded up
# (docs/ttnn-precision.md "Anchor gate").
NOISE = {'da3-tiny': 2e-4, 'da3-large': 2e-4, 'dust3r-tiny': 1e-3, 'dust3r-large': 1e-3}
ENGINE = {'da3-tiny': 'da3metric-tiny', 'da3-large': 'da3metric-large',
          'dust3r-tiny': 'dust3r-tiny', 'dust3r-large': 'dust3r-vitl-512-dpt'}


def measure(model: str, sd, dtype) -> dict:
    """One forward of `model` under precision `dtype` on the golden input -> PCC figures."""
    import cv2
    from PIL import Image

    from tt_depth_ros.engines.ttnn import build_ttnn_engine
    t0 = time.perf_counter()
    with build_ttnn_engine(ENGINE[model], state_dict=sd, dtype=dtype) as eng:
        if model.startswith('da3'):
            case = 'large_280x504' if model == 'da3-large' else 'tiny_280x504'
            g = np.load(FIXTURES / 'da3' / f'{case}.npz')
            bgr = cv2.imread(str(FIXTURES / 'da3' / f'{case}.png'), cv2.IMREAD_COLOR)
            out = eng.infer(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
            ref = g['depth'][0]
            rel = np.abs(out['depth'] - ref) / ref
            res = {'pcc': pcc(ref, out['depth']), 'max_rel': float(rel.max())}
        else:
            name, hw = ('full_384x512_grid4', '384x512') if model == 'dust3r-large' else \
                ('tiny_80x112', '80x112')
            with np.load(FIXTURES / 'dust3r' / f'{name}.npz') as z:
                g = {k: z[k] for k in z.files}
            out = eng.infer(*(np.asarray(Image.open(FIXTURES / 'dust3r' / f'pairA_{hw}_view{i}.png')
                                         .convert('RGB')) for i in (1, 2)))
            ps = []
            for v, key in ((1, 'pts3d'), (2, 'pts3d_in_other_view')):
                pts = out[f'pts3d_{v}']
                if 'rows' in g:
                    pts = pts[np.ix_(g['rows'], g['cols'])]
                ps.append(pcc(g[key][0], pts))
            res = {'pcc': min(ps), 'pcc_views': ps}
    res['wall_s'] = round(time.perf_counter() - t0, 1)
    return res


def variant(spec: str, family: str = 'da3'):
    """'fc1=HiFi2,sdpa=LoFi/bf16,residual=float32,fp32w=norm+head' -> a changed 'fast' Precision.

    role=FIDELITY[/bf16][+debias] sets a matmul role (/bf16: no fp32 accumulation, +debias: its
    weights debiased), rolew=DTYPE its
    weights (fc1w=bfloat8_b); residual=, head=,
    inner= set activation dtypes, weights= the bulk weight dtype, fidelity= the preset's own
    (head convs and matmuls, norms, anything without a role), resize_hi_lo=off one bf16 matrix
    per head resize side; fp32w= / bf16w= set the
    float32 / bf16 weight groups; levers=A+B switches on precision.LEVERS.
    """
    from tt_depth_ros.engines.ttnn.precision import RoleSetting, parse_precision
    base = parse_precision('fast', family)
    roles = {r.role: r for r in base.roles}
    fields = {}
    for item in spec.split(','):
        key, _, setting = (v.strip() for v in item.partition('='))
        if key in ('residual', 'head', 'inner', 'weights', 'fidelity'):
            fields[key] = setting
        elif key == 'resize_hi_lo':
            fields[key] = setting not in ('0', 'off', 'false', 'False')
        elif key == 'levers':                                   # levers=mask_free_sdpa+...
            fields.update({lever: True for lever in setting.split('+') if lever})
        elif key in ('fp32w', 'bf16w'):
            fields['fp32_weights' if key == 'fp32w' else 'bf16_weights'] = tuple(
                g for g in setting.split('+') if g)
        elif key.endswith('w') and key[:-1] in roles:           # e.g. fc1w=bfloat8_b
            roles[key[:-1]] = dataclasses.replace(roles[key[:-1]], weights=setting)
        else:
            setting, _, debias = setting.partition('+')
            fid, _, acc = setting.partition('/')
            old = roles.get(key, RoleSetting(key, fid))
            roles[key] = dataclasses.replace(old, fidelity=fid, fp32_acc=acc != 'bf16',
                                             debias=debias == 'debias')
    return dataclasses.replace(base, name=f'fast[{spec}]', **fields, roles=tuple(roles.values()))


def estimates(paths) -> dict:
    """{(engine model, preset): {size: estimated ms}} from ttnn_estimate.py --json files."""
    out: dict = {}
    for p in paths:
        data = json.loads(Path(p).read_text())
        for r in data['runs']:
            key = (r.get('engine_model'), r.get('precision'))
            out[key] = {s: e['total']['estimate_ms'] for s, e in r['sizes'].items()}
    return out


def noise_bound(model: str, sd, dtype, seeds: int, base: float) -> float:
    """Largest |PCC change| of `dtype` over `seeds` seeded dithers (module doc)."""
    from devtools.ttnn.standin import numerics
    dev = 0.0
    for seed in range(1, seeds + 1):
        with numerics.dither(seed, DITHER_REL):
            dev = max(dev, abs(measure(model, sd, dtype)['pcc'] - base))
        gc.collect()
    return dev


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', action='append', choices=sorted(ENGINE))
    ap.add_argument('--preset', action='append', help='default: every preset of the family')
    ap.add_argument('--variant', action='append', default=[])
    ap.add_argument('--noise-seeds', type=int, default=0,
                    help="measure the anchor gate's noise bound with N dithered runs")
    ap.add_argument('--preset-noise', action='store_true',
                    help='with --noise-seeds: also each preset\'s own PCC change over the N '
                         'dithers (how far from a gate its margin must be to decide)')
    ap.add_argument('--estimate-json', action='append', default=[])
    a = ap.parse_args(argv)
    from devtools.checkpoints import torch_state_dict
    from devtools.ttnn import standin
    from tt_depth_ros.engines.ttnn.precision import ANCHORS, DA3_ONLY, DUST3R_ONLY, PRESETS
    sys.modules['ttnn'] = standin
    import os
    os.environ['TT_DEPTH_ROS_TTNN_CACHE'] = 'off'
    est = estimates(a.estimate_json)
    print('ttnn precision presets on the CPU stand-in vs fp32 golden (stand-in numerics: '
          'bf16/bfloat8_b storage, FPU fidelity + Dst model; NOT a device measurement)')
    for model in a.model or ['da3-tiny', 'dust3r-tiny']:
        fam = 'da3' if model.startswith('da3') else 'dust3r'
        presets = a.preset or [p for p in PRESETS if p not in (
            DUST3R_ONLY if fam == 'da3' else DA3_ONLY)]
        sd = torch_state_dict(model)   # the rule-v1 test config of that name
        anchor = ANCHORS[fam]
        ref = measure(model, sd, anchor)
        noise = NOISE[model]
        if a.noise_seeds:
            noise = noise_bound(model, sd, anchor, a.noise_seeds, ref['pcc'])
            print(f'\n{model}: anchor PCC change over {a.noise_seeds} dithers: {noise:.2e}')
        bar = ref['pcc'] - noise
        metric = 'depth PCC / max rel' if fam == 'da3' else 'pts3d PCC (min of views)'
        print(f'\n{model} ({ENGINE[model]}): {metric}; default gate >= {GATES[fam]}; anchor '
              f'gate >= {ref["pcc"]:.6f} ({anchor.name}) - {noise:.0e} = {bar:.6f}')
        print(f'| {"preset":<34} | {"PCC":>9} | {"max rel":>7} | default | anchor | est. ms '
              '| wall s |')
        print(f'|{"-" * 36}|{"-" * 11}|{"-" * 9}|---------|--------|---------|--------|')
        runs = [(f'anchor: {anchor.name}', anchor, ref)] + [(p, p, None) for p in presets] + [
            (f'fast[{v}]', variant(v, fam), None) for v in a.variant]
        for name, dtype, r in runs:
            r = r or measure(model, sd, dtype)
            if a.preset_noise and a.noise_seeds and r is not ref:
                r['noise'] = noise_bound(model, sd, dtype, a.noise_seeds, r['pcc'])
            ms = est.get((ENGINE[model], name), {})
            ms_txt = ' / '.join(f'{v:.1f}' for v in ms.values()) or '-'
            rel = f'{r["max_rel"]:.4f}' if 'max_rel' in r else '-'
            ok = 'yes' if r['pcc'] >= GATES[fam] else 'NO'
            ok_a = 'yes' if r['pcc'] >= bar else 'NO'
            dith = f' {r["noise"]:.1e} dithered |' if 'noise' in r else ''
            print(f'| {name:<34} | {r["pcc"]:.6f} | {rel:>7} | {ok:>7} | {ok_a:>6} | '
                  f'{ms_txt:>7} | {r["wall_s"]:>6} |{dith}', flush=True)
            gc.collect()
        del sd
        gc.collect()
    return 0


if __name__ == '__main__':
    sys.exit(main())
