"""Pinhole camera math from CameraInfo arrays, mirroring ROS image_geometry's PinholeCameraModel.

image_geometry reads the rectified projection P (falls back to K when P is all zero) and applies
binning and ROI: fx = P[0]/bx, fy = P[5]/by, cx = (P[2] - roi.x)/bx, cy = (P[6] - roi.y)/by
(binning 0 means 1). The image it describes then has the "reduced resolution" (ROI size, or the
full size when the ROI is empty, divided by binning). Resizing follows image_proc's Resize node:
row 0 of K (fx, skew, cx) scales with the width ratio, row 1 (fy, cy) with the height ratio.
Pure numpy: no rclpy, so the same math serves the ROS layer, the API and the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Relative aspect-ratio disagreement tolerated when a CameraInfo is scaled to another image size;
# beyond it the CameraInfo almost certainly belongs to another camera or crop (rejected, not fixed).
ASPECT_TOLERANCE = 0.02


class CameraModelError(ValueError):
    """Intrinsics that cannot describe the image (non-finite, fx <= 0, incompatible size)."""


@dataclass(frozen=True)
class CameraGeometry:
    """Intrinsics K (3x3 float64) valid for an image of `width` x `height` pixels."""

    K: np.ndarray
    width: int
    height: int
    Tx: float = 0.0   # P[0,3] after binning (stereo baseline term -fx*B), carried to outputs
    Ty: float = 0.0   # P[1,3] after binning


def _binning(b: int) -> int:
    return 1 if int(b) == 0 else int(b)


def from_camera_arrays(k: np.ndarray, p: np.ndarray, width: int, height: int,
                       binning_x: int = 0, binning_y: int = 0,
                       roi: tuple[int, int, int, int] = (0, 0, 0, 0)) -> CameraGeometry:
    """Camera geometry like image_geometry: P (else K) with binning and ROI applied.

    Args:
        k: the 9 values of CameraInfo.k (row-major 3x3).
        p: the 12 values of CameraInfo.p (row-major 3x4).
        width: CameraInfo.width (full sensor resolution the calibration refers to).
        height: CameraInfo.height.
        binning_x: CameraInfo.binning_x (0 means 1).
        binning_y: CameraInfo.binning_y (0 means 1).
        roi: (x_offset, y_offset, width, height) of CameraInfo.roi; width 0 means full image.

    Returns:
        CameraGeometry at the reduced resolution (ROI size or full size, divided by binning).

    Raises:
        CameraModelError: fx or fy not positive/finite, cx/cy not finite, or size unusable.
    """
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    k = np.asarray(k, dtype=np.float64).reshape(-1)
    if p.size != 12 or k.size != 9:
        raise CameraModelError(f'CameraInfo needs 9 K and 12 P values, got {k.size} and {p.size}')
    bx, by = _binning(binning_x), _binning(binning_y)
    rx, ry, rw, rh = (int(v) for v in roi)
    if np.any(p != 0.0):
        fx, fy, cx, cy, skew = p[0], p[5], p[2], p[6], p[1]
        tx, ty = p[3], p[7]
    else:
        fx, fy, cx, cy, skew = k[0], k[4], k[2], k[5], k[1]
        tx = ty = 0.0
    fx, fy, skew, tx = fx / bx, fy / by, skew / bx, tx / bx
    ty = ty / by
    cx, cy = (cx - rx) / bx, (cy - ry) / by
    full_w, full_h = (rw, rh) if rw > 0 and rh > 0 else (int(width), int(height))
    K = np.array([[fx, skew, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]], dtype=np.float64)
    validate_K(K)
    return CameraGeometry(K=K, width=full_w // bx, height=full_h // by, Tx=float(tx), Ty=float(ty))


def validate_K(K: np.ndarray) -> None:
    """Raise CameraModelError unless fx, fy > 0 and every entry is finite."""
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3):
        raise CameraModelError(f'intrinsics must be 3x3, got shape {K.shape}')
    if not np.all(np.isfinite(K)):
        raise CameraModelError(f'intrinsics contain NaN/Inf: {K[:2].ravel().tolist()}')
    if K[0, 0] <= 0.0 or K[1, 1] <= 0.0:
        raise CameraModelError(f'focal lengths must be positive, got fx={K[0, 0]} fy={K[1, 1]}')


def scale_K(K: np.ndarray, sx: float, sy: float) -> np.ndarray:
    """Intrinsics after resizing the image by (sx, sy): row 0 times sx, row 1 times sy."""
    out = np.array(K, dtype=np.float64, copy=True)
    out[0, :] *= sx
    out[1, :] *= sy
    return out


def fit_to_image(cam: CameraGeometry, width: int, height: int) -> tuple[np.ndarray, bool]:
    """Intrinsics for an image of width x height described by `cam`; explicit scaling.

    A CameraInfo without a size (width or height 0) is taken as describing the image itself.

    Returns:
        (K, scaled): K for the image and whether a resize scale was applied.

    Raises:
        CameraModelError: the aspect ratios differ by more than ASPECT_TOLERANCE.
    """
    if cam.width <= 0 or cam.height <= 0 or (cam.width == width and cam.height == height):
        return cam.K.copy(), False
    sx, sy = width / cam.width, height / cam.height
    if not math.isclose(sx, sy, rel_tol=ASPECT_TOLERANCE):
        raise CameraModelError(
            f'CameraInfo is for {cam.width}x{cam.height} but the image is {width}x{height}: '
            f'aspect ratios differ (sx={sx:.4f}, sy={sy:.4f}); publish the matching CameraInfo')
    return scale_K(cam.K, sx, sy), True


def projection_from_K(K: np.ndarray, tx: float = 0.0, ty: float = 0.0) -> np.ndarray:
    """The 3x4 P = [K | (tx, ty, 0)] published with a depth image on the same pixel grid."""
    P = np.zeros((3, 4), dtype=np.float64)
    P[:, :3] = K
    P[0, 3], P[1, 3] = tx, ty
    return P
