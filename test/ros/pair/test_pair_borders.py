"""Pair node: rectification borders leave depth, fused cloud and scale.

A real PairPipeline (the scene DUSt3R double, 160x120 cameras on a 112x80 grid: resize 0.7 then
a 2-row crop) runs one stereo pair; view 1 then gets the border of a rectification whose lens
principal point sits 6.3 px right of P's, so rectified columns >= 153 map from outside the
source (known in closed form). `drop_borders` (what the node applies to every pair) must turn
every grid pixel touching those columns invalid in depth, cloud and masks, at grid and camera
resolution, and keep the rest of view 1 and all of view 2 unchanged.
"""
import numpy as np
import pytest

from support.fake_engines.pair_scene import ID_BLOCK, SceneDust3rEngine, render_view
from tt_depth_ros.geometry.camera.rectify import build_rectifier
from tt_depth_ros.geometry.depth.grid_to_camera import grid_to_camera
from tt_depth_ros.pipelines.pair_dust3r import PairPipeline, PairSettings
from tt_depth_ros.ros.pair.outputs import drop_borders

pytestmark = pytest.mark.ros
W, H, SHIFT = 160, 120, 6.3


def test_borders_leave_depth_cloud_and_masks():
    rgb1, _, K = render_view('stereo', 1, 0, W, H)
    rgb2, _, _ = render_view('stereo', 1, 1, W, H)
    for rgb in (rgb1, rgb2):
        rgb[:ID_BLOCK, :ID_BLOCK] = rgb[0, 0]                # the id survives the resize
    pipeline = PairPipeline(SceneDust3rEngine('stereo'), PairSettings(network_size=112))
    result = pipeline.run(rgb1, rgb2, K, K, same_camera=False)
    before1, before2 = result.mask1.copy(), result.mask2.copy()
    n_before = len(result.fused_points(1.0)[0])
    depth_before = result.depth1(1.0)
    K_src = K.copy()
    K_src[0, 2] += SHIFT                      # source column = rectified column + 6.3
    rect = build_rectifier('plumb_bob', K_src, [0.0] * 5, np.eye(3), K, W, H)
    first_border = int(np.floor(W - 1 - SHIFT)) + 1          # 153: u + 6.3 > W - 1
    assert np.array_equal(rect.valid.all(0), np.arange(W) < first_border)

    drop_borders(result, (rect, None))
    plan = result.plan1
    sx = plan.resized_wh[0] / W
    touching = int(np.floor(first_border * sx)) - plan.box_ltrb[0]   # grid column with col 153
    depth = result.depth1(1.0)
    assert plan.net_hw == (80, 112) and touching < 112
    assert np.isnan(depth[:, touching:]).all()
    assert not result.mask1[:, touching:].any()
    keep = slice(0, touching - 3)                            # away from the border: unchanged
    assert np.array_equal(result.mask1[:, keep], before1[:, keep]) and before1[:, keep].any()
    np.testing.assert_array_equal(depth[:, keep], depth_before[:, keep])
    assert np.array_equal(result.mask2, before2)             # view 2 had no border
    xyz, rgb = result.fused_points(1.0)
    assert len(xyz) == len(rgb) == result.mask1.sum() + result.mask2.sum()
    assert len(xyz) == n_before - (before1 & ~result.mask1).sum() < n_before
    assert np.isnan(grid_to_camera(depth, plan)[:, first_border:]).all()   # camera resolution
