"""Camera height above the ground from TF (/tf and /tf_static), for scale_source=camera_height.

A robot usually states its camera mounting in TF (base_footprint -> base_link -> camera optical
frame, REP 105: base_footprint on the ground, z up). The height is the z of the camera's origin
in that ground frame. This keeps the latest transform per child frame (no interpolation: a
mounting is static or slowly changing, and the depth node only needs a length, not a pose at the
image stamp) and composes the chains of both frames up to their common root. No tf2_ros needed.
"""
from __future__ import annotations

import threading

import numpy as np

from tt_depth_ros.geometry.se3 import invert_T
from tt_depth_ros.ros.msgs.pose import T_from_transform_msg

MAX_CHAIN = 64
"""Longest frame chain followed (a loop in a broken tree stops here)."""


def _name(frame: str) -> str:
    return frame.lstrip('/')


class TfHeight:
    """Latest TF edges (child -> parent, T_parent_child) and heights derived from them."""

    def __init__(self) -> None:
        self._edges: dict[str, tuple[str, np.ndarray]] = {}
        self._lock = threading.Lock()

    def on_tf(self, msg) -> None:
        """Callback of /tf and /tf_static (tf2_msgs/TFMessage)."""
        with self._lock:
            for tr in msg.transforms:
                self._edges[_name(tr.child_frame_id)] = (_name(tr.header.frame_id),
                                                         T_from_transform_msg(tr))

    def _to_root(self, frame: str) -> tuple[str, np.ndarray]:
        T, f = np.eye(4), frame
        for _ in range(MAX_CHAIN):
            edge = self._edges.get(f)
            if edge is None:
                return f, T
            f, T = edge[0], edge[1] @ T
        raise ValueError(f'TF chain from {frame!r} is longer than {MAX_CHAIN} frames (a loop?)')

    def height(self, ground_frame: str, camera_frame: str) -> tuple[float | None, str]:
        """(z of the camera origin in the ground frame, '') or (None, why not)."""
        ground, camera = _name(ground_frame), _name(camera_frame)
        if not camera:
            return None, 'the image has no frame_id to look up in TF'
        with self._lock:
            root_c, T_rc = self._to_root(camera)
            root_g, T_rg = self._to_root(ground)
        if root_c != root_g:
            return None, (f'no TF connection between {ground!r} and {camera!r} yet (their '
                          f'trees end at {root_g!r} and {root_c!r})')
        z = float((invert_T(T_rg) @ T_rc)[2, 3])
        if not z > 0:
            return None, (f'the camera {camera!r} is {z:.3f} m above {ground!r} in TF: not '
                          'above the ground')
        return z, ''
