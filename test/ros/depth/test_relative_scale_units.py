"""The relative-depth scale sources and the depth node's model-kind checks, without ROS processes.

Ground plane: closed-form clouds of a floor seen from a level and a pitched camera (known height,
unknown cloud unit), a wall only, and a small floor patch; the median-ratio source on a known
ratio. Model kinds: which parameter combinations configure refuses, with the reason.
"""
import numpy as np
import pytest

from tt_depth_ros.geometry.depth.ground_plane import camera_height_scale, fit_ground_plane
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth import engine_kind
from tt_depth_ros.pipelines.relative_scale import RelativeScaleSettings, relative_scale
from tt_depth_ros.ros.depth.kind_rules import check_kind_params
from tt_depth_ros.ros.depth.params import DepthParams


def _floor_and_wall(pitch_deg, height=1.6, wall=10.0, h=120, w=160, f=120.0, unit=3.0):
    """Planar depth of a camera pitched down by pitch_deg over a floor, wall at `wall` m."""
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    rays = np.stack([(u - w / 2) / f, (v - h / 2) / f, np.ones_like(u)], -1)
    a = np.radians(pitch_deg)
    R = np.array([[1, 0, 0], [0, np.cos(a), np.sin(a)], [0, -np.sin(a), np.cos(a)]])  # cam->level
    level = rays @ R.T
    with np.errstate(divide='ignore', invalid='ignore'):
        s_floor = np.where(level[..., 1] > 1e-9, height / level[..., 1], np.inf)
        s_wall = np.where(level[..., 2] > 1e-9, wall / level[..., 2], np.inf)
    s = np.minimum(s_floor, s_wall)               # ray parameter; z of the camera ray is 1
    K = np.array([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1.0]])
    return (s / unit).astype(np.float32), K, s_floor <= s_wall


@pytest.mark.parametrize('pitch', [0.0, 20.0])
def test_camera_height_scale_recovers_the_unit(pitch):
    depth, K, floor = _floor_and_wall(pitch)
    mask = np.isfinite(depth)
    s = RelativeScaleSettings('camera_height', camera_height_m=1.6)
    scale, fit = relative_scale(s, depth, mask, K)
    assert scale.ok and scale.metric and scale.source == 'camera_height'
    assert scale.value == pytest.approx(3.0, rel=1e-4)
    assert fit.tilt_deg == pytest.approx(pitch, abs=0.05)
    assert fit.inlier_ratio == pytest.approx(floor[mask].mean(), abs=0.03)
    again, _ = relative_scale(s, depth, mask, K)
    assert again.value == scale.value                     # seeded RANSAC: deterministic


def test_ground_not_visible_is_refused_with_a_reason():
    depth, K, floor = _floor_and_wall(0.0, wall=1.0)      # wall 1 m ahead hides almost all floor
    s = RelativeScaleSettings('camera_height', camera_height_m=1.6)
    scale, fit = relative_scale(s, depth, np.isfinite(depth), K)
    assert not scale.ok and 'ground' in scale.reason and not fit.ok
    wall_only = np.full((120, 160), 2.0, np.float32)
    scale, _ = relative_scale(s, wall_only, np.ones_like(wall_only, bool), K)
    assert not scale.ok and 'ground' in scale.reason
    pts = np.zeros((10, 3))
    assert not fit_ground_plane(pts).ok
    with pytest.raises(ValueError, match='camera_height_m'):
        camera_height_scale(pts, 0.0)


def test_depth_source_median_ratio_and_missing_image():
    rel = np.linspace(1.0, 5.0, 48 * 64, dtype=np.float32).reshape(48, 64)
    metric = rel * 2.5
    metric[:4] = np.nan                                   # invalid metric pixels do not vote
    s = RelativeScaleSettings('depth')
    K = np.eye(3)
    scale, _ = relative_scale(s, rel, np.ones(rel.shape, bool), K, metric)
    assert scale.ok and scale.metric and scale.value == pytest.approx(2.5, rel=1e-6)
    big = np.kron(metric, np.ones((2, 2), np.float32))    # any resolution of the same aspect
    assert relative_scale(s, rel, np.ones(rel.shape, bool), K, big)[0].value == \
        pytest.approx(2.5, rel=1e-3)
    missing, _ = relative_scale(s, rel, np.ones(rel.shape, bool), K, None)
    assert not missing.ok and 'metric_depth' in missing.reason
    wrong, _ = relative_scale(s, rel, np.ones(rel.shape, bool), K, metric[:, :20])
    assert not wrong.ok and 'aspect' in wrong.reason


def _params(**params):
    return DepthParams(**{'model': 'm', **params})


@pytest.mark.parametrize('kind, params, match', [
    ('metric', {'scale_source': 'camera_height', 'camera_height_m': 1.0}, 'predicts metres'),
    ('metric', {'scale_source': 'temporal'}, "needs scale_filter='kalman'"),
    ('metric', {'focal_source': 'estimated'}, 'does not estimate'),
    ('nested', {'scale_source': 'camera_height', 'camera_height_m': 1.0}, 'predicts metres'),
    ('anyview', {'scale_source': 'temporal', 'scale_filter': 'kalman'}, 'relative depth'),
    ('mono', {'focal_source': 'estimated'}, 'does not estimate'),
    ('anyview', {'scale_source': 'camera_height'}, 'camera_height_m > 0'),
])
def test_configure_refuses_meaningless_combinations(kind, params, match):
    with pytest.raises(ValueError, match=match):
        check_kind_params(_params(**params), ModelKind(kind))


def test_model_kinds_say_what_they_give():
    for kind in ModelKind:
        check_kind_params(_params(), kind)                       # the defaults suit every kind
    for kind in ('anyview', 'nested', 'mono'):
        k = ModelKind(kind)
        assert k.is_relative_depth == (kind != 'nested')
        assert k.estimates_intrinsics == (kind != 'mono')
    assert engine_kind({'kind': 'nested'}) is ModelKind.NESTED
    assert engine_kind({'is_metric': True}) is ModelKind.METRIC
    assert engine_kind({'is_metric': False}) is ModelKind.MONO     # an engine without 'kind'
