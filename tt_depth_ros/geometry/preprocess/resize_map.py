"""The upstream DA3 resize of one camera size as matrices, so an engine can run it on its device.

Every cv2 resize that `da3_preprocess.resize_to_network` runs (INTER_AREA down, INTER_CUBIC up)
is separable and linear: one step maps an (H, W) channel to `rows @ x @ cols.T`, with `rows`
(h, H) and `cols` (w, W) fixed per size pair. The matrices are read off cv2 itself (the identity
pushed through the same calls, in float64), so they are OpenCV's own weight tables, not a
re-derivation. Each step is followed by the uint8 store (round half to even, saturate) that the
host chain does between and after its steps.

Why: on a 640x480 frame the host resize is the largest per-frame cost left in the depth node
(~0.8-1.3 ms, docs/design.md §4); on an accelerator the same map is two small matmuls per step
(0.7 GMAC at 640x480 -> 504x378). The device result equals the host bytes except where float
summation order moves a value across a rounding tie (about 0.1 % of pixels, by one level).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import cv2
import numpy as np

from tt_depth_ros.geometry.preprocess.da3_preprocess import resize_steps
from tt_depth_ros.geometry.preprocess.image_checks import check_rgb_u8


@dataclass(frozen=True)
class ResizeStep:
    """One separable resize: out[..., c] = rows @ x[..., c] @ cols.T, then the uint8 store.

    Attributes:
        rows: (h, H) float32, read-only.
        cols: (w, W) float32, read-only.
    """

    rows: np.ndarray
    cols: np.ndarray


@dataclass(frozen=True, eq=False)
class ResizeMap:
    """The camera image -> network image resize of one (camera size, network size) pair.

    Attributes:
        src_hw: Camera (H, W).
        net_hw: Network (h, w).
        steps: One or two ResizeSteps (the upstream upper-bound resize, then the snap to 14);
            empty when the camera image already has the network size.
    """

    src_hw: tuple[int, int]
    net_hw: tuple[int, int]
    steps: tuple[ResizeStep, ...]

    def apply(self, image_rgb_u8: np.ndarray) -> np.ndarray:
        """The map on the host (numpy, float64): the reference an engine's device copy must equal.

        Returns (h, w, 3) uint8, C-contiguous.
        """
        check_rgb_u8(image_rgb_u8)
        if image_rgb_u8.shape[:2] != self.src_hw:
            raise ValueError(f'image {image_rgb_u8.shape[:2]} is not this map\'s camera size '
                             f'{self.src_hw}')
        x = image_rgb_u8.astype(np.float64)
        for step in self.steps:
            rows, cols = step.rows.astype(np.float64), step.cols.astype(np.float64)
            x = np.stack([rows @ x[..., c] @ cols.T for c in range(3)], axis=-1)
            x = np.clip(np.rint(x), 0, 255)
        return np.ascontiguousarray(x.astype(np.uint8))


def _step(src_hw: tuple[int, int], dst_hw: tuple[int, int], grow: bool) -> ResizeStep:
    """cv2's weights for one resize, read by resizing identity images (float64 kernels)."""
    interp = cv2.INTER_CUBIC if grow else cv2.INTER_AREA
    (h_in, w_in), (h_out, w_out) = src_hw, dst_hw
    # rows: the width stays (a unit scale is the identity for both kernels), the height changes
    rows = cv2.resize(np.eye(h_in), (h_in, h_out), interpolation=interp)
    cols = cv2.resize(np.eye(w_in), (w_out, w_in), interpolation=interp).T
    rows, cols = rows.astype(np.float32), np.ascontiguousarray(cols, dtype=np.float32)
    rows.flags.writeable = cols.flags.writeable = False
    return ResizeStep(rows, cols)


@lru_cache(maxsize=16)
def resize_map(src_hw: tuple[int, int], net_hw: tuple[int, int],
               process_res: Optional[int] = None) -> ResizeMap:
    """The ResizeMap of `resize_to_network(image, net_hw, process_res)` for (H, W) images.

    The host chain's own plan (`da3_preprocess.resize_steps`), each step as matrices. Cached: a
    node sees one or two camera sizes.
    """
    src = tuple(int(v) for v in src_hw)
    steps, at = [], src
    for dst, grow in resize_steps(src, net_hw, process_res):
        steps.append(_step(at, dst, grow))
        at = dst
    return ResizeMap(src, tuple(int(v) for v in net_hw), tuple(steps))
