"""Rectification of distorted camera images, like image_proc's rectify node (OpenCV, no ROS).

The networks assume a pinhole camera. A CameraInfo with non-zero D describes a lens that is not
one: its image must be rectified first, with the calibration's K, D, R and the rectified
projection P, exactly as image_geometry's `rectifyImage` does (cv2.initUndistortRectifyMap, or
cv2.fisheye for the `equidistant` model; bilinear interpolation). The rectified image is then the
pinhole camera P describes, which every later step (network intrinsics, metric scale, clouds,
the published CameraInfo with D = 0) already reads.

Binning and ROI: K and P are reduced like image_geometry does (fx/binning, cx - roi.x, ...); D and
R act on normalised coordinates and stay. An image of another size but the same aspect as the
reduced CameraInfo is a plain resize: both K and P are scaled to it.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import cv2
import numpy as np

from tt_depth_ros.geometry.camera_model import CameraModelError, fit_to_image, from_camera_arrays

DISTORTION_MODELS = ('plumb_bob', 'rational_polynomial', 'equidistant')
_COEFFS = {'plumb_bob': (5,), 'rational_polynomial': (8, 12, 14), 'equidistant': (4,)}


def has_distortion(d) -> bool:
    """Whether distortion coefficients D describe anything but a pinhole (any non-zero)."""
    return bool(np.any(np.asarray(d, dtype=np.float64) != 0.0))


def _check_model(model: str, d: np.ndarray) -> np.ndarray:
    if model not in DISTORTION_MODELS:
        raise CameraModelError(f'distortion_model {model!r} is not supported for rectification; '
                               f'supported: {DISTORTION_MODELS} (or publish rectified images and '
                               "set rectify:='disabled')")
    if d.size not in _COEFFS[model]:
        raise CameraModelError(f'distortion_model {model!r} needs {_COEFFS[model]} coefficients '
                               f'in D, got {d.size}')
    if not np.all(np.isfinite(d)):
        raise CameraModelError(f'D contains NaN/Inf: {d.tolist()}')
    return d


@dataclass(frozen=True)
class Rectifier:
    """Remap tables from one distorted camera image to its rectified pinhole image."""

    map_x: np.ndarray    # (H, W) float32 source column per rectified pixel
    map_y: np.ndarray    # (H, W) float32 source row per rectified pixel
    K_rect: np.ndarray   # 3x3 intrinsics of the rectified image (P's left 3x3, same size)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """Rectify one image (bilinear, black outside the source, like image_proc)."""
        h, w = self.map_x.shape
        if image.shape[:2] != (h, w):
            raise ValueError(f'rectifier is for {w}x{h} images, got {image.shape[1]}x'
                             f'{image.shape[0]}')
        return cv2.remap(image, self.map_x, self.map_y, cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def image_intrinsics(k, p, cam_w: int, cam_h: int, binning=(0, 0), roi=(0, 0, 0, 0),
                     image_wh: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(K, P 3x3) of the calibration reduced by binning/ROI and scaled to the image size."""
    k = np.asarray(k, dtype=np.float64).reshape(-1)
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if not np.any(p != 0.0):
        p = np.concatenate([k.reshape(3, 3), np.zeros((3, 1))], axis=1).reshape(-1)
    cam_k = from_camera_arrays(k, np.zeros(12), cam_w, cam_h, *binning, roi)   # K, reduced
    cam_p = from_camera_arrays(k, p, cam_w, cam_h, *binning, roi)              # P, reduced
    if image_wh is None:
        return cam_k.K, cam_p.K
    return fit_to_image(cam_k, *image_wh)[0], fit_to_image(cam_p, *image_wh)[0]


def build_rectifier(model: str, K: np.ndarray, d, R, P: np.ndarray, width: int,
                    height: int) -> Rectifier:
    """Remap tables for a `width` x `height` image (K and P already at that image size).

    Args:
        model: CameraInfo.distortion_model ('plumb_bob', 'rational_polynomial', 'equidistant').
        K: 3x3 intrinsics of the distorted image.
        d: distortion coefficients D.
        R: 3x3 rectification rotation (9 values; identity for a monocular camera).
        P: 3x3 intrinsics of the rectified image (P's left 3x3).
        width: image width.
        height: image height.

    Raises:
        CameraModelError: unsupported model, wrong number of coefficients or non-finite values.
    """
    d = _check_model(model, np.asarray(d, dtype=np.float64).reshape(-1))
    R = np.asarray(R, dtype=np.float64).reshape(3, 3)
    if not np.any(R != 0.0):
        R = np.eye(3)   # an unset R means no rectification rotation (image_geometry does alike)
    K = np.asarray(K, dtype=np.float64)
    P = np.asarray(P, dtype=np.float64)[:3, :3]
    size = (int(width), int(height))
    if model == 'equidistant':
        mx, my = cv2.fisheye.initUndistortRectifyMap(K, d.reshape(4, 1), R, P, size,
                                                     cv2.CV_32FC1)
    else:
        mx, my = cv2.initUndistortRectifyMap(K, d, R, P, size, cv2.CV_32FC1)
    return Rectifier(mx, my, P.copy())


def pixel_rays(model: str, K: np.ndarray, d, width: int, height: int) -> np.ndarray:
    """Camera-frame ray (x, y, 1) of every pixel of a distorted image, (H*W, 3) row-major.

    The inverse of the lens model (cv2.undistortPoints / cv2.fisheye.undistortPoints); used to
    render synthetic distorted images with exact geometry and to back-project raw pixels.
    """
    d = _check_model(model, np.asarray(d, dtype=np.float64).reshape(-1))
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    pix = np.stack([u, v], -1).reshape(-1, 1, 2)
    K = np.asarray(K, dtype=np.float64)
    crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    if model == 'equidistant':
        xy = cv2.fisheye.undistortPoints(pix, K, d.reshape(4, 1), None, None, None, crit)
    else:
        xy = cv2.undistortPoints(pix, K, d, None, None, None, crit)
    xy = xy.reshape(-1, 2)
    return np.concatenate([xy, np.ones((xy.shape[0], 1))], axis=1)


class RectifierCache:
    """Rectifiers by calibration (maps are built once per CameraInfo content; bounded)."""

    def __init__(self, capacity: int = 4) -> None:
        self._cap = capacity
        self._items: OrderedDict = OrderedDict()
        self.builds = 0

    def get(self, key, build) -> Rectifier:
        """The cached rectifier for `key` (hashable), else `build()` stored under it."""
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        rect = build()
        self.builds += 1
        self._items[key] = rect
        while len(self._items) > self._cap:
            self._items.popitem(last=False)
        return rect

    def clear(self) -> None:
        self._items.clear()
