"""Input rectification for both nodes (`rectify` parameter), on top of geometry/camera/rectify.py.

`auto` (default): an image whose CameraInfo has non-zero D is rectified with K, D, R and P before
the network, like image_proc's rectify node, and every output is in the rectified camera (the
published depth CameraInfo is P with D = 0, as image_proc's rectified CameraInfo). The remap
tables are built once per calibration and image size (cached). `disabled` trusts the input as
rectified (e.g. `image_rect` from image_proc); a non-zero D is then reported in /diagnostics,
since its geometry is off by the lens distortion. Rectified pixels that map from outside the
source image (black borders) come back as the rectifier's `valid` mask, so the nodes publish
them as invalid depth (NaN / 0, REP 117) and keep them out of clouds.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.geometry.camera.rectify import (
    Rectifier,
    RectifierCache,
    build_rectifier,
    has_distortion,
    image_intrinsics,
)
from tt_depth_ros.ros.runtime.params import ParamSpec

RECTIFY_PARAMS = (
    ParamSpec('rectify', 'auto', "'auto': images whose CameraInfo has non-zero D are rectified "
              '(K, D, R, P; plumb_bob, rational_polynomial, equidistant) before the network, '
              "outputs are in the rectified camera (CameraInfo = P, D = 0); 'disabled': the "
              'input is trusted as rectified (non-zero D reported in diagnostics).',
              choices=('auto', 'disabled'), runtime=True),
)


def _calibration_key(msg, width: int, height: int) -> tuple:
    roi = msg.roi
    return (msg.distortion_model, tuple(msg.d), tuple(msg.k), tuple(msg.r), tuple(msg.p),
            msg.width, msg.height, msg.binning_x, msg.binning_y,
            (roi.x_offset, roi.y_offset, roi.width, roi.height), width, height)


class InputRectification:
    """Rectifies distorted inputs per CameraInfo; counts what it did for /diagnostics."""

    def __init__(self) -> None:
        self.cache = RectifierCache()
        self.rectified = 0
        self.unrectified_distorted = 0
        self.last = 'no distorted input seen'

    def apply(self, msg, rgb: np.ndarray, mode: str) -> tuple[np.ndarray, Rectifier | None]:
        """(`rgb` rectified per its CameraInfo `msg`, border); unchanged if D = 0 or `disabled`.

        `border` is the Rectifier when some rectified pixels map from outside the source image
        (its `valid` mask and grids say which), else None (every pixel valid).

        Raises:
            CameraModelError: a calibration that cannot be rectified (unsupported model, wrong
                number of coefficients, bad K/P); the caller rejects the frame.
        """
        if not has_distortion(msg.d):
            return rgb, None
        if mode == 'disabled':
            self.unrectified_distorted += 1
            self.last = (f'NOT rectified: CameraInfo has {msg.distortion_model} D != 0 but '
                         "rectify='disabled' trusts the input as rectified")
            return rgb, None
        h, w = rgb.shape[:2]

        def build():
            K, P = image_intrinsics(msg.k, msg.p, msg.width, msg.height,
                                    (msg.binning_x, msg.binning_y),
                                    (msg.roi.x_offset, msg.roi.y_offset, msg.roi.width,
                                     msg.roi.height), (w, h))
            return build_rectifier(msg.distortion_model, K, msg.d, msg.r, P, w, h)

        rect = self.cache.get(_calibration_key(msg, w, h), build)
        self.rectified += 1
        border = 0 if rect.all_valid else int(rect.valid.size - np.count_nonzero(rect.valid))
        self.last = (f'rectified ({msg.distortion_model}, {w}x{h}, {border} border pixels '
                     'marked invalid)')
        return rect(rgb), (None if rect.all_valid else rect)

    def diagnostics(self, mode: str) -> dict:
        """/diagnostics values."""
        return {'rectify': mode, 'rectification': self.last,
                'rectified_frames': self.rectified,
                'distorted_unrectified_frames': self.unrectified_distorted,
                'rectify_maps_built': self.cache.builds}

    def reset(self) -> None:
        """Forget maps and counters (configure)."""
        self.cache.clear()
        self.rectified = self.unrectified_distorted = 0
        self.last = 'no distorted input seen'
