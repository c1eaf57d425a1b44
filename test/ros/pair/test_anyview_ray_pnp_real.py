"""`pose_source: pnp` with the real tiny any-view engine (rule-v1 + X1 weights).

The pair pipeline's pose is the ray PnP of the engine's own two-view outputs, and an unusable ray
map is a named failure that keeps view 1's cloud.

The weights are synthetic, so the rays describe no real camera: what is checked is the wiring
(views, intrinsics, thresholds, units) from the engine to the pose, not the pose's accuracy (the
ray-cast tests do that: test/geometry/test_ray_pnp.py, test_anyview_pair_node.py).
"""
import numpy as np
import pytest

from support.da3_fixtures import anyview_state_dict
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.geometry.pose.ray_pnp import relative_pose_from_rays
from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size, resize_to_network
from tt_depth_ros.pipelines.pair_anyview import AnyviewPairPipeline
from tt_depth_ros.pipelines.pair_dust3r import PairSettings
from tt_depth_ros.tools.eval.scene_render import camera_pose, default_scene, intrinsics, render

W, H, RES = 160, 120, 112


@pytest.fixture(scope='module')
def engine():
    with build_engine('da3-anyview-tiny', dtype='float32', state_dict=anyview_state_dict(),
                      backend='torch-cpu',
                      num_views=2) as eng:
        yield eng


def _views():
    K = intrinsics(W, H, 70.0)
    T1 = camera_pose((0.5, 0.1, 1.2), 0.1, 0.08)
    T2 = T1.copy()
    T2[0, 3] += 0.2
    return render(default_scene(), K, W, H, T1)[0], render(default_scene(), K, W, H, T2)[0], K


def test_pipeline_pose_is_the_ray_pnp_of_the_engine_outputs(engine):
    rgb1, rgb2, K = _views()
    loose = dict(pnp_min_inliers=4, pnp_min_inlier_ratio=0.0)    # random weights: any pose
    pipe = AnyviewPairPipeline(engine, PairSettings(network_size=RES, conf_threshold=1.0,
                                                    pose_source='pnp', **loose))
    result = pipe.run(rgb1, rgb2, K, K)
    net = network_size(W, H, RES)
    out = engine.infer(*(resize_to_network(r, net, RES) for r in (rgb1, rgb2)))
    K_net = K * np.array([[net[1] / W], [net[0] / H], [1.0]])
    ref = relative_pose_from_rays(out['ray'], out['ray_conf'], out['depth'], out['conf'],
                                  [K_net, K_net], conf_threshold=1.0, reproj_px=5.0,
                                  iterations=100, min_inliers=4, min_inlier_ratio=0.0)
    assert pipe.pose_source == 'pnp' and 'ray head by PnP-RANSAC' in pipe.engine_label
    assert ref.success and result.pose.success, (ref.reason, result.pose.reason)
    np.testing.assert_allclose(result.pose.T, ref.T, atol=1e-9)
    assert result.pose.inliers == ref.inliers and result.focal_source == 'intrinsics'
    assert result.timings['pnp'] > 0
    # the camera decoder's pose is another estimate: the pipeline did not use it
    E = [np.vstack([e, [0, 0, 0, 1]]) for e in out['extrinsics']]
    assert not np.allclose(result.pose.T, E[0] @ np.linalg.inv(E[1]), atol=1e-3)


def test_an_inconsistent_ray_map_is_a_named_failure_that_keeps_view_1(engine):
    rgb1, rgb2, K = _views()
    pipe = AnyviewPairPipeline(engine, PairSettings(network_size=RES, conf_threshold=1.0,
                                                    pose_source='pnp'))     # node defaults
    result = pipe.run(rgb1, rgb2, K, K)
    assert not result.pose.success
    assert result.pose.reason.startswith('view 1 ray PnP: inlier ratio'), result.pose.reason
    assert result.mask1.sum() > 1000 and result.mask2.sum() == 0     # no placement for view 2
    xyz, _ = result.fused_points(1.0)
    assert len(xyz) == result.mask1.sum()


def test_an_engine_without_rays_is_an_explained_error(engine):
    class NoRays:
        info, num_views, last_timings = engine.info, 2, {}

        def infer(self, *views):
            out = engine.infer(*views)
            return {k: v for k, v in out.items() if not k.startswith('ray')}
    rgb1, rgb2, K = _views()
    pipe = AnyviewPairPipeline(NoRays(), PairSettings(network_size=RES, pose_source='pnp'))
    with pytest.raises(ValueError, match=r"no \['ray', 'ray_conf'\]; pose_source=pnp needs"):
        pipe.run(rgb1, rgb2, K, K)
