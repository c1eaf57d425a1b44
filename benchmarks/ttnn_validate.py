"""The p150 device-time ESTIMATE beside designs measured on a card (the estimate's validation).

    .venv/bin/python -m benchmarks.ttnn_validate [--json OUT] [--from-json EARLIER_OUT]

DUSt3R: the port changh95/tt-mast3r (devtools/ttnn/reference_designs/tt_mast3r_dust3r.py: its
ttnn calls as data) is played through the REAL ttnn 0.81.1 library on a mock p150 (player.py,
about a minute with a warm JIT cache); the device ops the library records are priced by
devtools/ttnn/cost_model.py exactly as the engine's are, per stage and for the pair under each
measured configuration, and printed beside the port's measured times (DEVICE_VALIDATION.md).
A stage measurement includes the harness's host transfers (image or taps up, outputs down):
the estimate adds them at the RF-DETR port's measured upload rate (blackhole_figures).
DA3: what the DA3 port's card states (reference_designs/da3_port.py, the unknown op list
assumed) against its kernel sum and trace time.

The estimate is trusted where a stage lands within +-30 %. The matmul, SDPA and conv prices are
FITTED on tt-metal's GEMM tables, the pplx-embed SDPA calls and ResNet-50; nothing is fitted on
the ports. `--from-json` prices an earlier run's records again (seconds, no library).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from devtools.ttnn import blackhole_figures as fig
from devtools.ttnn import cost_model as cost
from devtools.ttnn.reference_designs import da3_port, records
from devtools.ttnn.reference_designs import tt_mast3r_dust3r as dust3r

TOLERANCE = 0.30
STAGES = [(s, v) for s in ('encoder', 'decoder') for v in dust3r.VARIANTS] + \
    [('DPT head', 'rope')]
LEVERS = (('dit', 'rope', 'dit'), ('SDPA 128,256', 'rope', 'sdpa'),
          ('dit + SDPA 128,256', 'rope', 'dit+sdpa'))


def _key(stage: str, variant: str) -> str:
    return f'{stage}|{variant}'


def dust3r_rows(recs: dict) -> list[dict]:
    """One row per DUSt3R measurement: measured, roofline, estimate (+ host I/O), 1-factor."""
    est = {k: cost.estimate(v, dust3r.GRID[0] * dust3r.GRID[1]) for k, v in recs.items()}
    rows = []
    for m in dust3r.MEASURED:
        if m['what'] == 'pair':     # TtDust3r._graph: encoder, decoder, two heads
            parts = [est[_key('encoder', m['variant'])], est[_key('decoder', m['variant'])],
                     est[_key('DPT head', 'rope')], est[_key('DPT head', 'rope')]]
        else:
            parts = [est[_key(m['what'], m['variant'])]]
        total = {f: sum(p['total'][f] for p in parts)
                 for f in ('ideal_ms', 'estimate_ms', 'kernel_ms', 'single_factor_ms')}
        io_ms = sum(dust3r.HOST_BYTES[m['what']]) / fig.HOST_UPLOAD_BYTES_PER_S.value * 1e3
        estimate = total['estimate_ms'] + io_ms
        rows.append({**m, **total, 'ops': sum(p['ops'] for p in parts), 'io_ms': io_ms,
                     'with_io_ms': estimate, 'ratio': estimate / m['ms'],
                     'trusted': abs(estimate / m['ms'] - 1) <= TOLERANCE})
    return rows


def da3_row(ops: list[dict]) -> dict:
    """One reading of the DA3 port (da3_port.READINGS) priced against its measured figures."""
    recs = records(ops, da3_port.GRID)
    e = cost.estimate(recs, da3_port.GRID[0] * da3_port.GRID[1])['total']
    lo, hi = da3_port.MEASURED['kernel_ms']
    kernel = (lo + hi) / 2
    return {'ops': len(recs), 'measured_ops': da3_port.MEASURED['ops'],
            'roofline_ms': e['ideal_ms'], 'kernel_ms': e['kernel_ms'],
            'measured_kernel_ms': kernel, 'trace_ms': e['estimate_ms'],
            'measured_trace_ms': da3_port.MEASURED['trace_ms'],
            'single_factor_ms': e['single_factor_ms'],
            'kernel_ratio': e['kernel_ms'] / kernel,
            'trace_ratio': e['estimate_ms'] / da3_port.MEASURED['trace_ms'],
            'trusted': abs(e['estimate_ms'] / da3_port.MEASURED['trace_ms'] - 1) <= TOLERANCE}


def report(recs: dict) -> str:
    rows = dust3r_rows(recs)
    lines = ['p150 device-time ESTIMATE vs designs MEASURED on a p150a (ms; estimate = per-class '
             'model, in a trace; +I/O = the harness\'s host transfers)',
             '', f'DUSt3R port {dust3r.SOURCE["repo"]} @ {dust3r.SOURCE["commit"][:12]}, 512x512 '
             f'pair, 110 cores ({dust3r.SOURCE["measurements"]})',
             f'{"stage":<9}{"config":<10}{"mode":<7}{"measured":>9}{"roofline":>9}'
             f'{"estimate":>9}{"+I/O":>8}{"est/meas":>9}{"1-factor":>9}{"ops":>6}  within 30 %']
    for r in rows:
        lines.append(f'{r["what"]:<9}{r["variant"]:<10}{r["mode"]:<7}{r["ms"]:>9.2f}'
                     f'{r["ideal_ms"]:>9.2f}{r["estimate_ms"]:>9.2f}{r["with_io_ms"]:>8.2f}'
                     f'{r["ratio"]:>9.2f}{r["single_factor_ms"]:>9.2f}{r["ops"]:>6}  '
                     f'{"yes" if r["trusted"] else "NO"}')
    pair = {r['variant']: r for r in rows if r['what'] == 'pair'}
    lines += ['', 'lever deltas on the traced pair (measured / estimated, ms):']
    for name, a, b in LEVERS:
        lines.append(f'  {name:<20} {pair[b]["ms"] - pair[a]["ms"]:+7.2f} / '
                     f'{pair[b]["with_io_ms"] - pair[a]["with_io_ms"]:+7.2f}')
    lines += ['', f'DA3 port ({da3_port.SOURCE}; op list partly assumed: da3_port.py), 518x518, '
                  f'120 cores; two readings of its 265 device ops']
    for reading, ops in da3_port.READINGS.items():
        d = da3_row(ops)
        lines += [f'  {reading}: device ops {d["ops"]} (measured {d["measured_ops"]}); roofline '
                  f'{d["roofline_ms"]:.2f} ms; kernel sum {d["kernel_ms"]:.2f} vs measured '
                  f'{d["measured_kernel_ms"]:.2f} ({d["kernel_ratio"]:.2f}x); in a trace '
                  f'{d["trace_ms"]:.2f} vs {d["measured_trace_ms"]:.2f} ({d["trace_ratio"]:.2f}x, '
                  f'{"within" if d["trusted"] else "OUTSIDE"} 30 %); single factor '
                  f'{d["single_factor_ms"]:.2f}']
    lines += ['', 'fitted on: tt-metal GEMM_FLOPS.md P150 tables (matmul, conv via ResNet-50), '
                  'pplx-embed SDPA calls (SDPA), the Blackhole DRAM report (bytes), tt-RF-DETR '
                  '(launch floor); validated on the ports above (nothing fitted on them).',
              f'left out: {cost.LEAVES_OUT}']
    return '\n'.join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--json', help='write the played records here')
    ap.add_argument('--from-json', help='price the records of an earlier --json again')
    a = ap.parse_args(argv)
    problems = []
    if a.from_json:
        recs = json.loads(Path(a.from_json).read_text())['records']
    else:
        from devtools.ttnn.reference_designs import player
        played = player.play(dust3r, STAGES)
        recs = {_key(*k): v for k, v in played['records'].items()}
        problems = played['problems']
        print(f'played {len(STAGES)} stage configurations of the DUSt3R port through the real '
              f'library in {played["wall_s"]:.0f} s')
        for p in problems:
            print('PROBLEM', p)
    if a.json:
        Path(a.json).write_text(json.dumps({'kind': 'device-op records of the DUSt3R port, '
                                                    'played on a mock p150', 'records': recs}))
    print(report(recs))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
