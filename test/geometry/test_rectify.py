"""geometry/rectify.py: remap tables per lens model, the reduced/scaled intrinsics, the cache.

The distorted views are ray-cast with the exact inverse lens model (pixel_rays), so the rectified
depth map must equal the pinhole render with P wherever the surface is smooth (bilinear remap of
a smooth depth field: relative error <= 1e-3 on 95 % of those pixels).
"""
import cv2
import numpy as np
import pytest

from tt_depth_ros.geometry.camera_model import CameraModelError
from tt_depth_ros.geometry.rectify import (
    RectifierCache,
    build_rectifier,
    has_distortion,
    image_intrinsics,
    pixel_rays,
)
from tt_depth_ros.geometry.scene_render import camera_pose, default_scene, render

W, H = 160, 120
K = np.array([[95.0, 0.0, 80.5], [0.0, 94.0, 59.0], [0.0, 0.0, 1.0]])
POSE = camera_pose((0.5, 0.2, 1.3), yaw_rad=0.1, pitch_rad=0.18)
LENSES = [('plumb_bob', [-0.28, 0.08, 0.001, -0.0008, -0.01]),
          ('rational_polynomial', [2.0, 0.5, 0.0005, -0.0005, 0.0, 2.3, 1.0, 0.05]),
          ('equidistant', [0.08, -0.02, 0.004, -0.001])]


@pytest.mark.parametrize('model, d', LENSES)
def test_rectified_distorted_render_equals_the_pinhole_render(model, d):
    d = np.asarray(d)
    P = (cv2.fisheye.estimateNewCameraMatrixForUndistortRectify(K, d.reshape(4, 1), (W, H),
                                                                np.eye(3), balance=0.0)
         if model == 'equidistant' else cv2.getOptimalNewCameraMatrix(K, d, (W, H), 0.0)[0])
    _, distorted = render(default_scene(), K, W, H, POSE, rays_cam=pixel_rays(model, K, d, W, H))
    _, truth = render(default_scene(), P, W, H, POSE)
    rect = build_rectifier(model, K, d, np.eye(3), P, W, H)
    z = np.where(np.isfinite(distorted), distorted, 1e3).astype(np.float32)
    got = rect(z)
    t = np.where(np.isfinite(truth), truth, 1e3).astype(np.float32)
    smooth = np.isfinite(truth) & (cv2.dilate(t, np.ones((5, 5))) - cv2.erode(
        t, np.ones((5, 5))) < 0.08 * t)
    rel = np.abs(got[smooth] - truth[smooth]) / truth[smooth]
    assert smooth.mean() > 0.15 and np.percentile(rel, 95) <= 1e-3
    raw = np.abs(z[smooth] - truth[smooth]) / truth[smooth]      # not rectified: far off
    assert np.percentile(raw, 95) > 0.05


def test_intrinsics_follow_binning_roi_and_resize_and_bad_lenses_are_rejected():
    k = [400.0, 0, 320.0, 0, 402.0, 240.0, 0, 0, 1]
    p = [380.0, 0, 318.0, 0, 0, 381.0, 236.0, 0, 0, 0, 1, 0]
    Kr, Pr = image_intrinsics(k, p, 640, 480, (2, 2), (40, 20, 320, 240), (320, 240))
    # binned 2 and ROI (320x240 at (40, 20)) -> 160x120, then resized x2 to 320x240
    assert np.allclose(Kr, [[400.0, 0, 280.0], [0, 402.0, 220.0], [0, 0, 1]])
    assert np.allclose(Pr, [[380.0, 0, 278.0], [0, 381.0, 216.0], [0, 0, 1]])
    _, P0 = image_intrinsics(k, [0.0] * 12, 640, 480)     # P unset: the rectified camera is K
    assert np.allclose(P0, np.reshape(k, (3, 3)))
    assert has_distortion([0, 0, 0.01, 0, 0]) and not has_distortion([0.0] * 5)
    with pytest.raises(CameraModelError, match='not supported'):
        build_rectifier('kannala_brandt', K, [0.1] * 4, np.eye(3), K, W, H)
    with pytest.raises(CameraModelError, match='coefficients'):
        build_rectifier('equidistant', K, [0.1] * 5, np.eye(3), K, W, H)


def test_cache_builds_maps_once_per_calibration():
    cache, built = RectifierCache(capacity=2), []

    def build():
        built.append(1)
        return build_rectifier('plumb_bob', K, [-0.1, 0, 0, 0, 0], np.eye(3), K, W, H)
    for _ in range(5):
        cache.get('a', build)
    cache.get('b', build)
    assert cache.builds == 2 and len(built) == 2
