"""Image, intrinsics and result file I/O for the Python API and the CLI (no ROS, no torch).

Depth files follow the depth_image_proc traits (depth_traits.hpp): 16-bit PNG is millimetres with
0 for invalid / sky / beyond 65.535 m; float files keep metres with NaN invalid and +Inf sky.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import cv2
import numpy as np

from tt_depth_ros.geometry.camera.camera_model import (
    CameraModelError,
    fit_to_image,
    from_camera_arrays,
    validate_K,
)


def load_rgb(image: Any) -> np.ndarray:
    """Return (H, W, 3) uint8 RGB from a path, a PIL image or a numpy array.

    Args:
        image: File path (any format Pillow reads; converted to RGB), PIL.Image (converted to
            RGB), or a uint8 (H, W, 3) RGB numpy array (used as is).

    Raises:
        TypeError: Unsupported type. ValueError: Bad array dtype/shape, unreadable file.
    """
    if isinstance(image, (str, os.PathLike)):
        from PIL import Image, UnidentifiedImageError

        p = Path(image)
        if not p.is_file():
            raise ValueError(f'image file {p} does not exist')
        try:
            with Image.open(p) as im:
                return np.asarray(im.convert('RGB'), dtype=np.uint8).copy()
        except (UnidentifiedImageError, OSError) as e:
            raise ValueError(f'cannot read image {p}: {e}') from e
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8:
            raise ValueError(f'image array must be uint8 RGB, got dtype {image.dtype} '
                             '(convert with (x * 255).round().astype(np.uint8) if in [0, 1])')
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f'image array must be (H, W, 3) RGB, got shape {image.shape} '
                             '(convert grey/RGBA images first)')
        return image
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency
        Image = None
    if Image is not None and isinstance(image, Image.Image):
        return np.asarray(image.convert('RGB'), dtype=np.uint8).copy()
    raise TypeError(f'image must be a path, PIL image or numpy array, got {type(image).__name__}')


def intrinsics_from_args(K: Optional[np.ndarray] = None, fx: Optional[float] = None,
                         fy: Optional[float] = None, cx: Optional[float] = None,
                         cy: Optional[float] = None, width: int = 0,
                         height: int = 0) -> Optional[np.ndarray]:
    """K (3x3 float64) from a matrix or from fx, fy (+ optional cx, cy); None if nothing given.

    cx, cy default to the image centre ((W-1)/2, (H-1)/2) when fx, fy are given without them.

    Raises:
        ValueError: Both forms given, only one of fx/fy, or non-finite / non-positive focal.
    """
    given = [v is not None for v in (fx, fy, cx, cy)]
    if K is not None:
        if any(given):
            raise ValueError('give intrinsics either as K or as fx/fy/cx/cy, not both')
        K = np.asarray(K, dtype=np.float64)
    elif any(given):
        if fx is None or fy is None:
            raise ValueError('fx and fy must be given together (cx, cy are optional)')
        cx = (width - 1) / 2.0 if cx is None else cx
        cy = (height - 1) / 2.0 if cy is None else cy
        K = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]], dtype=np.float64)
    else:
        return None
    try:
        validate_K(K)
    except CameraModelError as e:
        raise ValueError(f'bad intrinsics: {e}') from e
    return K


def read_camera_info_yaml(path: str | os.PathLike, width: int, height: int) -> np.ndarray:
    """K for a width x height image from a CameraInfo YAML file.

    Accepts the camera_calibration / camera_info_manager format (image_width, camera_matrix,
    projection_matrix) and a `ros2 topic echo` dump of sensor_msgs/CameraInfo (width, k, p,
    binning_x/y, roi). P is preferred over K, binning and ROI are applied, and a different image
    size is scaled explicitly (rejected if the aspect differs) - geometry/camera/camera_model.py.
    """
    import yaml

    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict):
        raise ValueError(f'{path}: not a CameraInfo YAML mapping')
    try:
        if 'camera_matrix' in doc:
            k = doc['camera_matrix']['data']
            p = doc.get('projection_matrix', {}).get('data', [0.0] * 12)
            cam = from_camera_arrays(k, p, doc.get('image_width', 0), doc.get('image_height', 0))
        elif 'k' in doc:
            roi = doc.get('roi') or {}
            cam = from_camera_arrays(doc['k'], doc.get('p', [0.0] * 12), doc.get('width', 0),
                                     doc.get('height', 0), doc.get('binning_x', 0),
                                     doc.get('binning_y', 0),
                                     (roi.get('x_offset', 0), roi.get('y_offset', 0),
                                      roi.get('width', 0), roi.get('height', 0)))
        else:
            raise ValueError(f'{path}: no camera_matrix or k entry')
        K, _ = fit_to_image(cam, width, height)
    except (KeyError, TypeError, CameraModelError) as e:
        raise ValueError(f'{path}: bad CameraInfo YAML ({type(e).__name__}: {e})') from e
    return K


def depth_to_mm16(depth_m: np.ndarray) -> np.ndarray:
    """uint16 millimetres; 0 for NaN, +-Inf, <= 0 and anything beyond 65.535 m."""
    d = np.asarray(depth_m, dtype=np.float64)
    ok = np.isfinite(d) & (d > 0)
    mm = np.zeros(d.shape, dtype=np.float64)
    mm[ok] = np.rint(d[ok] * 1000.0)
    mm[mm > 65535] = 0
    return mm.astype(np.uint16)


def write_png(path: str | os.PathLike, image: np.ndarray) -> None:
    """Write uint16 (H, W) or uint8 RGB (H, W, 3) as PNG; raise on failure."""
    img = image[..., ::-1] if image.ndim == 3 else image
    if not cv2.imwrite(str(path), np.ascontiguousarray(img)):
        raise OSError(f'could not write {path}')


def write_ply(path: str | os.PathLike, points: np.ndarray,
              rgb: Optional[np.ndarray] = None) -> int:
    """Write finite (N, 3) points (+ optional (N, 3) uint8 colours) as binary little-endian PLY.

    Returns:
        Number of points written (non-finite rows dropped).
    """
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    keep = np.all(np.isfinite(pts), axis=1)
    pts = pts[keep]
    fields = [('x', '<f4'), ('y', '<f4'), ('z', '<f4')]
    if rgb is not None:
        fields += [('red', 'u1'), ('green', 'u1'), ('blue', 'u1')]
    rec = np.empty(len(pts), dtype=fields)
    rec['x'], rec['y'], rec['z'] = pts[:, 0], pts[:, 1], pts[:, 2]
    header = ['ply', 'format binary_little_endian 1.0', f'element vertex {len(pts)}',
              'property float x', 'property float y', 'property float z']
    if rgb is not None:
        col = np.asarray(rgb, dtype=np.uint8).reshape(-1, 3)[keep]
        rec['red'], rec['green'], rec['blue'] = col[:, 0], col[:, 1], col[:, 2]
        header += ['property uchar red', 'property uchar green', 'property uchar blue']
    header.append('end_header')
    with open(path, 'wb') as f:
        f.write(('\n'.join(header) + '\n').encode('ascii'))
        f.write(rec.tobytes())
    return len(pts)
