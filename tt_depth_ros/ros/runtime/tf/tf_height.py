"""Camera height above the ground from TF, for the depth node's scale_source=camera_height.

A robot usually states its camera mounting in TF (base_footprint -> base_link -> camera optical
frame, REP 105: base_footprint on the ground, z up). The height is the z of the camera's origin
in that ground frame, from the latest transforms of a TfBuffer (ros/runtime/tf/tf_buffer.py): a
mounting is static or slowly changing, and the depth node needs a length, not a pose at the image
stamp.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer, TfLookupError


class CameraHeight(NamedTuple):
    """Metres of the camera origin above the ground frame, or None and why not."""

    metres: Optional[float]
    why_not: str = ''


def camera_height(tf: TfBuffer, ground_frame: str, camera_frame: str) -> CameraHeight:
    """The z of `camera_frame`'s origin in `ground_frame` (latest transforms); must be above 0."""
    ground, camera = ground_frame.lstrip('/'), camera_frame.lstrip('/')
    if not camera:
        return CameraHeight(None, 'the image has no frame_id to look up in TF')
    try:
        z = float(tf.lookup(ground, camera)[2, 3])
    except TfLookupError as exc:
        return CameraHeight(None, f'no TF height yet: {exc}')
    if not z > 0:
        return CameraHeight(None, f'the camera {camera!r} is {z:.3f} m above {ground!r} in TF: '
                                  'not above the ground')
    return CameraHeight(z)
