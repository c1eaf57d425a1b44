"""p150 cost ESTIMATE of the ttnn engine without a card (a roofline, never a measurement).

    .venv/bin/python -m benchmarks.ttnn_estimate [--model da3-large --size 518x518 ...]
        [--camera 480x640 ...] [--grid 11x10|13x10] [--dtype PRESET] [--efficiency F]
        [--json OUT] [--from-json EARLIER_OUT]

Runs one forward per size of the engine (tt_depth_ros.engines.ttnn, rule-v1 weights) through the
REAL ttnn 0.81.1 library on a mock p150 (the dry run: devtools/ttnn/dryrun/driver.py, bridge.py,
environment.py), reads every device op the traced forward ran from the library's graph capture
(devtools/ttnn/dryrun/op_records.py) and prices it with devtools/ttnn/cost_model.py: per op group
(attention, MLP, norm, head, data movement, embed/other) the ideal roofline time, the time after
the efficiency factor calibrated on tt-metal's Blackhole ViT-base demo, and what bounds it.
Default: DA3METRIC-LARGE at 518x518 and 280x504, the DUSt3R pair at 512x384 (W x H; HxW
384x512).

What it leaves out: op-to-op dispatch gaps, NoC contention, kernel quality, SFPU math, host and
PCIe time. The estimate is for today's design as the library runs it on the mock device's grid
(11x10 = 110 cores: a p150a with Tensix dispatch; the library rejects ETH dispatch).
`--from-json` prices the op records of an earlier --json again (seconds, no library);
`--dtype fast` estimates the speed design (precision 'fast'); `--compare BEFORE AFTER` prints
two --json runs side by side per group with the saving and the gap to the p150 targets.
`--camera HxW` (DA3) adds a trace of a camera frame resized on the device (network size at
process_res 504); its 'camera resize' group is the device's price of the host stage it replaces.
Exit status 1 when the dry run itself reported a problem (its figures are then incomplete).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from devtools.ttnn import cost_model as cost
from devtools.ttnn.dryrun import driver  # the engine on the real library, mock p150

# Sizes are HxW. The DUSt3R pair "512x384" is DUSt3R's width x height: HxW 384x512.
DEFAULT_RUNS = [('da3-large', ['518x518', '280x504']), ('dust3r-large', ['384x512'])]
TITLES = {'da3-tiny': 'DA3 tiny', 'da3-large': 'DA3METRIC-LARGE', 'dust3r-tiny': 'DUSt3R tiny',
          'dust3r-large': 'DUSt3R ViT-L/512 DPT pair'}


def estimate_model(model: str, sizes: list[str], grid: str, efficiency=None,
                   dtype: str | None = None, cameras: tuple[str, ...] = ()) -> dict:
    """One dry run of `model` (one trace per size, then per camera) -> {size: estimate} + facts.

    A camera trace is keyed 'camera HxW'.
    """
    t0 = time.perf_counter()
    rep = driver.run(model, sizes, grid, max_traced_shapes=1, op_records=True, dtype=dtype,
                     cameras=cameras)
    out = {'model': model, 'engine_model': rep.get('engine_model'),
           'precision': (rep.get('engine_info') or {}).get('precision'), 'status': rep['status'],
           'problems': rep['problems'], 'dispatch': rep.get('dispatch'), 'grid': rep.get('grid'),
           'peak_bytes': rep.get('peak_bytes'),
           'wall_s': round(time.perf_counter() - t0, 1), 'sizes': {}}
    if rep.get('grid') is None:
        return out
    cores = rep['grid'][0] * rep['grid'][1]
    for tr in rep['traces']:
        size = tr['phase'].removeprefix('prepare ').strip()
        if size in out['sizes'] or not tr.get('ops'):
            continue
        est = cost.estimate(tr['ops'], cores, efficiency)
        est['programs'] = tr['programs']
        est['records'] = tr['ops']
        out['sizes'][size] = est
    return out


def reprice(path: str, efficiency=None) -> list[dict]:
    """The runs of an earlier --json, every size's records priced again by today's cost model."""
    runs = json.loads(Path(path).read_text())['runs']
    for r in runs:
        for size, old in r['sizes'].items():
            est = cost.estimate(old['records'], old['grid_cores'], efficiency)
            est['programs'], est['records'] = old['programs'], old['records']
            r['sizes'][size] = est
    return runs


# The p150 targets (docs/design.md §4), per engine model and size (HxW).
TARGETS_MS = {('da3metric-large', '518x518'): 14.93, ('dust3r-vitl-512-dpt', '384x512'): 27.7}


def compare(before_path: str, after_path: str) -> str:
    """Per-group side-by-side of two --json runs (e.g. today's design and --dtype fast)."""
    runs = [{(r['engine_model'], s): (r.get('precision'), e) for r in
             json.loads(Path(p).read_text())['runs'] for s, e in r['sizes'].items()}
            for p in (before_path, after_path)]
    lines = []
    for key in [k for k in runs[0] if k in runs[1]]:
        (p0, e0), (p1, e1) = runs[0][key], runs[1][key]
        lines += ['', f'{key[0]} {key[1]}: [{p0}] -> [{p1}]  (ms ideal / calibrated; ESTIMATE)',
                  f'{"group":<14}{"before":>16}{"after":>16}{"saved calib":>13}  after bound']
        for g in cost.GROUPS:
            a, b = e0['groups'][g], e1['groups'][g]
            if a['ops'] or b['ops']:
                lines.append(f'{g:<14}{a["ideal_ms"]:>7.2f} /{a["calibrated_ms"]:>7.1f}'
                             f'{b["ideal_ms"]:>7.2f} /{b["calibrated_ms"]:>7.1f}'
                             f'{a["calibrated_ms"] - b["calibrated_ms"]:>13.1f}  {b["bound"]}')
        t0, t1 = e0['total'], e1['total']
        lines.append(f'{"total":<14}{t0["ideal_ms"]:>7.2f} /{t0["calibrated_ms"]:>7.1f}'
                     f'{t1["ideal_ms"]:>7.2f} /{t1["calibrated_ms"]:>7.1f}'
                     f'{t0["calibrated_ms"] - t1["calibrated_ms"]:>13.1f}')
        lines.append(f'device ops {e0["ops"]} -> {e1["ops"]}; DRAM traffic '
                     f'{t0["dram_mb"] / 1e3:.1f} -> {t1["dram_mb"] / 1e3:.1f} GB')
        if key in TARGETS_MS:
            tgt = TARGETS_MS[key]
            lines.append(f'target {tgt} ms: after is {t1["calibrated_ms"] / tgt:.1f}x the target '
                         f'calibrated, {t1["ideal_ms"] / tgt:.2f}x ideal')
            f = e1.get('compute_floor')
            if f:
                lines.append(f'after\'s compute floor (its MACs at their fidelities, perfectly '
                             f'spread, nothing else): {f["calibrated_ms"]:.1f} ms calibrated = '
                             f'{f["calibrated_ms"] / tgt:.2f}x the target')
    return '\n'.join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', action='append', choices=sorted(driver.MODELS),
                    help='repeatable; default: da3-large and dust3r-large')
    ap.add_argument('--size', action='append', default=[],
                    help='HxW (repeatable; applies to every --model)')
    ap.add_argument('--camera', action='append', default=[],
                    help='HxW camera frame resized on the device (DA3; repeatable)')
    ap.add_argument('--grid', choices=sorted(driver.HARVEST), default='11x10')
    ap.add_argument('--efficiency', type=float, help='override the calibrated factor')
    ap.add_argument('--dtype', help="precision preset of every model (e.g. 'fast'; default: "
                    'each family\'s default)')
    ap.add_argument('--json', help='write the estimates (per op and per group) here')
    ap.add_argument('--from-json', help='price the op records of an earlier --json again')
    ap.add_argument('--compare', nargs=2, metavar=('BEFORE_JSON', 'AFTER_JSON'),
                    help='print two earlier --json runs side by side per group, then exit')
    a = ap.parse_args(argv)
    if a.compare:
        print(compare(*a.compare))
        return 0
    runs = [(m, a.size or driver.MODELS[m][2][:1]) for m in a.model] if a.model \
        else [(m, a.size or s) for m, s in DEFAULT_RUNS]
    cal = cost.calibration()
    print('p150 COST ESTIMATE from the real ttnn 0.81.1 library\'s op decisions on a mock p150 '
          '(no card): NOT a measurement.')
    print(f'calibration: {cal.source}; measured {cal.measured_s * 1e3:.3f} ms per batch, '
          f'model ideal {cal.ideal_s * 1e3:.3f} ms (matmul roofline alone '
          f'{cal.compute_only_s * 1e3:.3f} ms = {cal.compute_only_fraction:.1%} of measured) '
          f'-> efficiency {cal.efficiency:.3f}'
          + (f' (overridden: {a.efficiency})' if a.efficiency else ''))
    results, rc = [], 0
    earlier = reprice(a.from_json, a.efficiency) if a.from_json else None
    for model, sizes in ([(r['model'], list(r['sizes'])) for r in earlier] if earlier
                         else runs):
        r = earlier.pop(0) if earlier else estimate_model(
            model, sizes, a.grid, a.efficiency, a.dtype,
            tuple(a.camera) if model.startswith('da3') else ())
        results.append(r)
        peak = r.get('peak_bytes') or {}
        print(f'\n{model} [{r.get("precision")}]: dry run {r["status"]}, {r["dispatch"]} '
              f'dispatch, grid {r["grid"]}, {r["wall_s"]} s; peak allocated DRAM '
              f'{peak.get("DRAM", 0) / 2**20:.0f} MiB, L1 {peak.get("L1", 0) / 2**20:.1f} MiB '
              '(the real allocator, every size of the run)')
        for p in r['problems']:
            print('PROBLEM', p)
            rc = 1
        for size, est in r['sizes'].items():
            print(cost.format_table(est, f'{TITLES.get(model, model)} {size} '
                                         f'({est["programs"]} programs)'))
    if a.json:
        Path(a.json).write_text(json.dumps({'kind': 'ESTIMATE, not a measurement',
                                            'calibration': cal.__dict__, 'runs': results},
                                           indent=1))
    return rc


if __name__ == '__main__':
    sys.exit(main())
