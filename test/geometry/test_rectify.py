"""geometry/camera/rectify.py: remap tables per lens model, the scaled intrinsics, the cache.

The distorted views are ray-cast with the exact inverse lens model (pixel_rays), so the rectified
depth map must equal the pinhole render with P wherever the surface is smooth (bilinear remap of
a smooth depth field: relative error <= 1e-3 on 95 % of those pixels).

Stereo rigs rectify with a rotation R != I (cv2.stereoRectify): the remap tables must send each
rectified pixel to where the lens model puts the 3-D point on its ray, rotated back by R^T
(projected independently with cv2.projectPoints / cv2.fisheye.projectPoints), and a rendered
distorted view must rectify to the view rendered with P from the rotated camera.

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


def _rot(axis, deg):
    return cv2.Rodrigues(np.asarray(axis, float) / np.linalg.norm(axis) * np.radians(deg))[0]


# camera 2 of the rig in camera 1's coordinates as OpenCV wants it (x2 = R x1 + T): 6 degrees
# apart, 12 cm baseline with a little height and depth offset, so both rectifying rotations are
# about 6 degrees
RIG_R, RIG_T = _rot([0.2, 1.0, 0.1], 6.0), np.array([-0.12, 0.01, 0.008])


def stereo_rectification(model, d):
    """(R1, P1), (R2, P2) of the rig with this lens on both cameras, from OpenCV."""
    d = np.asarray(d, float)
    if model == 'equidistant':
        R1, R2, P1, P2, _ = cv2.fisheye.stereoRectify(
            K, d.reshape(4, 1), K, d.reshape(4, 1), (W, H), RIG_R, RIG_T.reshape(3, 1),
            flags=cv2.CALIB_ZERO_DISPARITY, balance=0.0)
    else:
        R1, R2, P1, P2, *_ = cv2.stereoRectify(K, d, K, d, (W, H), RIG_R, RIG_T, alpha=0)
    return (R1, P1[:, :3]), (R2, P2[:, :3])


def _project(model, d, X):
    """Pixels of camera-frame points X (N, 3) through the lens (OpenCV's forward model)."""
    obj = X.reshape(-1, 1, 3).astype(np.float64)
    zero = np.zeros((3, 1))
    if model == 'equidistant':
        uv, _ = cv2.fisheye.projectPoints(obj, zero, zero, K, np.asarray(d).reshape(4, 1))
    else:
        uv, _ = cv2.projectPoints(obj, zero, zero, K, np.asarray(d, float))
    return uv.reshape(-1, 2)


@pytest.mark.parametrize('model, d', [LENSES[0], LENSES[2]])
def test_stereo_rectification_applies_the_rotation(model, d):
    """R from cv2.stereoRectify: maps equal the projected points; the rendered view matches."""
    for cam, (R, P) in enumerate(stereo_rectification(model, d)):
        assert np.degrees(np.linalg.norm(cv2.Rodrigues(R)[0])) > 4.0         # far from I
        rect = build_rectifier(model, K, d, R.reshape(-1).tolist(), P, W, H)
        v, u = np.mgrid[0:H:5, 0:W:5].astype(np.float64)
        rays = np.stack([u, v, np.ones_like(u)], -1).reshape(-1, 3) @ np.linalg.inv(P).T
        src = _project(model, d, rays @ R)      # R^T: from the rectified to the camera frame
        got = np.stack([rect.map_x[0:H:5, 0:W:5], rect.map_y[0:H:5, 0:W:5]], -1).reshape(-1, 2)
        inside = (src[:, 0] > 0) & (src[:, 0] < W - 1) & (src[:, 1] > 0) & (src[:, 1] < H - 1)
        assert inside.mean() > 0.8
        err = np.linalg.norm(got[inside] - src[inside], axis=1)
        assert err.max() < 0.02, (cam, float(err.max()))
        # the image: range (invariant to the rotation about the optical centre) rendered
        # through the lens, rectified, against the pinhole P render of the rotated camera
        lens_rays = pixel_rays(model, K, d, W, H)
        _, z = render(default_scene(), K, W, H, POSE, rays_cam=lens_rays)
        rng = (z.reshape(-1) * np.linalg.norm(lens_rays, axis=1)).reshape(H, W)
        T_rect = POSE.copy()
        T_rect[:3, :3] = POSE[:3, :3] @ R.T
        _, z_rect = render(default_scene(), P, W, H, T_rect)
        vv, uu = np.mgrid[0:H, 0:W].astype(np.float64)
        norm = np.linalg.norm(np.stack([(uu - P[0, 2]) / P[0, 0], (vv - P[1, 2]) / P[1, 1],
                                        np.ones_like(uu)], -1), axis=-1)
        truth = z_rect * norm
        got_rng = rect(np.where(np.isfinite(rng), rng, 1e3).astype(np.float32))
        t = np.where(np.isfinite(truth), truth, 1e3).astype(np.float32)
        smooth = np.isfinite(truth) & rect.valid & (
            cv2.dilate(t, np.ones((5, 5))) - cv2.erode(t, np.ones((5, 5))) < 0.08 * t)
        rel = np.abs(got_rng[smooth] - truth[smooth]) / truth[smooth]
        assert smooth.mean() > 0.15 and np.percentile(rel, 95) <= 1e-3, (cam, smooth.mean())


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
