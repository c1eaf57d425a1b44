"""DA3 input geometry: network size, the upstream two-step resize and the intrinsics it implies.

Mirrors upstream Depth-Anything-3 `utils/io/input_processor.py` with its defaults
(`process_res=504`, `process_res_method='upper_bound_resize'`), docs/da3.md §4:

1. Long side to `process_res`: s = process_res / max(W, H); each side max(1, round(dim * s))
   with Python `round`; cv2.resize on uint8, INTER_AREA if s < 1, INTER_CUBIC if s > 1; unchanged
   when the long side already equals process_res.
2. Each side to its *nearest* multiple of 14 (a tie goes up), by a second cv2.resize of step 1's
   result: INTER_CUBIC if either side grows, else INTER_AREA. The aspect ratio is kept to within the
   snap (never squashed to a square).
3. Intrinsics: row 0 (fx, skew, cx) scales by W'/W, row 1 (fy, cy) by H'/H, no half-pixel shift.

A fixed network size (what a traced engine wants) is a single explicit resize; it may change the
aspect, and the intrinsics then carry fx' != fy' exactly.
"""
from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

from tt_depth_ros.geometry.preprocess.image_checks import check_rgb_u8

PATCH = 14
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _snap14(x: int) -> int:
    """Nearest multiple of 14; an exact tie (remainder 7) goes up."""
    down = (x // PATCH) * PATCH
    return down + PATCH if x - down >= PATCH / 2 else down


def _check_wh(width: int, height: int) -> None:
    if int(width) != width or int(height) != height or width < 1 or height < 1:
        raise ValueError(f'image size must be positive integers, got width={width}, '
                         f'height={height}')


def upper_bound_size(width: int, height: int, process_res: int = 504) -> tuple[int, int]:
    """Step 1 size (w, h): long side to `process_res`, Python round, at least 1."""
    _check_wh(width, height)
    if max(width, height) == process_res:
        return int(width), int(height)
    s = process_res / max(width, height)
    return max(1, int(round(width * s))), max(1, int(round(height * s)))


def network_size(width: int, height: int, process_res: int = 504,
                 fixed_size: Optional[tuple[int, int]] = None) -> tuple[int, int]:
    """Network input size (net_h, net_w) for a width x height camera image.

    Args:
        width: Camera image width in pixels.
        height: Camera image height in pixels.
        process_res: Long side target of the upstream upper-bound resize (default 504).
        fixed_size: (h, w) to force instead, both positive multiples of 14.

    Returns:
        (net_h, net_w), both multiples of 14.

    Raises:
        ValueError: A bad size, a fixed size that is not a multiple of 14, or an aspect so extreme
            that a side would be smaller than one 14 px patch.
    """
    _check_wh(width, height)
    if fixed_size is not None:
        h, w = (int(v) for v in fixed_size)
        if h < PATCH or w < PATCH or h % PATCH or w % PATCH:
            raise ValueError(f'fixed_size={tuple(fixed_size)} must be (h, w) positive multiples '
                             f'of {PATCH}')
        return h, w
    if int(process_res) != process_res or process_res < PATCH:
        raise ValueError(f'process_res={process_res} must be an integer >= {PATCH}')
    w1, h1 = upper_bound_size(width, height, process_res)
    net_h, net_w = _snap14(h1), _snap14(w1)
    if net_h < PATCH or net_w < PATCH:
        raise ValueError(f'a {width}x{height} image at process_res={process_res} gives a '
                         f'{w1}x{h1} network image, smaller than one {PATCH} px patch; crop it '
                         'to a less extreme aspect ratio or use fixed_size')
    return net_h, net_w


_FLOAT_AREA_MAX_PIXELS = 1 << 19
"""Largest source (pixels) resized via float32: the float kernel is faster for camera-sized
sources, but above this the 4x larger float copy of the source outweighs the kernel (CPU time,
an estimate: compare with the uint8 path on your CPU). Results are the same either way."""


def _resize(img: np.ndarray, w: int, h: int, grow: bool) -> np.ndarray:
    if grow:
        return cv2.resize(img, (w, h), interpolation=cv2.INTER_CUBIC)
    src_h, src_w = img.shape[:2]
    if (src_w % w == 0 and src_h % h == 0    # integer factors: OpenCV's integer box-filter path
            or src_w * src_h > _FLOAT_AREA_MAX_PIXELS):
        return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)
    # Fractional factors: uint8 and float32 INTER_AREA run the same kernel (same weight tables,
    # float32 accumulation in the same order); the float32 instance is faster on small sources, and
    # storing its result as the uint8 one does (round half to even, saturate) gives the same bytes.
    area = cv2.resize(img.astype(np.float32), (w, h), interpolation=cv2.INTER_AREA)
    return cv2.convertScaleAbs(area)


def resize_to_network(image_rgb_u8: np.ndarray, net_hw: tuple[int, int],
                      process_res: Optional[int] = None) -> np.ndarray:
    """Resize a camera image to the network grid exactly as upstream does.

    When `net_hw` is what `network_size` gives for this image (with `process_res`, or with
    process_res = max(net_hw) when None, true for the default 504), the upstream two-step chain
    runs. Any other `net_hw` (a fixed size) is one cv2.resize: INTER_CUBIC if a side grows, else
    INTER_AREA.

    Args:
        image_rgb_u8: (H, W, 3) uint8 RGB camera image.
        net_hw: Target (net_h, net_w).
        process_res: The process_res that produced net_hw, if not the default rule.

    Returns:
        (net_h, net_w, 3) uint8 RGB, C-contiguous.
    """
    check_rgb_u8(image_rgb_u8)
    img = image_rgb_u8
    for (h, w), grow in resize_steps(image_rgb_u8.shape[:2], net_hw, process_res):
        img = _resize(img, w, h, grow)
    return np.ascontiguousarray(img)


def resize_steps(src_hw: tuple[int, int], net_hw: tuple[int, int],
                 process_res: Optional[int] = None) -> list[tuple[tuple[int, int], bool]]:
    """The cv2 resizes `resize_to_network` runs, in order: [((h, w) after it, grows)].

    The upstream two-step chain when `net_hw` is what `network_size` gives with `process_res`
    (or max(net_hw) when None), else one direct resize (a fixed size); empty when the image
    already has the network size. `grows` picks INTER_CUBIC over INTER_AREA. The host resize and
    the device's matrices (resize_map.py) both follow this plan.
    """
    (h, w), (net_h, net_w) = (tuple(int(v) for v in src_hw), tuple(int(v) for v in net_hw))
    pr = int(process_res) if process_res is not None else max(net_h, net_w)
    try:
        chain = network_size(w, h, pr) == (net_h, net_w)
    except ValueError:
        chain = False
    steps = []
    if chain:
        w1, h1 = upper_bound_size(w, h, pr)
        if (w1, h1) != (w, h):
            steps.append(((h1, w1), pr / max(w, h) > 1))
        if (net_w, net_h) != (w1, h1):
            steps.append(((net_h, net_w), net_w > w1 or net_h > h1))
    elif (net_w, net_h) != (w, h):
        steps.append(((net_h, net_w), net_w > w or net_h > h))
    return steps


def scale_intrinsics(K: np.ndarray, src_wh: tuple[int, int], dst_wh: tuple[int, int]) -> np.ndarray:
    """Intrinsics after resizing an image from src_wh to dst_wh (DA3 convention).

    Row 0 (fx, skew, cx) is multiplied by dst_w/src_w and row 1 (fy, cy) by dst_h/src_h; there is no
    half-pixel correction (upstream `input_processor.py`).

    Args:
        K: 3x3 camera matrix at src_wh.
        src_wh: (width, height) the matrix refers to.
        dst_wh: (width, height) of the resized image.

    Returns:
        3x3 float64 camera matrix at dst_wh.
    """
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3):
        raise ValueError(f'K must be 3x3, got shape {K.shape}')
    check_focal(K[0, 0], K[1, 1])
    sw, sh = (float(v) for v in src_wh)
    dw, dh = (float(v) for v in dst_wh)
    if min(sw, sh, dw, dh) <= 0:
        raise ValueError(f'sizes must be positive: src_wh={src_wh}, dst_wh={dst_wh}')
    out = K.copy()
    out[0] *= dw / sw
    out[1] *= dh / sh
    return out


def check_focal(fx: float, fy: float) -> None:
    """Raise ValueError unless fx and fy are finite and positive."""
    for name, v in (('fx', fx), ('fy', fy)):
        v = float(v)
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f'{name}={v} must be a finite positive focal length in pixels')


def normalize(image_rgb_u8: np.ndarray) -> np.ndarray:
    """ImageNet-normalised (3, H, W) float32 of a uint8 RGB image (reference for the engines)."""
    check_rgb_u8(image_rgb_u8)
    x = image_rgb_u8.astype(np.float32) / np.float32(255.0)
    x = (x - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))
