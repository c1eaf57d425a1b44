"""CPU and memory of a process over time (ros2_benchmark's resource profiler, psutil based).

A background thread samples the node process (and its children) every `interval_s`: CPU percent
(100 = one core busy), resident memory, and whole-machine CPU for the ros2_benchmark "Overall CPU
Utilization" figures. Summaries cover any time window, so each benchmark run gets its own.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import psutil


class ResourceMonitor:
    """Samples (t_monotonic, process_cpu_percent, rss_bytes, machine_cpu_percent).

    Args:
        pid: process to watch (its children are included).
        interval_s: sampling period (>= 0.01 s).
    """

    def __init__(self, pid: int, interval_s: float = 0.1):
        if interval_s < 0.01:
            raise ValueError(f'interval_s must be >= 0.01, got {interval_s}')
        self.proc = psutil.Process(pid)
        self.interval_s = interval_s
        self.samples: list[tuple[float, float, int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name='resource-monitor', daemon=True)
        self._lock = threading.Lock()

    def _procs(self) -> list:
        try:
            return [self.proc] + self.proc.children(recursive=True)
        except psutil.Error:
            return []

    def _loop(self) -> None:
        known: dict[int, psutil.Process] = {}
        psutil.cpu_percent(None)
        while not self._stop.wait(self.interval_s):
            cpu, rss = 0.0, 0
            for p in self._procs():
                p = known.setdefault(p.pid, p)   # keep the object: cpu_percent is incremental
                try:
                    with p.oneshot():
                        cpu += p.cpu_percent(None)
                        rss += p.memory_info().rss
                except psutil.Error:
                    continue
            if not rss:
                continue  # process gone
            with self._lock:
                self.samples.append((time.monotonic(), cpu, rss, psutil.cpu_percent(None)))

    def start(self) -> 'ResourceMonitor':
        """Start sampling (returns self)."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)

    def summary(self, t0: float | None = None, t1: float | None = None) -> dict[str, float]:
        """Mean/max process CPU %, max/last RSS MB and mean/max machine CPU % in [t0, t1]."""
        with self._lock:
            s = [x for x in self.samples if (t0 is None or x[0] >= t0) and
                 (t1 is None or x[0] <= t1)]
        if not s:
            return {'samples': 0}
        a = np.array([(c, r / 2**20, m) for _, c, r, m in s], dtype=np.float64)
        return {'samples': len(s), 'node_cpu_percent_mean': float(a[:, 0].mean()),
                'node_cpu_percent_max': float(a[:, 0].max()),
                'node_rss_mb_max': float(a[:, 1].max()), 'node_rss_mb_last': float(a[-1, 1]),
                'machine_cpu_percent_mean': float(a[:, 2].mean()),
                'machine_cpu_percent_max': float(a[:, 2].max())}

    def series(self) -> dict[str, list[float]]:
        """All samples as lists (for the report and plots): t_s from the first sample."""
        with self._lock:
            s = list(self.samples)
        t0 = s[0][0] if s else 0.0
        return {'t_s': [x[0] - t0 for x in s], 'node_cpu_percent': [x[1] for x in s],
                'node_rss_mb': [x[2] / 2**20 for x in s],
                'machine_cpu_percent': [x[3] for x in s], 't0_monotonic': t0}
