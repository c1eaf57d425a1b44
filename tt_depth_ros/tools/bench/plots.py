"""PNG plots of a benchmark report (matplotlib, Agg backend: no display needed).

Three figures: end-to-end latency over time (one series per run), a latency histogram per run,
and node CPU / RSS over the whole benchmark. Inputs are the plain lists the report stores, so a
saved JSON can be re-plotted.
"""
from __future__ import annotations

from pathlib import Path


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def plot_latency(runs: list[dict], path: Path, title: str = '') -> Path:
    """Latency (ms) vs send time (s from the run start), one line per run.

    Args:
        runs: [{'label': str, 't_s': [...], 'latency_ms': [...]}, ...].
        path: output PNG.
        title: figure title (e.g. model and backend).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for r in runs:
        ax.plot(r['t_s'], r['latency_ms'], marker='.', linewidth=1, label=r['label'])
    ax.set_xlabel('time since run start (s)')
    ax.set_ylabel('end-to-end latency (ms)')
    ax.set_title(title or 'latency over time')
    ax.grid(True, alpha=0.3)
    if runs:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def plot_histogram(runs: list[dict], path: Path, title: str = '') -> Path:
    """Latency histogram (ms), one translucent histogram per run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for r in runs:
        if r['latency_ms']:
            ax.hist(r['latency_ms'], bins=30, alpha=0.5, label=r['label'])
    ax.set_xlabel('end-to-end latency (ms)')
    ax.set_ylabel('frames')
    ax.set_title(title or 'latency histogram')
    ax.grid(True, alpha=0.3)
    if any(r['latency_ms'] for r in runs):
        ax.legend(fontsize=8)
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
