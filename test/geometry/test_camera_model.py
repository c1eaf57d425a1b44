"""camera_model: image_geometry's P/K, binning and ROI rules; explicit scaling; rejections."""
import numpy as np
import pytest

from tt_depth_ros.geometry.camera.camera_model import (
    CameraModelError,
    fit_to_image,
    from_camera_arrays,
    projection_from_K,
    scale_K,
    validate_K,
)

K9 = [500.0, 0.0, 320.0, 0.0, 510.0, 240.0, 0.0, 0.0, 1.0]
P12 = [400.0, 0.0, 300.0, -40.0, 0.0, 405.0, 250.0, 0.0, 0.0, 0.0, 1.0, 0.0]


def test_p_wins_over_k_and_k_is_fallback():
    cam = from_camera_arrays(K9, P12, 640, 480)
    assert cam.K[0, 0] == 400.0 and cam.K[1, 1] == 405.0
    assert (cam.K[0, 2], cam.K[1, 2]) == (300.0, 250.0)
    assert cam.Tx == -40.0 and (cam.width, cam.height) == (640, 480)
    cam = from_camera_arrays(K9, [0.0] * 12, 640, 480)
    np.testing.assert_array_equal(cam.K, np.array(K9).reshape(3, 3))
    assert cam.Tx == 0.0


@pytest.mark.parametrize('bx,by,roi', [(2, 2, (0, 0, 0, 0)), (1, 1, (100, 50, 320, 240)),
                                       (2, 4, (64, 32, 512, 384)), (0, 0, (10, 20, 200, 100))])
def test_binning_and_roi_like_image_geometry(bx, by, roi):
    cam = from_camera_arrays(K9, P12, 640, 480, bx, by, roi)
    bx1, by1 = bx or 1, by or 1
    assert cam.K[0, 0] == pytest.approx(400.0 / bx1)
    assert cam.K[1, 1] == pytest.approx(405.0 / by1)
    assert cam.K[0, 2] == pytest.approx((300.0 - roi[0]) / bx1)
    assert cam.K[1, 2] == pytest.approx((250.0 - roi[1]) / by1)
    full = (roi[2], roi[3]) if roi[2] else (640, 480)
    assert (cam.width, cam.height) == (full[0] // bx1, full[1] // by1)
    assert cam.Tx == pytest.approx(-40.0 / bx1)


@pytest.mark.parametrize('bad', [0.0, -1.0, np.nan, np.inf])
def test_invalid_focal_rejected(bad):
    p = list(P12)
    p[0] = bad
    with pytest.raises(CameraModelError):
        from_camera_arrays(K9, p, 640, 480)
    k = list(K9)
    k[4] = bad
    with pytest.raises(CameraModelError):
        from_camera_arrays(k, [0.0] * 12, 640, 480)


def test_nan_principal_point_and_bad_lengths_rejected():
    p = list(P12)
    p[6] = np.nan
    with pytest.raises(CameraModelError):
        from_camera_arrays(K9, p, 640, 480)
    with pytest.raises(CameraModelError):
        from_camera_arrays(K9[:8], P12, 640, 480)


def test_fit_scales_explicitly_and_rejects_aspect_mismatch():
    cam = from_camera_arrays(K9, [0.0] * 12, 640, 480)
    K, scaled = fit_to_image(cam, 640, 480)
    assert not scaled
    K, scaled = fit_to_image(cam, 320, 240)
    assert scaled
    np.testing.assert_allclose(K, [[250, 0, 160], [0, 255, 120], [0, 0, 1]])
    with pytest.raises(CameraModelError, match='aspect'):
        fit_to_image(cam, 640, 360)
    unsized = from_camera_arrays(K9, [0.0] * 12, 0, 0)
    K, scaled = fit_to_image(unsized, 1024, 768)
    assert not scaled and K[0, 0] == 500.0


def test_scale_default_projection():
    K = scale_K(np.array(K9).reshape(3, 3), 0.5, 2.0)
    np.testing.assert_allclose(K, [[250, 0, 160], [0, 1020, 480], [0, 0, 1]])
    P = projection_from_K(K, -3.0)
    assert P.shape == (3, 4) and P[0, 3] == -3.0 and np.all(P[:, :3] == K)
    with pytest.raises(CameraModelError):
        validate_K(np.eye(2))
