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

Borders: a rectified pixel whose map coordinate falls outside the source image (P computed with
alpha > 0, a fisheye) is black, not scene. `Rectifier.valid` marks the pixels whose bilinear
support lies inside the source (built once with the maps); `valid_on_grid` carries that mask,
conservatively, to a network grid, so every depth derived from the rectified image can mark the
border invalid (REP 117) instead of publishing the network's guess for black pixels.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import cv2
import numpy as np

from tt_depth_ros.geometry.camera.camera_model import (
    CameraModelError,
    fit_to_image,
    from_camera_arrays,
)

DISTORTION_MODELS = ('plumb_bob', 'rational_polynomial', 'equidistant')
MAP_EDGE_TOL = 1e-3   # px
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
    valid: np.ndarray = None   # (H, W) bool: map inside the source image (from the maps)
    _grids: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.valid is None:
            object.__setattr__(self, 'valid', valid_from_maps(self.map_x, self.map_y))

    @property
    def all_valid(self) -> bool:
        """True when no rectified pixel maps outside the source (no border to mask)."""
        return bool(self.valid.all())

    def valid_grid(self, out_hw: tuple[int, int]) -> np.ndarray:
        """`valid_on_grid(self.valid, out_hw)`, cached per size (a stream keeps its grid)."""
        key = (int(out_hw[0]), int(out_hw[1]))
        if key not in self._grids:
            self._grids[key] = valid_on_grid(self.valid, key)
        return self._grids[key]

    def mark_invalid(self, depth: np.ndarray) -> np.ndarray:
        """`depth` (the rectified image's size or a network grid of it) with NaN on the border.

        NaN is REP 117's "invalid" (0 once encoded as 16UC1; NaN points in clouds).
        """
        valid = self.valid if depth.shape == self.valid.shape else self.valid_grid(depth.shape)
        return np.where(valid, depth, np.float32(np.nan)).astype(np.float32, copy=False)

    def valid_window(self, resized_wh: tuple[int, int],
                     box_ltrb: tuple[int, int, int, int]) -> np.ndarray:
        """The mask on a resize-to-`resized_wh`-then-window grid (DUSt3R's plan), cached.

        Pixels of the window outside the resized image (padding) are invalid too.
        """
        key = (tuple(int(v) for v in resized_wh), tuple(int(v) for v in box_ltrb))
        if key not in self._grids:
            (wr, hr), (left, top, right, bottom) = key
            resized = self.valid_grid((hr, wr))
            win = np.zeros((bottom - top, right - left), dtype=bool)
            x0, y0, x1, y1 = max(left, 0), max(top, 0), min(right, wr), min(bottom, hr)
            win[y0 - top:y1 - top, x0 - left:x1 - left] = resized[y0:y1, x0:x1]
            self._grids[key] = win
        return self._grids[key]

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """Rectify one image (bilinear, black outside the source, like image_proc)."""
        h, w = self.map_x.shape
        if image.shape[:2] != (h, w):
            raise ValueError(f'rectifier is for {w}x{h} images, got {image.shape[1]}x'
                             f'{image.shape[0]}')
        return cv2.remap(image, self.map_x, self.map_y, cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def valid_from_maps(map_x: np.ndarray, map_y: np.ndarray) -> np.ndarray:
    """Pixels whose source coordinate lies in [0, W-1] x [0, H-1] (maps are (H, W) = source size).

    Bilinear interpolation of those reads only source pixels; anything else blends with the black
    outside, or is all black. MAP_EDGE_TOL absorbs the maps' float rounding at an exact edge (P = K
    maps row 0 to about -1e-7); cv2.remap gives such a sliver (< 1/64 px) no weight anyway.
    """
    h, w = map_x.shape
    t = MAP_EDGE_TOL
    return ((map_x >= -t) & (map_x <= w - 1 + t) & (map_y >= -t) & (map_y <= h - 1 + t))


def valid_on_grid(valid: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """A validity mask resampled to `out_hw` (H, W), never claiming a pixel that touches a border.

    A grid pixel is valid when its whole footprint in the source mask is valid (area average
    exactly 1) and so are its 8 neighbours: image resizes read beyond the footprint (cubic,
    Lanczos: up to about 1.5 grid pixels), so one grid pixel of margin keeps black out of them.
    """
    valid = np.asarray(valid, dtype=bool)
    out_h, out_w = (int(v) for v in out_hw)
    if (out_h, out_w) == valid.shape:
        return valid.copy()   # no resize: nothing reads beyond the pixel
    frac = cv2.resize(valid.astype(np.float32), (out_w, out_h), interpolation=cv2.INTER_AREA)
    grid = frac >= 1.0 - 1e-6
    if grid.all():
        return grid
    return cv2.erode(grid.astype(np.uint8), np.ones((3, 3), np.uint8),
                     borderType=cv2.BORDER_CONSTANT, borderValue=1).astype(bool)


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
    elif hasattr(cv2, 'undistortPointsIter'):   # OpenCV 4.x (ROS's python3-opencv): criteria here
        xy = cv2.undistortPointsIter(pix, K, d, None, None, crit)
    else:                                        # OpenCV 5.x folded it into undistortPoints
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
