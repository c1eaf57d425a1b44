"""Per-node statistics and their /diagnostics message (no diagnostic_updater wheel exists).

What an operator needs to see: input and output rates, drops (mailbox replacements and rejected
frames by reason), latency from the input stamp to publish (p50/p95/max over a bounded window),
per-stage times, backend/device, the last error and the lifecycle state. The level goes WARN when
the drop rate (frames handed to the worker but replaced unprocessed) over the last DROP_WINDOW_S
seconds exceeds the node's `drop_warn_ratio`: an overloaded node is not OK. Thread-safe: the
executor records inputs, the worker records outputs, a timer publishes. All windows are bounded.
"""
from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

WINDOW = 512  # samples kept for percentiles and rates
DROP_WINDOW_S = 5.0      # seconds over which the drop rate is judged
DROP_MIN_OFFERS = 5      # fewer frames in the window: too few to judge


def _pct(values, q: float) -> float:
    return float(np.percentile(np.fromiter(values, dtype=np.float64), q)) if values else 0.0


class NodeStats:
    """Counters and bounded windows, summarised into a DiagnosticStatus."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget everything (new configure)."""
        with self._lock:
            self.received = 0
            self.processed = 0
            self.published = 0
            self.mailbox_drops = 0
            self.rejected: dict[str, int] = {}
            self.errors = 0
            self.last_error = ''
            self.last_error_kind = ''
            self.last_error_time = 0.0
            self._in_times: deque = deque(maxlen=WINDOW)
            self._out_times: deque = deque(maxlen=WINDOW)
            self._latency: deque = deque(maxlen=WINDOW)
            self._stages: dict[str, deque] = {}
            self._offers: deque = deque(maxlen=4 * WINDOW)   # (time, replaced) per frame

    def on_input(self) -> None:
        """A message arrived (before validation)."""
        with self._lock:
            self.received += 1
            self._in_times.append(time.monotonic())

    def on_offer(self, replaced: bool) -> None:
        """A frame was handed to the worker; `replaced`: it displaced an unprocessed one."""
        with self._lock:
            self._offers.append((time.monotonic(), bool(replaced)))

    def on_drop(self) -> None:
        """An unprocessed frame was replaced in (or cleared from) the mailbox."""
        with self._lock:
            self.mailbox_drops += 1

    def drop_rate(self, window_s: float = DROP_WINDOW_S) -> tuple[float, int]:
        """(dropped fraction, frames) over the frames handed to the worker in the last window."""
        cutoff = time.monotonic() - window_s
        with self._lock:
            recent = [d for t, d in self._offers if t >= cutoff]
        return (sum(recent) / len(recent) if recent else 0.0), len(recent)

    def on_reject(self, reason: str, message: str) -> None:
        """A frame was skipped for `reason` (a short key such as 'encoding')."""
        with self._lock:
            self.rejected[reason] = self.rejected.get(reason, 0) + 1
            self.last_error = f'{reason}: {message}'
            self.last_error_kind = 'reject'
            self.last_error_time = time.monotonic()

    def on_error(self, message: str) -> None:
        """Processing failed (exception in the worker)."""
        with self._lock:
            self.errors += 1
            self.last_error = message
            self.last_error_kind = 'error'
            self.last_error_time = time.monotonic()

    def on_output(self, latency_s: float, stages: dict[str, float]) -> None:
        """A frame was published; latency = publish time - input stamp (node clock)."""
        with self._lock:
            self.processed += 1
            self.published += 1
            self._out_times.append(time.monotonic())
            self._latency.append(latency_s)
            for k, v in stages.items():
                self._stages.setdefault(k, deque(maxlen=WINDOW)).append(v)

    @staticmethod
    def _rate(times: deque) -> float:
        if len(times) < 2:
            return 0.0
        span = times[-1] - times[0]
        return (len(times) - 1) / span if span > 0 else 0.0

    def snapshot(self) -> dict:
        """Plain-dict summary (also used by tests and benchmarks)."""
        with self._lock:
            lat = list(self._latency)
            return {
                'received': self.received, 'published': self.published,
                'mailbox_drops': self.mailbox_drops, 'rejected': dict(self.rejected),
                'rejected_total': sum(self.rejected.values()), 'errors': self.errors,
                'last_error': self.last_error,
                'input_rate_hz': self._rate(self._in_times),
                'output_rate_hz': self._rate(self._out_times),
                'latency_p50_ms': 1e3 * _pct(lat, 50), 'latency_p95_ms': 1e3 * _pct(lat, 95),
                'latency_max_ms': 1e3 * (max(lat) if lat else 0.0),
                'stages_ms': {k: 1e3 * _pct(v, 50) for k, v in self._stages.items()},
            }

    def to_status(self, name: str, hardware_id: str, state: str, extra: dict | None = None,
                  stale_error_s: float = 5.0, drop_warn_ratio: float = 0.5) -> DiagnosticStatus:
        """ERROR after a recent worker error; WARN after a rejected frame or many drops; else OK.

        Too many drops: the drop rate over DROP_WINDOW_S exceeds `drop_warn_ratio`.
        """
        snap = self.snapshot()
        recent = bool(snap['last_error']) and \
            (time.monotonic() - self.last_error_time) < stale_error_s
        rate, offered = self.drop_rate()
        level, message = DiagnosticStatus.OK, state
        if offered >= DROP_MIN_OFFERS and rate > drop_warn_ratio:
            level = DiagnosticStatus.WARN
            message = (f'{state}: dropping {100 * rate:.0f} % of frames over the last '
                       f'{DROP_WINDOW_S:g} s (> drop_warn_ratio {drop_warn_ratio:g}): the engine '
                       'is slower than the input')
        if recent:
            level = DiagnosticStatus.ERROR if self.last_error_kind == 'error' \
                else DiagnosticStatus.WARN
            message = f'{state}: {snap["last_error"]}'
        values = {
            'state': state,
            'input_rate_hz': f'{snap["input_rate_hz"]:.2f}',
            'output_rate_hz': f'{snap["output_rate_hz"]:.2f}',
            'received': str(snap['received']), 'published': str(snap['published']),
            'dropped_mailbox': str(snap['mailbox_drops']),
            'drop_rate_window': f'{rate:.3f}',
            'rejected_total': str(snap['rejected_total']),
            'errors': str(snap['errors']),
            'latency_p50_ms': f'{snap["latency_p50_ms"]:.2f}',
            'latency_p95_ms': f'{snap["latency_p95_ms"]:.2f}',
            'latency_max_ms': f'{snap["latency_max_ms"]:.2f}',
            'last_error': snap['last_error'],
        }
        for reason, n in sorted(snap['rejected'].items()):
            values[f'rejected_{reason}'] = str(n)
        for stage, ms in sorted(snap['stages_ms'].items()):
            values[f'stage_{stage}_ms'] = f'{ms:.2f}'
        values.update({k: str(v) for k, v in (extra or {}).items()})
        return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                                values=[KeyValue(key=k, value=v) for k, v in values.items()])


def diagnostic_array(stamp, statuses: list[DiagnosticStatus]) -> DiagnosticArray:
    """Wrap statuses in a DiagnosticArray stamped with the node clock."""
    msg = DiagnosticArray(status=statuses)
    msg.header.stamp = stamp
    return msg


def status_values(status: DiagnosticStatus) -> dict[str, str]:
    """KeyValue list -> dict (for subscribers and tests)."""
    return {kv.key: kv.value for kv in status.values}
