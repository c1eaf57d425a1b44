"""p150 device-time ESTIMATE of the ttnn engine without a card (never a measurement).

    .venv/bin/python -m benchmarks.ttnn_estimate [--model da3-large --size 518x518 ...]
        [--camera 480x640 ...] [--grid 11x10|12x10|13x10] [--dtype PRESET] [--efficiency F]
        [--json OUT] [--from-json EARLIER_OUT] [--compare BEFORE AFTER] [--table JSON ...]

Runs one forward per size of the engine (tt_depth_ros.engines.ttnn, rule-v1 weights) through the
REAL ttnn 0.81.1 library on a mock p150 (the dry run: devtools/ttnn/dryrun/driver.py, bridge.py,
environment.py), reads every device op the traced forward ran from the library's graph capture
(devtools/ttnn/dryrun/op_records.py) and prices it with devtools/ttnn/cost_model.py. Per op group
(attention, MLP, norm, head, data movement, embed/other) three figures side by side
(docs/ttnn-estimate.md): the plain roofline (no efficiency: the only floor), the per-class
estimate founded on published Blackhole measurements (in a trace; its kernel sum beside it) and
the single-factor figure (roofline / 0.335) this package printed before. The per-class estimate
is validated against measured ports by benchmarks/ttnn_validate.py.
Default: DA3METRIC-LARGE at 518x518 and 280x504, the DUSt3R pair at 512x384 (W x H; HxW
384x512).

The mock device's grid is 11x10 (110 cores: a p150 with Tensix dispatch; 13x10 with the
unharvested descriptor). It refuses ETH dispatch, so `--grid 12x10` (a p150 with ETH dispatch,
120 cores) runs the 11x10 dry run and moves its records to 12x10 (cost_model.regrid: an op on
the whole grid has its tiles split over 120 cores, so its per-core work shrinks).
`--from-json` prices the op records of an earlier --json again (seconds, no library);
`--dtype fast` estimates the speed design (precision 'fast'; PRESET+lever adds a structural
lever); `--compare BEFORE AFTER` prints two --json runs side by side per group with the saving;
`--table A.json B.json ...` prints one row per (model, preset, size) of --json runs: roofline,
estimate, kernel sum, single factor and the p150 target, on 11x10 and 12x10.
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

    A camera trace is keyed 'camera HxW'. grid '12x10': the 11x10 run's records, regridded.
    """
    t0 = time.perf_counter()
    regrid_to = (12, 10) if grid == '12x10' else None
    rep = driver.run(model, sizes, '11x10' if regrid_to else grid, max_traced_shapes=1,
                     op_records=True, dtype=dtype, cameras=cameras)
    out = {'model': model, 'engine_model': rep.get('engine_model'),
           'precision': (rep.get('engine_info') or {}).get('precision'), 'status': rep['status'],
           'problems': rep['problems'], 'dispatch': rep.get('dispatch'), 'grid': rep.get('grid'),
           'peak_bytes': rep.get('peak_bytes'),
           'wall_s': round(time.perf_counter() - t0, 1), 'sizes': {}}
    if rep.get('grid') is None:
        return out
    cores = rep['grid'][0] * rep['grid'][1]
    if regrid_to:
        out['grid'], cores = list(regrid_to), regrid_to[0] * regrid_to[1]
    for tr in rep['traces']:
        size = tr['phase'].removeprefix('prepare ').strip()
        if size in out['sizes'] or not tr.get('ops'):
            continue
        ops = cost.regrid(tr['ops'], regrid_to) if regrid_to else tr['ops']
        est = cost.estimate(ops, cores, efficiency)
        est['programs'] = tr['programs']
        est['records'] = ops
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
# Targets whose measurement left the DPT head out: the DA3 port ran its backbone alone on the
# device (docs/ttnn-estimate.md "Validation"), so its figure is also held against ours less the
# head.
HEADLESS_TARGETS = {('da3metric-large', '518x518')}


def without_head_ms(est: dict) -> float:
    """An estimate's total less its DPT head stage (devtools/ttnn/stages.py), ms."""
    head = est['stages'].get('head')
    return est['total']['estimate_ms'] - (head['estimate_ms'] if head else 0.0)


def head_at_roofline_ms(est: dict) -> float:
    """The estimate with its DPT head stage at that stage's plain roofline, ms.

    No faster kernel for the same ops can bring the forward under it; only a head whose ops
    move fewer bytes or take fewer MAC passes (fewer ops, lower fidelity) can.
    """
    head = est['stages'].get('head')
    return without_head_ms(est) + (head['ideal_ms'] if head else 0.0)


def compare(before_path: str, after_path: str) -> str:
    """Per-group side-by-side of two --json runs (e.g. today's design and --dtype fast)."""
    runs = [{(r['engine_model'], s): (r.get('precision'), e) for r in
             json.loads(Path(p).read_text())['runs'] for s, e in r['sizes'].items()}
            for p in (before_path, after_path)]
    lines = []
    for key in [k for k in runs[0] if k in runs[1]]:
        (p0, e0), (p1, e1) = runs[0][key], runs[1][key]
        lines += ['', f'{key[0]} {key[1]}: [{p0}] -> [{p1}]  (ms roofline / estimate; ESTIMATE)',
                  f'{"group":<14}{"before":>16}{"after":>16}{"saved":>9}  after roofline bound']
        for g in cost.GROUPS:
            a, b = e0['groups'][g], e1['groups'][g]
            if a['ops'] or b['ops']:
                lines.append(f'{g:<14}{a["ideal_ms"]:>7.2f} /{a["estimate_ms"]:>7.2f}'
                             f'{b["ideal_ms"]:>7.2f} /{b["estimate_ms"]:>7.2f}'
                             f'{a["estimate_ms"] - b["estimate_ms"]:>9.2f}  {b["bound"]}')
        t0, t1 = e0['total'], e1['total']
        lines.append(f'{"total":<14}{t0["ideal_ms"]:>7.2f} /{t0["estimate_ms"]:>7.2f}'
                     f'{t1["ideal_ms"]:>7.2f} /{t1["estimate_ms"]:>7.2f}'
                     f'{t0["estimate_ms"] - t1["estimate_ms"]:>9.2f}')
        lines.append(f'device ops {e0["ops"]} -> {e1["ops"]}; DRAM traffic '
                     f'{t0["dram_mb"] / 1e3:.1f} -> {t1["dram_mb"] / 1e3:.1f} GB')
        if key in TARGETS_MS:
            tgt = TARGETS_MS[key]
            lines.append(f'target {tgt} ms: after is {t1["estimate_ms"] / tgt:.2f}x the target '
                         f'by the estimate, {t1["ideal_ms"] / tgt:.2f}x by the roofline')
    return '\n'.join(lines)


def table(paths: list[str]) -> str:
    """One row per (model, preset, size) of --json runs, on 11x10 and (regridded) 12x10."""
    runs = [r for p in paths for r in json.loads(Path(p).read_text())['runs']]
    w = max([len(str(r.get('precision'))) for r in runs] + [6]) + 2
    lines = ['p150 device time per forward, ms: ESTIMATES (docs/ttnn-estimate.md); roofline = no '
             'efficiency (the only floor), estimate = per-class model in a trace',
             f'{"model":<22}{"preset":<{w}}{"size":<9}{"ops":>5}{"roofline":>9}{"estimate":>9}'
             f'{"kernels":>8}{"1-factor":>9}{"12x10 roof":>11}{"12x10 est":>10}'
             f'{"no head":>8}{"head roof":>10}  target (no head: the estimate less the DPT head '
             'stage; head roof: with the head stage at its roofline)']
    for r in runs:
        for size, e in r['sizes'].items():
            if size.startswith('camera'):
                continue
            est = cost.estimate(e['records'], e['grid_cores'])
            t, headless, head_roof = est['total'], without_head_ms(est), head_at_roofline_ms(est)
            t12 = cost.estimate(cost.regrid(e['records'], (12, 10)), 120)['total']
            key = (r['engine_model'], size)
            tgt = TARGETS_MS.get(key)
            verdict = '-' if tgt is None else (
                f'{tgt}: {"met" if t["estimate_ms"] <= tgt else "not met"} (11x10), '
                f'{"met" if t12["estimate_ms"] <= tgt else "not met"} (12x10)')
            if key in HEADLESS_TARGETS:
                verdict += f'; no head: {"met" if headless <= tgt else "not met"} (11x10)'
            lines.append(f'{r["engine_model"]:<22}{str(r.get("precision")):<{w}}{size:<9}'
                         f'{e["ops"]:>5}{t["ideal_ms"]:>9.2f}{t["estimate_ms"]:>9.2f}'
                         f'{t["kernel_ms"]:>8.2f}{t["single_factor_ms"]:>9.2f}'
                         f'{t12["ideal_ms"]:>11.2f}{t12["estimate_ms"]:>10.2f}'
                         f'{headless:>8.2f}{head_roof:>10.2f}  {verdict}')
    return '\n'.join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', action='append', choices=sorted(driver.MODELS),
                    help='repeatable; default: da3-large and dust3r-large')
    ap.add_argument('--size', action='append', default=[],
                    help='HxW (repeatable; applies to every --model)')
    ap.add_argument('--camera', action='append', default=[],
                    help='HxW camera frame resized on the device (DA3; repeatable)')
    ap.add_argument('--grid', choices=sorted([*driver.HARVEST, '12x10']), default='11x10',
                    help='12x10: the 11x10 records moved to 120 cores (ETH dispatch)')
    ap.add_argument('--efficiency', type=float, help='override the single factor')
    ap.add_argument('--dtype', help="precision preset of every model (e.g. 'fast'; default: "
                    'each family\'s default)')
    ap.add_argument('--json', help='write the estimates (per op and per group) here')
    ap.add_argument('--from-json', help='price the op records of an earlier --json again')
    ap.add_argument('--compare', nargs=2, metavar=('BEFORE_JSON', 'AFTER_JSON'),
                    help='print two earlier --json runs side by side per group, then exit')
    ap.add_argument('--table', nargs='+', metavar='JSON',
                    help='one row per model, preset and size of earlier --json runs, then exit')
    a = ap.parse_args(argv)
    if a.compare:
        print(compare(*a.compare))
        return 0
    if a.table:
        print(table(a.table))
        return 0
    runs = [(m, a.size or driver.MODELS[m][2][:1]) for m in a.model] if a.model \
        else [(m, a.size or s) for m, s in DEFAULT_RUNS]
    cal = cost.calibration()
    print('p150 device-time ESTIMATE from the real ttnn 0.81.1 library\'s op decisions on a mock '
          'p150 (no card): NOT a measurement. Columns: roofline (no efficiency), estimate '
          '(per-class, from published Blackhole measurements, in a trace), kernel sum, single '
          'factor (docs/ttnn-estimate.md).')
    print(f'single factor: {cal.source}; measured {cal.measured_s * 1e3:.3f} ms per batch, '
          f'roofline {cal.ideal_s * 1e3:.3f} ms -> {cal.efficiency:.3f}'
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
