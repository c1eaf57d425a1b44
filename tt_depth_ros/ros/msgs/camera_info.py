"""sensor_msgs/CameraInfo <-> intrinsics, like image_geometry (read) and image_proc Resize (write).

Reading uses P (K when P is all zero) with binning and ROI applied, then scales explicitly when the
image has another resolution than the CameraInfo describes (aspect mismatch is rejected). Writing
produces the CameraInfo of a depth image on its own pixel grid: K and P = [K | t] for exactly that
width and height, binning and ROI cleared (already applied), R identity, no distortion (the depth
grid is the input grid; feed rectified images for exact geometry).
"""
from __future__ import annotations

import numpy as np
from sensor_msgs.msg import CameraInfo

from tt_depth_ros.geometry.camera.camera_model import (
    CameraGeometry,
    CameraModelError,
    fit_to_image,
    from_camera_arrays,
    projection_from_K,
)


class CameraInfoError(CameraModelError):
    """A CameraInfo that cannot be used for this image (named reason)."""


def camera_geometry(msg: CameraInfo) -> CameraGeometry:
    """CameraInfo -> geometry at its reduced (binned/ROI) resolution; CameraInfoError if bad."""
    roi = msg.roi
    try:
        return from_camera_arrays(np.asarray(msg.k, dtype=np.float64),
                                  np.asarray(msg.p, dtype=np.float64), msg.width, msg.height,
                                  msg.binning_x, msg.binning_y,
                                  (roi.x_offset, roi.y_offset, roi.width, roi.height))
    except CameraModelError as exc:
        raise CameraInfoError(str(exc)) from None


def intrinsics_from_camera_info(msg: CameraInfo, image_wh: tuple[int, int]) -> np.ndarray:
    """3x3 float64 K for an image of size image_wh = (width, height) described by `msg`.

    Args:
        msg: the camera's CameraInfo.
        image_wh: (width, height) of the image the intrinsics are wanted for.

    Raises:
        CameraInfoError: fx/fy not positive or not finite, or incompatible aspect ratio.
    """
    cam = camera_geometry(msg)
    try:
        K, _ = fit_to_image(cam, int(image_wh[0]), int(image_wh[1]))
    except CameraModelError as exc:
        raise CameraInfoError(str(exc)) from None
    return K


def camera_info_for(K: np.ndarray, width: int, height: int, header,
                    tx: float = 0.0, ty: float = 0.0) -> CameraInfo:
    """CameraInfo describing a width x height image with intrinsics K (e.g. the depth image).

    Args:
        K: 3x3 intrinsics on that image's pixel grid.
        width: image width in pixels.
        height: image height in pixels.
        header: header to copy (the depth image's).
        tx: P[0,3] (stereo -fx*B on this grid), 0 for a monocular camera.
        ty: P[1,3].
    """
    K = np.asarray(K, dtype=np.float64)
    return CameraInfo(header=header, width=int(width), height=int(height),
                      distortion_model='plumb_bob', d=[0.0] * 5,
                      k=K.reshape(-1).tolist(), r=np.eye(3).reshape(-1).tolist(),
                      p=projection_from_K(K, tx, ty).reshape(-1).tolist())
