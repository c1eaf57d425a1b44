"""The temporal filter of a camera's metric scale: a 1-D Kalman filter of the log-scale.

The state x is the log of the scale applied to the network's depth (metres per model unit for a
relative model, a correction near 1 for a metric one), P its variance. Per frame, in stamp time:

- predict: P grows by `process_noise`^2 per second since the last frame (the network's scale
  moves: a relative model's unit changes per frame, a metric model's scale jitters).
- absolute sources ('depth', 'cloud', 'camera_height'): the frame's fit z = log(scale) with
  variance R from its residual (`measurement_variance`) updates x - unless the innovation is
  beyond `gate_sigma` standard deviations: then it is rejected and counted, and after
  `reset_count` consecutive rejections the filter resets to the measurement (a real change:
  another room, a re-mounted sensor). Without an accepted measurement the frame gets the
  predicted scale for up to `hold_s` seconds after the last one, then none (unscaled).
- 'temporal' (a metric model without a sensor): the prediction follows the camera - the ratio
  that makes this frame agree with the previous published frame moved into it
  (pipelines/sensor_scale.py) is the predicted scale, its residual added to P - and the
  network's own metres are the measurement: z = 0 with the network's scale error `model_sigma`
  as its sigma. The published scale then holds still through the network's jitter and is
  pulled back to the network's average, so it does not drift.

`filter: 'none'` applies each frame's fit as it is (no memory). Every frame gets a
`FilteredScale`: the scale applied, its 1-sigma, and where it came from.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from tt_depth_ros.geometry.depth.sparse_fit import MAD_TO_SIGMA
from tt_depth_ros.geometry.pointmap.scale import ScaleResult

FILTERS = ('none', 'kalman')
MEASURED, PREDICTED, RESET, UNSCALED = 'measured', 'predicted', 'reset', 'unscaled'
STATE_CODES = {UNSCALED: 0, MEASURED: 1, PREDICTED: 2, RESET: 3}
"""A frame's scale state as a number (the `z` of the depth/scale topic)."""
MIN_MEASUREMENT_SIGMA = 0.005
"""A fit's log-scale sigma is never taken below 0.5 %: its pixels' errors are correlated (one
surface, one network error), so the median's sigma / sqrt(n) would overstate its precision."""
NS = 1_000_000_000


@dataclass(frozen=True)
class ScaleFilterSettings:
    """The filter's options (depth node parameters scale_filter, scale_process_noise, ...)."""

    filter: str = 'none'
    process_noise: float = 0.5
    gate_sigma: float = 3.0
    reset_count: int = 3
    hold_s: float = 1.0
    model_sigma: float = 0.1

    def __post_init__(self) -> None:
        if self.filter not in FILTERS:
            raise ValueError(f'scale_filter={self.filter!r}; allowed: {FILTERS}')
        if not (self.process_noise >= 0 and self.gate_sigma > 0 and self.reset_count >= 1
                and self.hold_s >= 0 and self.model_sigma > 0):
            raise ValueError(f'scale filter settings out of range: {self}')


@dataclass(frozen=True)
class FilteredScale:
    """The scale one frame is published with.

    Attributes:
        value: The scale applied; None = unscaled (a relative frame: no metric depth; a metric
            frame: the network's metres as predicted).
        sigma: 1-sigma of log(value), i.e. relative; NaN when unscaled.
        state: MEASURED (this frame's measurement updated it), PREDICTED (none, or rejected:
            the filter's prediction), RESET (the filter restarted at this frame's measurement)
            or UNSCALED.
        reason: Why the frame's measurement was not used (missing, rejected, too old), else ''.
        shift: The inverse-depth shift applied with it (scale_fit affine_inverse), else 0.
        rejected: This frame's measurement failed the gate.
    """

    value: Optional[float]
    sigma: float
    state: str
    reason: str = ''
    shift: float = 0.0
    rejected: bool = False


def measurement_variance(m: ScaleResult) -> float:
    """Variance of log(m.value): the median's (pi/2) sigma^2 / n, with sigma from the residual."""
    sigma = MAD_TO_SIGMA * m.spread
    return max(math.pi / 2 * sigma * sigma / max(m.support, 1), MIN_MEASUREMENT_SIGMA ** 2)


class ScaleFilter:
    """One camera's filter state (module docstring); `step` / `step_temporal` once per frame."""

    def __init__(self) -> None:
        self.rejections = 0     # measurements rejected by the gate, in total
        self.resets = 0         # starts and restarts at a measurement, in total
        self.clear()

    def clear(self) -> None:
        """Forget the scale (a new camera stream); the counters stay."""
        self.x: Optional[float] = None
        self.P = 0.0
        self.shift = 0.0
        self._stamp_ns: Optional[int] = None
        self._measured_ns: Optional[int] = None
        self._run = 0

    def _predict(self, s: ScaleFilterSettings, stamp_ns: int) -> None:
        dt = 0.0 if self._stamp_ns is None else max(0, stamp_ns - self._stamp_ns) / NS
        self.P += s.process_noise ** 2 * dt
        self._stamp_ns = max(stamp_ns, self._stamp_ns or stamp_ns)

    def _reset(self, z: float, R: float, shift: float, stamp_ns: int) -> None:
        self.x, self.P, self.shift = z, R, shift
        self._measured_ns, self._run = stamp_ns, 0
        self.resets += 1

    def _now(self, state: str, reason: str = '', rejected: bool = False) -> FilteredScale:
        return FilteredScale(math.exp(self.x), math.sqrt(self.P), state, reason, self.shift,
                             rejected)

    def step(self, s: ScaleFilterSettings, stamp_ns: int,
             m: Optional[ScaleResult]) -> FilteredScale:
        """The scale of a frame whose absolute source gave `m` (None or value None: no scale).

        Args:
            s: The filter's options (runtime parameters: read per frame).
            stamp_ns: The frame's stamp (the filter's clock).
            m: This frame's fit (its reason says why there is none).
        """
        ok = m is not None and m.ok
        why = '' if ok else (m.reason if m is not None else 'no measurement')
        if s.filter == 'none':
            if not ok:
                return FilteredScale(None, math.nan, UNSCALED, why)
            return FilteredScale(m.value, math.sqrt(measurement_variance(m)), MEASURED,
                                 shift=m.shift)
        if self.x is None:
            if not ok:
                return FilteredScale(None, math.nan, UNSCALED, why)
            self._stamp_ns = stamp_ns
            self._reset(math.log(m.value), measurement_variance(m), m.shift, stamp_ns)
            return self._now(RESET)
        self._predict(s, stamp_ns)
        rejected = False
        if ok:
            z, R = math.log(m.value), measurement_variance(m)
            innovation, S = z - self.x, self.P + R
            if abs(innovation) <= s.gate_sigma * math.sqrt(S):
                K = self.P / S
                self.x += K * innovation
                self.P *= 1.0 - K
                self.shift = m.shift
                self._measured_ns, self._run = stamp_ns, 0
                return self._now(MEASURED)
            self.rejections += 1
            self._run += 1
            if self._run >= s.reset_count:
                self._reset(z, R, m.shift, stamp_ns)
                return self._now(RESET)
            rejected = True
            why = (f'measurement {m.value:.4g} is {abs(innovation) / math.sqrt(S):.1f} sigma '
                   f'from the filtered {math.exp(self.x):.4g} (rejected {self._run} of '
                   f'{s.reset_count} before a reset)')
        age = (stamp_ns - self._measured_ns) / NS
        if age > s.hold_s:
            return FilteredScale(None, math.nan, UNSCALED,
                                 f'{why}; no accepted measurement for {age:.2f} s '
                                 f'(> scale_hold_s {s.hold_s:g})', rejected=rejected)
        return self._now(PREDICTED, why, rejected)

    def step_temporal(self, s: ScaleFilterSettings, stamp_ns: int,
                      chain: Optional[ScaleResult]) -> FilteredScale:
        """The scale of a metric frame from the camera-motion chain and the network's metres.

        Args:
            s: The filter's options.
            stamp_ns: The frame's stamp.
            chain: The scale that makes this frame agree with the previous published frame
                (pipelines/sensor_scale.py); None or value None when it could not be measured
                (first frame, no overlap, no TF): the frame's scale is then unknown relative to
                the last one, so the prediction keeps x and P grows by the network's variance.
        """
        R = s.model_sigma ** 2
        if self.x is None:
            self._stamp_ns = stamp_ns
            self._reset(0.0, R, 0.0, stamp_ns)
            return self._now(RESET)
        self._predict(s, stamp_ns)
        why = ''
        if chain is not None and chain.ok:
            self.x = math.log(chain.value)
            self.P += measurement_variance(chain)
        else:
            why = f'no camera-motion ratio ({chain.reason if chain is not None else "none"})'
            self.P += R
        innovation, S = -self.x, self.P + R
        if abs(innovation) <= s.gate_sigma * math.sqrt(S):
            K = self.P / S
            self.x += K * innovation
            self.P *= 1.0 - K
            self._measured_ns, self._run = stamp_ns, 0
            return self._now(MEASURED, why)
        self.rejections += 1
        self._run += 1
        if self._run >= s.reset_count:
            self._reset(0.0, R, 0.0, stamp_ns)
            return self._now(RESET, why)
        return self._now(PREDICTED, f'the network scale is {abs(innovation) / math.sqrt(S):.1f} '
                         f'sigma from the held one (rejected {self._run} of {s.reset_count} '
                         'before a reset)', rejected=True)
