"""geometry/camera/rectify.py: remap tables per lens model, the scaled intrinsics, the cache.

The distorted views are ray-cast with the exact inverse lens model (pixel_rays), so the rectified
depth map must equal the pinhole render with P wherever the surface is smooth (bilinear remap of
a smooth depth field: relative error <= 1e-3 on 95 % of those pixels).

Borders: the validity mask must be exactly the pixels whose source coordinate lies inside the
image, checked against a zoom-out (P's focal half of K's, no distortion) where that coordinate is
known in closed form, and it must survive resampling to a network grid conservatively.
"""
import cv2
import numpy as np
import pytest

from tt_depth_ros.geometry.camera.camera_model import CameraModelError
from tt_depth_ros.geometry.camera.rectify import (
    RectifierCache,
    build_rectifier,
    has_distortion,
    image_intrinsics,
    pixel_rays,
    valid_on_grid,
)
from tt_depth_ros.tools.eval.scene_render import camera_pose, default_scene, render

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


def test_border_mask_is_the_analytic_inside_of_the_source_image():
    w, h = 80, 60
    k = np.array([[100.0, 0.0, 39.5], [0.0, 100.0, 29.5], [0.0, 0.0, 1.0]])
    p = np.array([[50.0, 0.0, 40.3], [0.0, 50.0, 30.2], [0.0, 0.0, 1.0]])   # zoomed out: borders
    rect = build_rectifier('plumb_bob', k, [0.0] * 5, np.eye(3), p, w, h)
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    x = k[0, 2] + (u - p[0, 2]) * k[0, 0] / p[0, 0]      # source column of rectified (u, v)
    y = k[1, 2] + (v - p[1, 2]) * k[1, 1] / p[1, 1]
    expected = (x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1)
    assert 0.2 < expected.mean() < 0.5 and not rect.all_valid
    assert np.array_equal(rect.valid, expected)
    depth = rect.mark_invalid(np.ones((h, w), np.float32))
    assert np.array_equal(np.isnan(depth), ~expected)
    white = rect(np.full((h, w, 3), 255, np.uint8))
    assert (white[expected] == 255).all()                    # inside: only source pixels read
    far = (x < -1) | (x > w) | (y < -1) | (y > h)
    assert (white[far] == 0).all()                           # beyond: only black


def test_border_mask_on_a_network_grid_never_claims_a_border_pixel():
    d = np.array([0.08, -0.02, 0.004, -0.001])
    P = cv2.fisheye.estimateNewCameraMatrixForUndistortRectify(K, d.reshape(4, 1), (W, H),
                                                                np.eye(3), balance=1.0)
    rect = build_rectifier('equidistant', K, d, np.eye(3), P, W, H)
    assert 0.01 < (~rect.valid).mean() < 0.2
    gh, gw = 42, 56                                          # 2.86x / 2.86x down, not integer
    grid = rect.valid_grid((gh, gw))
    assert grid is rect.valid_grid((gh, gw))                 # cached
    sy, sx = H / gh, W / gw
    for i, j in zip(*np.nonzero(grid)):                      # footprint + one grid pixel valid
        y0, y1 = int((i - 1) * sy), int(np.ceil((i + 2) * sy))
        x0, x1 = int((j - 1) * sx), int(np.ceil((j + 2) * sx))
        assert rect.valid[max(y0, 0):y1, max(x0, 0):x1].all(), (i, j)
    inner = cv2.erode(rect.valid.astype(np.uint8), np.ones((15, 15), np.uint8)).astype(bool)
    assert grid.mean() >= cv2.resize(inner.astype(np.uint8), (gw, gh),
                                     interpolation=cv2.INTER_NEAREST).mean() - 0.02
    assert np.array_equal(np.isnan(rect.mark_invalid(np.zeros((gh, gw), np.float32))), ~grid)
    win = rect.valid_window((56, 42), (-4, -3, 60, 45))      # 'pad': window past the image
    assert win.shape == (48, 64) and not win[:3].any() and not win[:, :4].any()
    assert np.array_equal(win[3:45, 4:60], grid)
    assert valid_on_grid(np.ones((H, W), bool), (gh, gw)).all()
