"""Pose from DA3 ray maps by PnP (geometry/pose/ray_pnp.py) on a ray-cast scene with known cameras.

The ray maps are what a perfect network would predict (test/support/ray_maps.py), in a network
world frame that is neither camera and in a relative unit; the recovered camera-2 pose must match
the truth whatever the length of the predicted directions.
"""
from __future__ import annotations

import numpy as np
import pytest

from support.ray_maps import LENGTHS, cell_pixel_indices, pinhole_ray_map
from tt_depth_ros.geometry.pose.ray_pnp import ray_points, relative_pose_from_rays
from tt_depth_ros.geometry.pose.se3 import R_from_quat, angle_deg, invert_T, make_T
from tt_depth_ros.tools.eval.scene_render import camera_pose, default_scene, intrinsics, render

H, W = 168, 224                       # network grid (12 x 16 patches); rays 96 x 128
K = intrinsics(W, H, 70.0)
T_W1 = camera_pose((0.5, 0.1, 1.2), yaw_rad=0.1, pitch_rad=0.08)
T_12 = make_T(R_from_quat([0.0, np.sin(np.radians(-2.5)), 0.0, np.cos(np.radians(-2.5))]),
              [0.3, 0.02, 0.1])       # camera 2 in camera 1 (5 deg yaw), metres
G = make_T(R_from_quat([0.1, -0.2, 0.05, 0.97] / np.linalg.norm([0.1, -0.2, 0.05, 0.97])),
           [1.5, -0.4, 2.0])          # network world <- simulator world
PNP = dict(conf_threshold=3.0, reproj_px=5.0, iterations=100, min_inliers=50,
           min_inlier_ratio=0.1)


def _views(length='paper', unit=1.0, depth_unit=None):
    """Per view: ray map, ray conf, depth, depth conf (sky: conf 1) of the two cameras."""
    depth_unit = unit if depth_unit is None else depth_unit
    out = []
    for i, T_wc in enumerate((T_W1, T_W1 @ T_12)):
        _, depth = render(default_scene(), K, W, H, T_wc)
        sky = ~np.isfinite(depth)
        rays = pinhole_ray_map(K, (H, W), G @ T_wc, length=length, unit=unit, seed=i)
        ys, xs = cell_pixel_indices((H, W))
        ray_conf = np.where(sky[ys][:, xs], 1.0, 8.0)
        out.append((rays, ray_conf, np.where(sky, 1e3, depth / depth_unit),
                    np.where(sky, 1.0, 8.0)))
    return [list(x) for x in zip(*out)]


@pytest.mark.parametrize('length', LENGTHS)
def test_relative_pose_whatever_the_direction_length(length):
    unit = 2.7                                   # the network's relative unit
    rays, rconf, depth, dconf = _views(length, unit)
    pose = relative_pose_from_rays(rays, rconf, depth, dconf, [K, K], **PNP)
    assert pose.success, pose.reason
    assert angle_deg(pose.R.T @ T_12[:3, :3]) <= 0.05
    t_true = T_12[:3, 3] / unit
    assert np.linalg.norm(pose.t - t_true) <= 0.005 * np.linalg.norm(t_true)
    assert pose.inlier_ratio > 0.9 and pose.num_points > 5000
    assert pose.reproj_error_px < 0.5            # network pixels


def test_metric_depth_with_relative_origins_needs_the_origin_scale():
    """NESTED: depth in metres, ray origins in the any-view unit x scale_factor."""
    unit = 0.4
    rays, rconf, depth, dconf = _views('unit', unit, depth_unit=1.0)
    pose = relative_pose_from_rays(rays, rconf, depth, dconf, [K, K], origin_scale=unit, **PNP)
    assert pose.success, pose.reason
    assert np.linalg.norm(pose.t - T_12[:3, 3]) <= 0.005 * np.linalg.norm(T_12[:3, 3])
    wrong = relative_pose_from_rays(rays, rconf, depth, dconf, [K, K], **PNP)
    assert not wrong.success or np.linalg.norm(wrong.t - T_12[:3, 3]) > 0.05


def test_points_lie_on_their_pixel_rays_at_the_sampled_depth():
    rays, _, depth, _ = _views('random')
    pts = ray_points(rays[0], depth[0], K)
    cam = (pts.reshape(-1, 3) @ invert_T(G @ T_W1)[:3, :3].T + invert_T(G @ T_W1)[:3, 3])
    cam = cam.reshape(pts.shape)
    hr, wr = pts.shape[:2]
    u = (np.arange(wr) + 0.5) * W / wr - 0.5
    v = (np.arange(hr) + 0.5) * H / hr - 0.5
    ok = np.isfinite(cam).all(-1) & (depth[0][np.clip(np.round(v).astype(int), 0, H - 1)][
        :, np.clip(np.round(u).astype(int), 0, W - 1)] < 100)
    assert ok.mean() > 0.5
    proj_u = K[0, 0] * cam[..., 0] / cam[..., 2] + K[0, 2]
    proj_v = K[1, 1] * cam[..., 1] / cam[..., 2] + K[1, 2]
    np.testing.assert_allclose(proj_u[ok], np.broadcast_to(u, (hr, wr))[ok], atol=1e-3)
    np.testing.assert_allclose(proj_v[ok], np.broadcast_to(v[:, None], (hr, wr))[ok], atol=1e-3)
    # z is the depth bilinearly interpolated at the cell centre
    iu, iv = np.floor(u).astype(int), np.floor(v).astype(int)
    fu, fv = (u - iu)[None, :], (v - iv)[:, None]
    d = depth[0]
    bilinear = ((1 - fv) * ((1 - fu) * d[iv][:, iu] + fu * d[iv][:, iu + 1]) +
                fv * ((1 - fu) * d[iv + 1][:, iu] + fu * d[iv + 1][:, iu + 1]))
    np.testing.assert_allclose(cam[..., 2][ok], bilinear[ok], rtol=1e-4)


def test_a_view_without_confident_rays_is_a_named_failure():
    rays, rconf, depth, dconf = _views()
    rconf[1] = np.ones_like(rconf[1])
    pose = relative_pose_from_rays(rays, rconf, depth, dconf, [K, K], **PNP)
    assert not pose.success and pose.reason.startswith('view 2 ray PnP: too few confident')


def test_bad_inputs_are_rejected_with_the_shape():
    rays, rconf, depth, dconf = _views()
    with pytest.raises(ValueError, match=r'ray map must be \(hr, wr, 6\)'):
        ray_points(rays[0][..., :3], depth[0], K)
    with pytest.raises(ValueError, match='ray_conf shape'):
        relative_pose_from_rays(rays, [rconf[0][:-1], rconf[1]], depth, dconf, [K, K], **PNP)
    with pytest.raises(ValueError, match='fx, fy > 0'):
        ray_points(rays[0], depth[0], np.zeros((3, 3)))
