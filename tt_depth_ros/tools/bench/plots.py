"""PNG plots of a benchmark report (matplotlib, Agg backend: no display needed).

Three figures people can read at a glance: the end-to-end latency as a CDF per offered rate (one
step curve per rate: where the curves part shows where the node starts to queue), throughput
against offered rate with the drop rate beside it, and node CPU / RSS over the whole benchmark.
Inputs are the plain lists the report stores, so a saved JSON can be re-plotted.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def latency_by_rate(runs: list[dict]) -> dict[float, list[float]]:
    """Pool the matched latencies (ms) of all runs at the same offered rate.

    Args:
        runs: report runs ({'rate_hz': float, 'series': {'latency_ms': [...]}, ...}).

    Returns:
        {rate_hz: [latency_ms, ...]} sorted by rate.
    """
    pooled: dict[float, list[float]] = {}
    for r in runs:
        pooled.setdefault(float(r['rate_hz']), []).extend(r['series']['latency_ms'])
    return dict(sorted(pooled.items()))


def plot_latency_cdf(by_rate: dict[float, list[float]], path: Path, title: str = '') -> Path:
    """Empirical CDF of end-to-end latency (ms), one step curve per offered rate.

    Args:
        by_rate: {offered rate Hz: latencies ms} (latency_by_rate).
        path: output PNG.
        title: figure title (e.g. model and backend).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    colours = plt.cm.viridis(np.linspace(0.0, 0.9, max(len(by_rate), 1)))
    for (rate, lat), c in zip(by_rate.items(), colours):
        if not lat:
            continue
        x = np.sort(np.asarray(lat, dtype=np.float64))
        y = np.arange(1, len(x) + 1) / len(x)
        ax.step(np.r_[x[0], x], np.r_[0.0, y], where='post', color=c, linewidth=1.6,
                label=f'{rate:g} Hz offered (n={len(x)}, p50 {np.median(x):.0f} ms)')
    ax.set_xlabel('end-to-end latency (ms)')
    ax.set_ylabel('fraction of frames <= latency')
    ax.set_ylim(0.0, 1.02)
    ax.set_title(title or 'latency CDF per offered rate')
    ax.grid(True, alpha=0.3)
    if any(by_rate.values()):
        ax.legend(fontsize=8, loc='lower right')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def throughput_points(runs: list[dict]) -> list[dict]:
    """Per offered rate (repeats and peak probes pooled): output fps and drop rate, by rate.

    output_fps is the mean over the runs of (outputs - 1) / (last - first output time): frame
    intervals per second, which a short run does not inflate; ros2_benchmark's Mean Frame Rate
    (outputs / that time, N/(N-1) higher) is kept as r2b_mean_frame_rate. drop_percent is all
    missed frames over all sent frames at that rate.
    """
    from tt_depth_ros.tools.bench import stats as st
    by_rate: dict[float, list[dict]] = {}
    for r in runs:
        by_rate.setdefault(float(r['rate_hz']), []).append(r['metrics'])
    pts = []
    for rate, ms in sorted(by_rate.items()):
        r2b = [m[st.MEAN_FRAME_RATE] for m in ms if m.get(st.MEAN_FRAME_RATE) is not None]
        fps = [(m['num_received'] - 1) / (m[st.RECEIVED_DURATION] / 1e3) for m in ms
               if m.get('num_received', 0) > 1 and m.get(st.RECEIVED_DURATION, 0) > 0]
        sent = sum(m.get(st.NUM_FRAMES_SENT, 0) for m in ms)
        missed = sum(m.get(st.NUM_MISSED_FRAMES, 0) for m in ms)
        pts.append({'rate_hz': rate, 'runs': len(ms),
                    'output_fps': float(np.mean(fps)) if fps else None,
                    'r2b_mean_frame_rate': float(np.mean(r2b)) if r2b else None,
                    'frames_sent': sent, 'missed_frames': missed,
                    'drop_percent': 100.0 * missed / sent if sent else None})
    return pts


def plot_throughput(points: list[dict], path: Path, title: str = '') -> Path:
    """Output frame rate vs offered rate (with the ideal y = x) and drop rate on a second axis.

    Args:
        points: throughput_points(runs).
        path: output PNG.
        title: figure title.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    x = [p['rate_hz'] for p in points]
    fps = [np.nan if p['output_fps'] is None else p['output_fps'] for p in points]
    drop = [np.nan if p['drop_percent'] is None else p['drop_percent'] for p in points]
    top = max([*x, *[f for f in fps if np.isfinite(f)], 1.0]) * 1.1
    ax.plot([0, top], [0, top], color='grey', linestyle=':', linewidth=1,
            label='output = offered')
    ax.plot(x, fps, color='tab:blue', marker='o', linewidth=1.5,
            label='output frame rate (intervals / s)')
    ax.set_xlabel('offered rate (Hz)')
    ax.set_ylabel('output frame rate (fps)', color='tab:blue')
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax2 = ax.twinx()
    ax2.bar(x, drop, width=max(top / 60, 0.05), color='tab:red', alpha=0.45,
            label='dropped frames (%)')
    ax2.set_ylabel('dropped frames (%)', color='tab:red')
    ax2.set_ylim(0, 100)
    for xi, d in zip(x, drop):
        if np.isfinite(d):
            ax2.annotate(f'{d:.0f} %', (xi, d), textcoords='offset points', xytext=(0, 3),
                         ha='center', fontsize=7, color='tab:red')
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc='upper left')
    ax.set_title(title or 'throughput vs offered rate')
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def plot_resources(series: dict, path: Path, title: str = '') -> Path:
    """Node CPU % and RSS (MB) over the benchmark (ResourceMonitor.series())."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(series.get('t_s', []), series.get('node_cpu_percent', []), color='tab:blue',
            linewidth=1)
    ax.set_xlabel('time (s)')
    ax.set_ylabel('node CPU (%; 100 = one core)', color='tab:blue')
    ax2 = ax.twinx()
    ax2.plot(series.get('t_s', []), series.get('node_rss_mb', []), color='tab:red', linewidth=1)
    ax2.set_ylabel('node RSS (MB)', color='tab:red')
    ax.set_title(title or 'node resources')
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)
