"""What a node knows about one decoded frame's camera: the pinhole view `camera_view` returns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from tt_depth_ros.geometry.rectify import Rectifier


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
