"""A card's measured device time per op group beside the estimate (benchmarks/bench_ttnn.py).

Input: tt-metal's device-profiler ops report of one bench_ttnn run (`ops_perf_results_*.csv`,
columns 'OP CODE', 'OP TYPE', 'DEVICE KERNEL DURATION [ns]', 'OP TO OP LATENCY [ns]'), and the
records of the same model, preset and size from `benchmarks.ttnn_estimate --json` (the device
ops the real library runs for that forward). The report's last rows are the last traced forward:
they are matched to the records in order, by device-op name, and summed per op group and op
class, beside the estimate's kernel time, in-trace time and roofline. The measured/estimated
ratio per class is what recalibrates devtools/ttnn/op_classes.py after a first card run.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

from devtools.ttnn import cost_model as cost

KERNEL = 'DEVICE KERNEL DURATION [ns]'
GAP = 'OP TO OP LATENCY [ns]'


def read_ops_csv(path: str | Path) -> list[dict]:
    """The device ops of an ops report, in order: {'op', 'kernel_s', 'gap_s'} (signposts out)."""
    rows = []
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        cols = {c.strip(): c for c in reader.fieldnames or []}
        missing = [c for c in ('OP CODE', KERNEL) if c not in cols]
        if missing:
            raise ValueError(f'{path}: not a tt-metal ops report, columns {missing} missing '
                             '(run the benchmark under the device profiler: docs/ttnn-estimate.md '
                             '"Measuring on a card")')
        for r in reader:
            if r.get(cols.get('OP TYPE', ''), '').strip() == 'signpost':
                continue
            kernel = r[cols[KERNEL]].strip()
            if not kernel:
                continue
            gap = r.get(cols.get(GAP, ''), '') or '0'
            rows.append({'op': r[cols['OP CODE']].strip(), 'kernel_s': float(kernel) * 1e-9,
                         'gap_s': float(gap.strip() or 0) * 1e-9})
    return rows


def _name(op: str) -> str:
    return re.sub(r'(deviceoperation|operation|op)$', '', op.lower().split('::')[-1])


def match(records: list[dict], rows: list[dict]) -> list[dict]:
    """The report rows of the last forward, one per record, in order; ValueError if they differ."""
    if len(rows) < len(records):
        raise ValueError(f'the ops report has {len(rows)} device ops, the forward {len(records)}:'
                         ' profile at least one whole traced forward of the same model, preset '
                         'and size as the --estimate-json')
    last = rows[len(rows) - len(records):]
    bad = [(i, r['device_op'], m['op']) for i, (r, m) in enumerate(zip(records, last))
           if _name(r['device_op']) != _name(m['op'])]
    if bad:
        i, want, got = bad[0]
        raise ValueError(f'op {i} of the forward is {want} in the estimate but {got} in the ops '
                         f'report ({len(bad)} of {len(records)} differ): the report is not this '
                         'forward (another model, preset, size or ttnn version?)')
    return last


def compare(estimate: dict, rows: list[dict]) -> dict:
    """{'groups': {...}, 'classes': {...}, 'total': {...}} measured beside estimated (ms)."""
    recs = estimate['records']
    measured = match(recs, rows)
    per_op = estimate['per_op']

    def add(table: dict, key: str, op: dict, m: dict) -> None:
        row = table.setdefault(key, {'ops': 0, 'measured_kernel_ms': 0.0, 'measured_gap_ms': 0.0,
                                     'kernel_ms': 0.0, 'estimate_ms': 0.0, 'roofline_ms': 0.0})
        row['ops'] += 1
        row['measured_kernel_ms'] += m['kernel_s'] * 1e3
        row['measured_gap_ms'] += m['gap_s'] * 1e3
        row['kernel_ms'] += op['kernel_s'] * 1e3
        row['estimate_ms'] += (op['kernel_s'] + estimate['dispatch_gap_us'] * 1e-6) * 1e3
        row['roofline_ms'] += op['ideal_s'] * 1e3

    out: dict = {'groups': {}, 'classes': {}, 'total': {}}
    for op, m in zip(per_op, measured):
        add(out['groups'], op['group'], op, m)
        add(out['classes'], op['cls'], op, m)
        add(out['total'], 'total', op, m)
    out['total'] = out['total']['total']
    return out


def format_compare(cmp: dict, title: str) -> str:
    lines = [f'{title}: MEASURED device time (device profiler) beside the ESTIMATE, ms',
             f'{"":<16}{"ops":>5}{"measured":>10}{"estimated":>10}{"ratio":>7}{"gaps":>8}'
             f'{"est. gaps":>10}{"roofline":>9}   (kernel sums; gaps: op-to-op latency)']

    def line(name: str, r: dict) -> str:
        ratio = r['measured_kernel_ms'] / r['kernel_ms'] if r['kernel_ms'] else float('nan')
        return (f'{name:<16}{r["ops"]:>5}{r["measured_kernel_ms"]:>10.3f}{r["kernel_ms"]:>10.3f}'
                f'{ratio:>7.2f}{r["measured_gap_ms"]:>8.3f}'
                f'{r["estimate_ms"] - r["kernel_ms"]:>10.3f}{r["roofline_ms"]:>9.3f}')
    for g in cost.GROUPS:
        if g in cmp['groups']:
            lines.append(line(g, cmp['groups'][g]))
    lines.append('by class:')
    for k, r in sorted(cmp['classes'].items()):
        lines.append(line(f'  {k}', r))
    lines.append(line('total', cmp['total']))
    lines.append('a class ratio far from 1 is the price to recalibrate (devtools/ttnn/'
                 'op_classes.py; docs/ttnn-estimate.md "Measuring on a card")')
    return '\n'.join(lines)
