"""DUSt3R input preprocessing and the intrinsics it implies (docs/dust3r.md §5).

Mirrors dust3r `utils/image.py` `load_images(size=512, square_ok=False)`, written from the spec:
resize the long side to 512 with Pillow (LANCZOS when shrinking from > 512, else BICUBIC), then
centre-crop each side to a multiple of 16 (a square becomes 512x384). Portrait stays portrait.
The `pad` mode instead letterboxes the resized image into a 512x512 square and records the
padding, so every network pixel maps back to a camera pixel and padded pixels can be masked.

Both modes are one "plan": a resize to (Wr, Hr) followed by a window (left, top, right, bottom)
in resized pixels; for `pad` the window extends past the resized image (negative left/top).
Normalisation to [-1, 1] happens inside the engine, not here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from tt_depth_ros.geometry.camera.camera_model import validate_K

MODES = ('crop', 'pad')
PATCH = 16
MIN_SIDE = 16  # a smaller source has no usable content for 16-px patches


@dataclass(frozen=True)
class Dust3rPlan:
    """How one camera image becomes a network image.

    Attributes:
        src_wh: camera image (W1, H1).
        resized_wh: after the long-side resize (Wr, Hr).
        box_ltrb: network window in resized pixels; may extend outside in 'pad' mode.
        mode: 'crop' or 'pad'.
        resample: Pillow filter name used for the resize ('LANCZOS' or 'BICUBIC').
        pad_value: grey level of padded pixels (pad mode).
    """

    src_wh: tuple[int, int]
    resized_wh: tuple[int, int]
    box_ltrb: tuple[int, int, int, int]
    mode: str
    resample: str
    pad_value: int = 0

    @property
    def net_wh(self) -> tuple[int, int]:
        """Network (W, H)."""
        return self.box_ltrb[2] - self.box_ltrb[0], self.box_ltrb[3] - self.box_ltrb[1]

    @property
    def net_hw(self) -> tuple[int, int]:
        """Network (H, W), multiples of 16."""
        w, h = self.net_wh
        return h, w

    @property
    def scale_xy(self) -> tuple[float, float]:
        """Per-axis resize factors (Wr/W1, Hr/H1); they differ slightly because of rounding."""
        return self.resized_wh[0] / self.src_wh[0], self.resized_wh[1] / self.src_wh[1]

    def valid_mask(self) -> np.ndarray:
        """(H, W) bool at network res: True where the pixel comes from the camera (not padding)."""
        h, w = self.net_hw
        left, top = self.box_ltrb[:2]
        mask = np.zeros((h, w), dtype=bool)
        x0, y0 = max(0, -left), max(0, -top)
        x1 = min(w, self.resized_wh[0] - left)
        y1 = min(h, self.resized_wh[1] - top)
        mask[y0:y1, x0:x1] = True
        return mask

    def net_to_src(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Network pixel-centre coordinates -> camera pixel coordinates (OpenCV convention)."""
        sx, sy = self.scale_xy
        u = (np.asarray(x, dtype=np.float64) + self.box_ltrb[0] + 0.5) / sx - 0.5
        v = (np.asarray(y, dtype=np.float64) + self.box_ltrb[1] + 0.5) / sy - 0.5
        return u, v


def network_size(width: int, height: int, size: int = 512, mode: str = 'crop',
                 pad_value: int = 0) -> Dust3rPlan:
    """Plan the resize and crop/pad of a `width` x `height` camera image.

    Args:
        width: camera image width W1 (pixels).
        height: camera image height H1.
        size: long side after resizing (512 for the released checkpoint); a multiple of 16.
        mode: 'crop' (upstream: centre crop to multiples of 16, square -> 4:3) or 'pad'
            (letterbox into size x size, padding recorded).
        pad_value: grey level (0..255) of padding in 'pad' mode.

    Returns:
        The plan; `plan.net_hw` is the network input size.

    Raises:
        ValueError: non-positive or tiny sizes, unknown mode, or a size that is not x16.
    """
    if mode not in MODES:
        raise ValueError(f'dust3r preprocess mode {mode!r} is not one of {MODES}')
    if int(size) != size or size < 64 or size % PATCH:
        raise ValueError(f'dust3r size {size} must be a multiple of {PATCH} and >= 64 (512 used)')
    if not (0 <= int(pad_value) <= 255):
        raise ValueError(f'pad_value {pad_value} must be a grey level 0..255')
    w1, h1 = int(width), int(height)
    if w1 != width or h1 != height or min(w1, h1) < MIN_SIDE:
        raise ValueError(f'image size {width}x{height} is too small or not integral: both sides '
                         f'must be >= {MIN_SIDE} px')
    s = max(w1, h1)
    # Python round (ties to even), as upstream
    wr, hr = int(round(w1 * size / s)), int(round(h1 * size / s))
    resample = 'LANCZOS' if s > size else 'BICUBIC'
    if mode == 'pad':
        left, top = -((size - wr) // 2), -((size - hr) // 2)
        box = (left, top, left + size, top + size)
    else:
        cx, cy = wr // 2, hr // 2
        half_w = ((2 * cx) // PATCH) * (PATCH // 2)
        half_h = ((2 * cy) // PATCH) * (PATCH // 2)
        if wr == hr:
            half_h = 3 * half_w // 4  # square inputs become 4:3 landscape (upstream rule)
        box = (cx - half_w, cy - half_h, cx + half_w, cy + half_h)
        if half_w < PATCH // 2 or half_h < PATCH // 2:
            raise ValueError(f'image {w1}x{h1} resizes to {wr}x{hr}: too thin to crop a multiple '
                             f'of {PATCH} px; use mode="pad"')
    return Dust3rPlan((w1, h1), (wr, hr), box, mode, resample, int(pad_value))


def preprocess(image_rgb_u8: np.ndarray, plan: Dust3rPlan) -> np.ndarray:
    """Resize (Pillow, the plan's filter) and crop/pad one camera image to the network grid.

    Args:
        image_rgb_u8: (H1, W1, 3) uint8 RGB, EXIF orientation already applied.
        plan: from `network_size` for this image's size.

    Returns:
        (H, W, 3) uint8 RGB network image, C-contiguous.
    """
    if not isinstance(image_rgb_u8, np.ndarray) or image_rgb_u8.dtype != np.uint8 \
            or image_rgb_u8.ndim != 3 or image_rgb_u8.shape[2] != 3:
        raise ValueError('dust3r preprocess: expected a uint8 (H, W, 3) RGB array, got '
                         f'{getattr(image_rgb_u8, "dtype", type(image_rgb_u8))} '
                         f'{getattr(image_rgb_u8, "shape", "")}')
    h1, w1 = image_rgb_u8.shape[:2]
    if (w1, h1) != plan.src_wh:
        raise ValueError(f'dust3r preprocess: image is {w1}x{h1} but the plan is for '
                         f'{plan.src_wh[0]}x{plan.src_wh[1]}')
    img = Image.fromarray(np.ascontiguousarray(image_rgb_u8), 'RGB')
    img = img.resize(plan.resized_wh, getattr(Image.Resampling, plan.resample))
    arr = np.asarray(img)
    left, top, right, bottom = plan.box_ltrb
    if plan.mode == 'crop':
        return np.ascontiguousarray(arr[top:bottom, left:right])
    h, w = plan.net_hw
    out = np.full((h, w, 3), plan.pad_value, dtype=np.uint8)
    out[-top:-top + arr.shape[0], -left:-left + arr.shape[1]] = arr
    return out


def map_intrinsics(K: np.ndarray, plan: Dust3rPlan) -> np.ndarray:
    """Express a pinhole K of the camera image on the network grid (spec §5, +0.5 convention).

    fx' = fx*sx, fy' = fy*sy, cx' = (cx + 0.5)*sx - 0.5 - left, cy' = (cy + 0.5)*sy - 0.5 - top,
    with sx = Wr/W1, sy = Hr/H1; in pad mode left/top are negative (the padding offsets).

    Args:
        K: 3x3 intrinsics of the camera image (rectified; DUSt3R assumes a pinhole).
        plan: the plan used for this image.

    Returns:
        3x3 float64 K_net.

    Raises:
        ValueError: K is not 3x3, not finite, or fx/fy are not positive.
    """
    validate_K(K)
    K = np.asarray(K, dtype=np.float64)
    sx, sy = plan.scale_xy
    left, top = plan.box_ltrb[:2]
    out = K.copy()
    out[0, 0] = K[0, 0] * sx
    out[0, 1] = K[0, 1] * sx
    out[1, 1] = K[1, 1] * sy
    out[0, 2] = (K[0, 2] + 0.5) * sx - 0.5 - left
    out[1, 2] = (K[1, 2] + 0.5) * sy - 0.5 - top
    return out


def image_centre_on_grid(plan: Dust3rPlan) -> tuple[float, float]:
    """Where the camera image centre ((W1-1)/2, (H1-1)/2) lies on the network grid.

    That is Wr/2 - 0.5 - left, Hr/2 - 0.5 - top: the principal point to assume when no
    intrinsics are known (the network grid centre is off by the crop and the half-pixel).
    """
    sx, sy = plan.scale_xy
    left, top = plan.box_ltrb[:2]
    return plan.src_wh[0] * sx / 2.0 - 0.5 - left, plan.src_wh[1] * sy / 2.0 - 0.5 - top


def unmap_intrinsics(K_net: np.ndarray, plan: Dust3rPlan) -> np.ndarray:
    """Inverse of `map_intrinsics`: network-grid K -> K of the camera image."""
    validate_K(K_net)
    K_net = np.asarray(K_net, dtype=np.float64)
    sx, sy = plan.scale_xy
    left, top = plan.box_ltrb[:2]
    out = K_net.copy()
    out[0, 0], out[0, 1], out[1, 1] = K_net[0, 0] / sx, K_net[0, 1] / sx, K_net[1, 1] / sy
    out[0, 2] = (K_net[0, 2] + 0.5 + left) / sx - 0.5
    out[1, 2] = (K_net[1, 2] + 0.5 + top) / sy - 0.5
    return out
