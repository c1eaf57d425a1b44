"""What a node knows about one decoded frame's camera: the CameraInfo of its stamp, rectified.

`CameraViews` keeps each camera's CameraInfos by stamp (ros/runtime/inputs/camera_info_sync.py),
picks the one of a frame per `camera_info_sync` / `camera_info_mode`, fits its intrinsics to the
image size (geometry/camera/camera_model.py) and rectifies distorted frames
(ros/runtime/inputs/rectify_input.py); `view` returns the frame as a `CameraView`. Every frame it
cannot place is a counted reject.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from tt_depth_ros.geometry.camera.camera_model import CameraModelError, fit_to_image
from tt_depth_ros.geometry.camera.rectify import Rectifier
from tt_depth_ros.ros.msgs.camera_info import CameraInfoError, camera_geometry
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.camera_info_sync import (
    CameraInfoStore,
    InfoMatch,
)
from tt_depth_ros.ros.runtime.inputs.rectify_input import InputRectification

NO_CAMERA_INFO = 'none'
"""`CameraViews.match` result: no CameraInfo arrived at all, camera_info_mode='default_focal'."""


@dataclass(frozen=True)
class CameraView:
    """A frame ready for a model: the (rectified) image and the intrinsics of its stamp.

    Attributes:
        rgb: (H, W, 3) uint8, rectified when its CameraInfo has non-zero distortion.
        K: 3x3 intrinsics of `rgb` (from P, fitted to the image size); None when no CameraInfo
            arrived in 'default_focal' mode (the caller applies its model's fallback).
        tx: P[0, 3] scaled like K (the stereo baseline term; 0.0 without CameraInfo).
        border: None, or the Rectifier whose `valid` mask marks rectified pixels that map from
            outside the source image (their depth is published as invalid).
    """

    rgb: np.ndarray
    K: Optional[np.ndarray]
    tx: float
    border: Optional[Rectifier]


class CameraViews:
    """CameraInfo by stamp and rectification for each camera key of a node.

    Args:
        params: the node's current parameter values (camera_info_*, rectify; read per frame).
        reject: the node's `reject(reason, message)`.
        logger: the node's logger (the default-focal warning, once).
    """

    def __init__(self, params: Callable, reject: Callable[[str, str], None], logger) -> None:
        self._params, self._reject, self._logger = params, reject, logger
        self.store = CameraInfoStore()
        self.rectification = InputRectification()

    def on_camera_info(self, key: str, topic: str, msg) -> None:
        """Cache a CameraInfo of `key` by stamp (an invalid one is cached as its error)."""
        stamp_ns = stamp_to_ns(msg.header.stamp)
        try:
            self.store.put(key, stamp_ns, msg, camera_geometry(msg))
        except CameraInfoError as exc:
            self.store.put(key, stamp_ns, msg, exc)
            self._reject('camera_info_invalid', f'{topic}: {exc}')

    def match(self, key: str, stamp) -> InfoMatch | str | None:
        """The CameraInfo for an image of `key` with header stamp `stamp` (camera_info_sync).

        Returns None (already reported) when the frame must be skipped, NO_CAMERA_INFO when no
        CameraInfo arrived at all and camera_info_mode is 'default_focal', else an InfoMatch.
        """
        stamp_ns = stamp_to_ns(stamp)
        p = self._params()
        match = self.store.lookup(key, stamp_ns, p.camera_info_sync,
                                  p.camera_info_tolerance_s, p.camera_info_wait_s)
        if match is not None:
            return match
        if not self.store.has_any(key):
            if p.camera_info_mode == 'wait':
                self._reject('no_camera_info', f'no CameraInfo received yet for {key} '
                             "(camera_info_mode='wait'); frame skipped")
                return None
            return NO_CAMERA_INFO
        skew = self.store.nearest_skew_s(key, stamp_ns)
        self._reject('camera_info_stamp', f'{key}: no CameraInfo with the image stamp '
                     f'{stamp_ns / 1e9:.6f} (nearest {skew:+.6f} s away, camera_info_tolerance_s='
                     f"{p.camera_info_tolerance_s}); frame skipped. A camera that publishes "
                     "CameraInfo rarely or with other stamps needs camera_info_sync:='latest'")
        return None

    def view(self, key: str, rgb: np.ndarray, stamp, fallback: str) -> CameraView | None:
        """The pinhole view of a decoded frame: its CameraInfo by `stamp`, rectified (`rectify`).

        `fallback` says, in the once-only warning, what replaces the intrinsics when no
        CameraInfo has arrived in 'default_focal' mode.

        Returns:
            None when the frame must be skipped (already reported: no CameraInfo in 'wait' mode,
            invalid CameraInfo, incompatible size, calibration that cannot be rectified); else
            a CameraView (K None in 'default_focal' mode without CameraInfo; warned once).
        """
        height, width = rgb.shape[:2]
        match = self.match(key, stamp)
        if match is None:
            return None
        if match == NO_CAMERA_INFO:
            self._logger.warning(f'no CameraInfo for {key}: {fallback} '
                                 '(camera_info_mode=default_focal)', once=True)
            return CameraView(rgb, None, 0.0, None)
        geom = match.geometry
        if isinstance(geom, Exception):
            self._reject('camera_info_invalid', f'{key}: its CameraInfo is unusable: {geom}')
            return None
        try:
            K, _ = fit_to_image(geom, width, height)
        except CameraModelError as exc:
            self._reject('camera_info_size', f'{key}: {exc}')
            return None
        try:
            rgb, border = self.rectification.apply(match.msg, rgb, self._params().rectify)
        except CameraModelError as exc:
            self._reject('rectify', f'{key}: cannot rectify with its CameraInfo: {exc}')
            return None
        return CameraView(rgb, K, geom.Tx * K[0, 0] / geom.K[0, 0], border)

    def diagnostics(self) -> dict:
        """CameraInfo matching counters and the rectification state for /diagnostics."""
        return {**self.store.counters(), **self.rectification.diagnostics(self._params().rectify)}

    def reset(self) -> None:
        """New configure: forget CameraInfos, counters and rectification maps."""
        self.store.reset()
        self.rectification.reset()

    def clear(self) -> None:
        """Release: forget the cached CameraInfos (counters stay for /diagnostics)."""
        self.store.clear()
