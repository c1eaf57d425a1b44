"""The benchmark's figures in NVIDIA ros2_benchmark's own JSON layout, to compare like with like.

ros2_benchmark (r2b) writes one flat JSON object per benchmark: a `metadata` object and each
concluded metric under `str(enum member)`, e.g. `"BasicPerformanceMetrics.MEAN_FRAME_RATE"`, the
values in its units (ms, fps, frame counts). Its headline is the run at the peak sustainable rate,
so ours is too: the runs at the peak search's answer (else see headline_rate), concluded as
r2b concludes repeats (stats.conclude). Every offered rate follows under `per_offered_rate`;
r2b has no latency percentiles, so those keep our `latency_pNN_ms` names beside its keys.
"""
from __future__ import annotations

from tt_depth_ros.tools.bench import stats as st

PERCENTILE_KEYS = ('latency_p50_ms', 'latency_p90_ms', 'latency_p95_ms', 'latency_p99_ms')


def r2b_metrics(metrics: dict) -> dict:
    """One run's (or one rate's concluded) metrics under r2b's export keys plus percentiles."""
    out = {f'BasicPerformanceMetrics.{member}': metrics[value]
           for member, value in st.BASIC_MEMBERS.items() if value in metrics}
    out.update({k: metrics[k] for k in PERCENTILE_KEYS if k in metrics})
    return out


def headline_rate(runs: list[dict], peak: dict | None) -> float | None:
    """The rate r2b would report, its peak sustainable rate.

    The peak search's answer when it found one and ran there, else the highest rate whose every
    run kept drops within stats.DROP_LIMIT, else the lowest rate run (a node that keeps up
    nowhere is reported where it came closest, not where it drowned).
    """
    rates = sorted({float(r['rate_hz']) for r in runs})
    if not rates:
        return None
    if peak and peak.get('peak_rate_hz') is not None and float(peak['peak_rate_hz']) in rates:
        return float(peak['peak_rate_hz'])
    ok = [x for x in rates if all(st.accepted(r['metrics']) for r in runs
                                  if float(r['rate_hz']) == x)]
    return ok[-1] if ok else rates[0]


def r2b_report(report: dict) -> dict:
    """The r2b-layout block of a finished benchmark report (tools/bench/benchmark.py).

    Args:
        report: the benchmark report with 'metadata', 'dataset', 'runs', 'peak_throughput'.
    """
    runs, peak, meta = report['runs'], report.get('peak_throughput'), report['metadata']
    rate = headline_rate(runs, peak)
    by_rate: dict[float, list[dict]] = {}
    for r in runs:
        by_rate.setdefault(float(r['rate_hz']), []).append(r['metrics'])
    out = {'metadata': {
        'BenchmarkMetadata.NAME': meta['name'],
        'BenchmarkMetadata.TEST_DATETIME': meta['datetime'],
        'BenchmarkMetadata.DEVICE_HOSTNAME': meta['hostname'],
        'BenchmarkMetadata.DEVICE_ARCH': meta['arch'],
        'BenchmarkMetadata.DEVICE_OS': meta['os'],
        'BenchmarkMetadata.INPUT_DATA_PATH': report['dataset']['path'],
        'BenchmarkMetadata.PEAK_THROUGHPUT_PREDICTION': (peak or {}).get('peak_rate_hz')},
        'headline_offered_rate_hz': rate,
        'headline_runs': len(by_rate.get(rate, [])) if rate is not None else 0}
    if rate is not None:
        out.update(r2b_metrics(st.conclude(by_rate[rate])))
    out['per_offered_rate'] = {f'{k:g}': r2b_metrics(st.conclude(v))
                               for k, v in sorted(by_rate.items())}
    return out
