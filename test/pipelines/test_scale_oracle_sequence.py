"""The scale sources and filter over the oracle sequence, ROS-free (the stable-scale figures).

The real DA3 frame path and scale stage (pipelines/depth_scale.py) over the scale oracle
(support/scale_oracle.py): a moving camera whose network depth is the truth times s_i
(log-normal jitter 10 %, one x2 step), a LiDAR at another rate and phase with 2 % noise and 5 %
gross outliers. The sequence statistics live here; the ROS tests prove the node does the same.
"""
import numpy as np
import pytest

from support.scale_oracle import (
    FramePath,
    Oracle,
    T_optical_lidar,
    frame_stamp,
    lidar_stamps,
    log_jitter,
    run_sequence,
)
from tt_depth_ros.geometry.depth.sparse_fit import apply_fit
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth_scale import ScaleInputs, scale_depth_frame
from tt_depth_ros.pipelines.relative_scale import RelativeScaleSettings
from tt_depth_ros.pipelines.scale_filter import RESET, UNSCALED, ScaleFilterSettings
from tt_depth_ros.pipelines.sensor_scale import cloud_scale

W, H = 56, 42
FRAMES, STEP, RESETS = 60, 30, 3
FIRST_SECOND = 10
CLOUD = RelativeScaleSettings('cloud', filter=ScaleFilterSettings('kalman', reset_count=RESETS))


def _steady(n):
    """Frames after the first second, without the step's reset window."""
    keep = np.zeros(n, bool)
    keep[FIRST_SECOND:] = True
    keep[STEP:STEP + RESETS] = False
    return keep


@pytest.fixture(scope='module')
def metric_cloud():
    return run_sequence('metric', Oracle(W, H, seed=1, step_at=STEP), FRAMES, CLOUD)


def test_cloud_kalman_holds_the_metric_scale(metric_cloud):
    r = metric_cloud
    err, keep = r.error, _steady(FRAMES)
    assert np.median(np.abs(err[FIRST_SECOND:] - 1)) <= 0.01
    for a, b in ((FIRST_SECOND, STEP), (STEP + RESETS, FRAMES)):   # jitter on each side of the step
        assert log_jitter(err[a:b]) <= 0.1 * log_jitter(r.raw[a:b])
    assert np.abs(err[keep] - 1).max() < 0.03
    # the x2 step: followed within the reset count, then exact again
    assert np.abs(err[STEP + RESETS:] - 1).max() < 0.03
    assert r.last.figures['scale_rejections'] >= 1 or RESET in r.states[STEP:STEP + RESETS]


@pytest.mark.parametrize('kind, min_conf', [('anyview', 1.5), ('mono', 0.0), ('nested', 1.5)])
def test_every_kind_gets_the_same_scale(kind, min_conf):
    r = run_sequence(kind, Oracle(W, H, seed=2, step_at=12), 20,
                     RelativeScaleSettings('cloud', filter=ScaleFilterSettings('kalman')),
                     min_confidence=min_conf)
    assert np.median(np.abs(r.error[5:] - 1)) <= 0.01
    assert np.abs(r.error[15:] - 1).max() < 0.03
    metric = r.last.metric
    assert metric is not None and r.last.figures['units'] == 'metres'
    if kind != 'nested':
        assert r.last.relative is not None


def test_outliers_do_not_move_the_scale():
    kw = dict(frames=8, settings=RelativeScaleSettings('cloud'))
    clean = run_sequence('metric', Oracle(W, H, seed=3), outliers=False, **kw)
    dirty = run_sequence('metric', Oracle(W, H, seed=3), outliers=True, **kw)
    assert np.abs(dirty.applied / clean.applied - 1).max() < 0.005
    first = lidar_stamps(frame_stamp(1))[0]             # the scans do carry gross outliers
    o = Oracle(W, H, seed=3)
    ranges = [np.linalg.norm(o.scan(first, gross), axis=1) for gross in (True, False)]
    assert (np.abs(ranges[0] / ranges[1] - 1) > 0.2).sum() >= 2


def test_missing_cloud_predicts_then_leaves_the_frame_unscaled():
    s = RelativeScaleSettings('cloud', filter=ScaleFilterSettings('kalman', hold_s=0.3))
    r = run_sequence('anyview', Oracle(W, H, seed=4), 12, s, min_confidence=1.5, scans_until=5)
    assert r.states[7] == 'predicted' and np.isfinite(r.applied[7])
    assert r.states[-1] == UNSCALED and np.isnan(r.applied[-1])
    assert r.last.scale_failed and r.last.metric is None
    assert 'no scan' in r.last.failure_message and 'scale_hold_s' in r.last.failure_message
    # a metric model without its scan keeps its own metres, and says why
    m = run_sequence('metric', Oracle(W, H, seed=4), 12, s, scans_until=5)
    assert m.states[-1] == UNSCALED and m.last.unscaled and not m.last.scale_failed
    assert m.last.metric is m.last.frame.depth


def test_temporal_holds_a_metric_scale_without_a_sensor():
    s = RelativeScaleSettings('temporal', filter=ScaleFilterSettings(
        'kalman', process_noise=0.01, model_sigma=0.1))
    r = run_sequence('metric', Oracle(W, H, seed=5), 100, s)
    err = r.error
    assert log_jitter(err[FIRST_SECOND:]) <= 0.2 * log_jitter(r.raw[FIRST_SECOND:])
    assert abs(err[-1] - 1) <= 0.05 and np.abs(err[FIRST_SECOND:] - 1).max() <= 0.05
    assert r.last.figures['scale_support'] >= 20


def test_affine_inverse_fit_through_the_cloud_source():
    """An affine-invariant output (1 / d = a / true + b) is made metric by scale + shift."""
    o = Oracle(112, 84, seed=6)
    _, true = o.frame(3)
    a, b = 0.5, 0.02
    net = (1.0 / (a / true + b)).astype(np.float32)         # sky: 1 / b, finite
    t = frame_stamp(3)
    scan = min(lidar_stamps(frame_stamp(5)), key=lambda s: abs(s - t))
    fit, _ = cloud_scale(o.scan(scan), T_optical_lidar(t, scan), net, np.isfinite(true), o.K,
                         fit='affine_inverse')
    assert fit.ok and fit.outliers > 0
    metric = apply_fit(net, fit.value, fit.shift)
    ground = np.isfinite(true)
    assert np.median(np.abs(metric[ground] / true[ground] - 1)) < 0.01


def test_a_metric_image_refines_a_metric_model():
    """scale_source depth on a metric model: its metres times the ratio to the metric image."""
    o = Oracle(112, 84, seed=7)
    frame = FramePath('metric', o)(0)
    _, true = o.frame(0)
    scaled = scale_depth_frame(ModelKind.METRIC, frame, RelativeScaleSettings('depth'), 0.0, 0.0,
                               ScaleInputs(stamp_ns=frame_stamp(0), metric_depth=true))
    assert scaled.filtered.state == 'measured' and not scaled.unscaled
    assert scaled.scale.value == pytest.approx(1 / o.network_scale(0), rel=1e-5)
    sky = ~np.isfinite(true)
    np.testing.assert_allclose(scaled.metric[~sky], true[~sky], rtol=1e-5)
    assert np.isposinf(scaled.metric[sky]).all()
    missing = scale_depth_frame(ModelKind.METRIC, frame, RelativeScaleSettings('depth'), 0.0,
                                0.0, ScaleInputs(stamp_ns=frame_stamp(0)))
    assert missing.unscaled and missing.metric is frame.depth
    assert "no image on 'metric_depth'" in missing.failure_message
