"""Benchmark statistics in the form ROS users compare (NVIDIA ros2_benchmark), plus our additions.

Pure functions over send/receive times keyed by header stamp (docs/ros.md §8): the node under test
copies the input stamp to its output, so each output is matched to the frame that caused it.
Metric names reuse the spellings of ros2_benchmark's `BasicPerformanceMetrics` and
`ResourceMetrics` (the strings below); additions (percentiles, drops, unmatched outputs) use
snake_case keys. `peak_search` is the throughput search: the highest rate at which at most 5 % of
frames are lost, by bisection with a bounded number of steps.
"""
from __future__ import annotations

import math

import numpy as np

# ros2_benchmark BasicPerformanceMetrics values (exact spellings).
RECEIVED_DURATION = 'Delta between First & Last Received Frames (ms)'
MEAN_PLAYBACK_FRAME_RATE = 'Mean Playback Frame Rate (fps)'
MEAN_FRAME_RATE = 'Mean Frame Rate (fps)'
NUM_MISSED_FRAMES = '# of Missed Frames'
NUM_FRAMES_SENT = '# of Frames Sent'
FIRST_SENT_RECEIVED_LATENCY = 'First Sent to First Received Latency (ms)'
LAST_SENT_RECEIVED_LATENCY = 'Last Sent to Last Received Latency (ms)'
FIRST_INPUT_LATENCY = 'First Frame End-to-end Latency (ms)'
LAST_INPUT_LATENCY = 'Last Frame End-to-end Latency (ms)'
MAX_LATENCY = 'Max. End-to-End Latency (ms)'
MIN_LATENCY = 'Min. End-to-End Latency (ms)'
MEAN_LATENCY = 'Mean End-to-End Latency (ms)'
MAX_JITTER = 'Max. Frame-to-Frame Jitter (ms)'
MIN_JITTER = 'Min. Frame-to-Frame Jitter (ms)'
MEAN_JITTER = 'Mean Frame-to-Frame Jitter (ms)'
STD_DEV_JITTER = 'Frame-to-Frame Jitter Std. Deviation (ms)'
# Member names of those BasicPerformanceMetrics values: ros2_benchmark's JSON export writes
# each key as str(member), e.g. 'BasicPerformanceMetrics.MEAN_FRAME_RATE'.
BASIC_MEMBERS = {
    'RECEIVED_DURATION': RECEIVED_DURATION, 'MEAN_PLAYBACK_FRAME_RATE': MEAN_PLAYBACK_FRAME_RATE,
    'MEAN_FRAME_RATE': MEAN_FRAME_RATE, 'NUM_MISSED_FRAMES': NUM_MISSED_FRAMES,
    'NUM_FRAMES_SENT': NUM_FRAMES_SENT, 'FIRST_SENT_RECEIVED_LATENCY': FIRST_SENT_RECEIVED_LATENCY,
    'LAST_SENT_RECEIVED_LATENCY': LAST_SENT_RECEIVED_LATENCY,
    'FIRST_INPUT_LATENCY': FIRST_INPUT_LATENCY, 'LAST_INPUT_LATENCY': LAST_INPUT_LATENCY,
    'MAX_LATENCY': MAX_LATENCY, 'MIN_LATENCY': MIN_LATENCY, 'MEAN_LATENCY': MEAN_LATENCY,
    'MAX_JITTER': MAX_JITTER, 'MIN_JITTER': MIN_JITTER, 'MEAN_JITTER': MEAN_JITTER,
    'STD_DEV_JITTER': STD_DEV_JITTER}
# ros2_benchmark ResourceMetrics values used here (whole-machine CPU).
BASELINE_CPU = 'Baseline Overall CPU Utilization (%)'
MAX_CPU = 'Max. Overall CPU Utilization (%)'
MEAN_CPU = 'Mean Overall CPU Utilization (%)'

BASIC_KEYS = (RECEIVED_DURATION, MEAN_PLAYBACK_FRAME_RATE, MEAN_FRAME_RATE, NUM_MISSED_FRAMES,
              NUM_FRAMES_SENT, FIRST_SENT_RECEIVED_LATENCY, LAST_SENT_RECEIVED_LATENCY,
              FIRST_INPUT_LATENCY, LAST_INPUT_LATENCY, MAX_LATENCY, MIN_LATENCY, MEAN_LATENCY,
              MAX_JITTER, MIN_JITTER, MEAN_JITTER, STD_DEV_JITTER)
EXTRA_KEYS = ('latency_p50_ms', 'latency_p90_ms', 'latency_p95_ms', 'latency_p99_ms',
              'num_received', 'num_matched', 'num_unmatched_outputs', 'drop_fraction')
MAX_KEYS = (MAX_LATENCY, MAX_JITTER, MEAN_JITTER, 'latency_p99_ms', 'num_unmatched_outputs')
MIN_KEYS = (MIN_LATENCY, MIN_JITTER)
DROP_LIMIT = 0.05


def match_latencies(sent: dict[int, int], received: dict[int, int]) -> tuple[list, list]:
    """Pair outputs with inputs by header stamp.

    Args:
        sent: {stamp_ns: send wall time ns} in send order.
        received: {stamp_ns: first receive wall time ns}.

    Returns:
        ([(stamp, send_ns, recv_ns), ...] in send order, [unmatched output stamps]).
    """
    pairs = [(s, t, received[s]) for s, t in sent.items() if s in received]
    unmatched = sorted(s for s in received if s not in sent)
    return pairs, unmatched


def basic_metrics(sent: dict[int, int], received: dict[int, int]) -> dict[str, float]:
    """One run's metrics: the ros2_benchmark set (where computable) plus EXTRA_KEYS.

    Missed frames are sent frames without a matched output; outputs whose stamp was never sent
    are counted in `num_unmatched_outputs` (should be 0: it means stamps are not being copied).
    """
    pairs, unmatched = match_latencies(sent, received)
    n_sent = len(sent)
    missed = n_sent - len(pairs)
    out: dict[str, float] = {NUM_FRAMES_SENT: n_sent, NUM_MISSED_FRAMES: missed,
                             'num_received': len(received), 'num_matched': len(pairs),
                             'num_unmatched_outputs': len(unmatched),
                             'drop_fraction': missed / n_sent if n_sent else math.nan}
    send = np.array(list(sent.values()), dtype=np.float64) / 1e6
    recv = np.sort(np.array(list(received.values()), dtype=np.float64)) / 1e6
    if n_sent > 1 and send[-1] > send[0]:
        out[MEAN_PLAYBACK_FRAME_RATE] = n_sent / ((send[-1] - send[0]) / 1e3)
    if len(recv):
        out[RECEIVED_DURATION] = float(recv[-1] - recv[0])
        if recv[-1] > recv[0]:
            out[MEAN_FRAME_RATE] = len(recv) / ((recv[-1] - recv[0]) / 1e3)
        if n_sent:
            out[FIRST_SENT_RECEIVED_LATENCY] = float(recv[0] - send[0])
            out[LAST_SENT_RECEIVED_LATENCY] = float(recv[-1] - send[-1])
    if pairs:
        lat = np.array([(r - t) / 1e6 for _, t, r in pairs])
        out.update({FIRST_INPUT_LATENCY: float(lat[0]), LAST_INPUT_LATENCY: float(lat[-1]),
                    MAX_LATENCY: float(lat.max()), MIN_LATENCY: float(lat.min()),
                    MEAN_LATENCY: float(lat.mean())})
        for q in (50, 90, 95, 99):
            out[f'latency_p{q}_ms'] = float(np.percentile(lat, q))
    if len(recv) > 2:
        jit = np.abs(np.diff(np.diff(recv)))
        out.update({MAX_JITTER: float(jit.max()), MIN_JITTER: float(jit.min()),
                    MEAN_JITTER: float(jit.mean()), STD_DEV_JITTER: float(jit.std())})
    return out


def conclude(runs: list[dict[str, float]]) -> dict[str, float]:
    """Combine repeats like ros2_benchmark: mean, or max / min for max- / min-type metrics.

    With >= 3 repeats the best and worst value of each metric are dropped first (as upstream).
    """
    keys = [k for k in dict.fromkeys(k for r in runs for k in r)]
    out = {}
    for k in keys:
        vals = [r[k] for r in runs if isinstance(r.get(k), (int, float)) and math.isfinite(r[k])]
        if not vals:
            continue
        if len(vals) >= 3:
            vals = sorted(vals)[1:-1]
        out[k] = max(vals) if k in MAX_KEYS else min(vals) if k in MIN_KEYS else \
            float(sum(vals) / len(vals))
    return out


def accepted(metrics: dict[str, float], drop_limit: float = DROP_LIMIT) -> bool:
    """A rate passes when at most `drop_limit` of sent frames went missing."""
    return metrics.get(NUM_FRAMES_SENT, 0) > 0 and metrics['drop_fraction'] <= drop_limit


def peak_search(run_at, lo_hz: float, hi_hz: float, *, max_steps: int = 5,
                window_hz: float = 1.0) -> dict:
    """Highest accepted rate in [lo_hz, hi_hz] by bisection (ros2_benchmark's peak throughput).

    Args:
        run_at: callable(rate_hz) -> bool (True = accepted, e.g. via `accepted`).
        lo_hz: lower bound; if it fails, the peak is reported as below it (rate None).
        hi_hz: upper bound; tried first (if it passes, it is the answer).
        max_steps: most runs to spend (>= 2).
        window_hz: stop once the bracket is narrower than this.

    Returns:
        {'peak_rate_hz': float | None, 'steps': [(rate, accepted), ...], 'bracket_hz': [lo, hi]}.
    """
    if not 0 < lo_hz < hi_hz:
        raise ValueError(f'need 0 < lo_hz < hi_hz, got {lo_hz}, {hi_hz}')
    if max_steps < 2:
        raise ValueError(f'max_steps must be >= 2, got {max_steps}')
    steps = []

    def trial(rate):
        ok = bool(run_at(rate))
        steps.append((rate, ok))
        return ok

    if trial(hi_hz):
        return {'peak_rate_hz': hi_hz, 'steps': steps, 'bracket_hz': [hi_hz, hi_hz]}
    if not trial(lo_hz):
        return {'peak_rate_hz': None, 'steps': steps, 'bracket_hz': [0.0, lo_hz]}
    good, bad = lo_hz, hi_hz
    while len(steps) < max_steps and bad - good > window_hz:
        mid = round((good + bad) / 2.0, 3)
        if trial(mid):
            good = mid
        else:
            bad = mid
    return {'peak_rate_hz': good, 'steps': steps, 'bracket_hz': [good, bad]}
