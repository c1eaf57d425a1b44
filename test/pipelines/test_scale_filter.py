"""The scale filter alone (pipelines/scale_filter.py): gate, reset, hold, temporal pull-back."""
import math

import numpy as np
import pytest

from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.pipelines.scale_filter import (
    MEASURED,
    PREDICTED,
    RESET,
    UNSCALED,
    ScaleFilter,
    ScaleFilterSettings,
)

NS = 10**9
KALMAN = ScaleFilterSettings('kalman', process_noise=0.05, gate_sigma=3.0, reset_count=3,
                             hold_s=0.25)


def _m(value, spread=0.01, support=400):
    return ScaleResult('cloud', value, support=support, spread=spread)


def test_gate_rejects_then_resets_to_a_real_change():
    f = ScaleFilter()
    out = [f.step(KALMAN, i * NS // 10, _m(2.0)) for i in range(10)]
    assert out[0].state == RESET and all(o.state == MEASURED for o in out[1:])
    assert out[-1].value == pytest.approx(2.0) and out[-1].sigma < 0.01
    jumped = [f.step(KALMAN, (10 + i) * NS // 10, _m(4.0)) for i in range(4)]
    assert [o.state for o in jumped] == [PREDICTED, PREDICTED, RESET, MEASURED]
    assert jumped[0].rejected and 'sigma' in jumped[0].reason
    assert jumped[0].value == pytest.approx(2.0) and jumped[2].value == pytest.approx(4.0)
    assert (f.rejections, f.resets) == (3, 2)          # the start counts as a reset


def test_prediction_holds_then_unscaled_with_the_reason():
    f = ScaleFilter()
    first = f.step(KALMAN, 0, _m(1.5))
    held = f.step(KALMAN, NS // 10, ScaleResult('cloud', None, 'no scan near the stamp'))
    assert held.state == PREDICTED and held.value == pytest.approx(1.5)
    assert held.reason == 'no scan near the stamp' and held.sigma > first.sigma
    late = f.step(KALMAN, 3 * NS // 10, None)
    assert late.state == UNSCALED and late.value is None and math.isnan(late.sigma)
    assert 'scale_hold_s' in late.reason
    back = f.step(KALMAN, 4 * NS // 10, _m(1.6))       # P grew meanwhile: accepted at once
    assert back.state == MEASURED and back.value == pytest.approx(1.6, rel=2e-2)


def test_no_filter_applies_each_measurement():
    f = ScaleFilter()
    s = ScaleFilterSettings('none')
    assert f.step(s, 0, _m(3.0)).value == 3.0
    out = f.step(s, NS, ScaleResult('depth', None, 'no image'))
    assert (out.state, out.value, out.reason) == (UNSCALED, None, 'no image')


def test_kalman_averages_noisy_measurements():
    rng = np.random.default_rng(2)
    f = ScaleFilter()
    s = ScaleFilterSettings('kalman', process_noise=0.01)
    z = 2.0 * np.exp(0.05 * rng.standard_normal(200))
    out = np.array([f.step(s, i * NS // 10, _m(v, spread=0.05 / 1.4826, support=1)).value
                    for i, v in enumerate(z)])
    assert np.std(np.log(out[50:])) < 0.25 * np.std(np.log(z[50:]))
    assert abs(np.median(out[50:]) / 2.0 - 1) < 0.01


def test_temporal_holds_through_jitter_and_does_not_drift():
    """Exact camera-motion ratios + i.i.d. network jitter: the published scale holds still."""
    rng = np.random.default_rng(5)
    s = ScaleFilterSettings('kalman', process_noise=0.01, model_sigma=0.1)
    e = 0.1 * rng.standard_normal(600)                 # the network's log-scale error per frame
    f = ScaleFilter()
    published = []
    x = 0.0
    for i in range(600):
        chain = None if i == 0 else ScaleResult('temporal', math.exp(x + e[i - 1] - e[i]),
                                                support=500, spread=0.002)
        out = f.step_temporal(s, i * NS // 10, chain)
        x = math.log(out.value)
        published.append(x + e[i])                      # log(published / true)
    p = np.array(published)
    assert np.std(np.diff(p[10:])) < 0.2 * np.std(np.diff(e[10:]))
    assert np.abs(p[100:]).max() < 0.05 and abs(p[-1]) < 0.05
