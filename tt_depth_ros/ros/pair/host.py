"""What the pair node's parts need from the node that runs them: the `PairHost` protocol.

The modes (ros/pair/stereo.py, temporal.py), the per-pair steps (steps.py) and the publishing
rules (outputs.py) subscribe, admit, decode, prepare, report and publish through these members
only. The pair node (ros/pair/node.py, on the lifecycle base) provides them with rclpy;
tt-depth-batch provides them offline (tools/batch/pair_host.py), so a bag is processed by the
node's own per-pair work.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

import numpy as np

from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer


class PairHost(Protocol):
    """The node a pair mode runs on."""

    @property
    def params(self) -> Any:
        """The node's current parameter values."""

    stats: NodeStats

    def get_logger(self) -> Any:
        """A logger with `info`, `warning`, `error` (and `once=True`)."""

    # ---- inputs -------------------------------------------------------------------------
    def subscribe_image(self, topic: str, callback: Callable) -> Any:
        """Image on `topic` (or CompressedImage on `topic`/compressed, input_transport)."""

    def subscribe_camera_info(self, topic: str, key: str) -> Any:
        """CameraInfos of `topic` cached by stamp under the camera `key`."""

    def subscribe_tf(self, buffer: TfBuffer) -> None:
        """Feed `buffer` from /tf and /tf_static while active."""

    def input_history_depth(self) -> int:
        """Messages each image subscription keeps (its QoS depth)."""

    def precheck_image(self, msg, key: str) -> bool:
        """Cheap checks before decoding (size, encoding, stamp order); False = rejected."""

    def offer(self, item) -> None:
        """Hand a pair or frame to the worker."""

    # ---- worker -------------------------------------------------------------------------
    def decode_image(self, msg, key: str) -> Optional[np.ndarray]:
        """Message -> (H, W, 3) uint8 RGB, or None (rejected)."""

    def camera_view(self, key: str, rgb: np.ndarray, stamp, fallback: str) -> Optional[CameraView]:
        """The frame with the CameraInfo of its stamp, rectified; None = rejected."""

    def ensure_prepared(self, shape: tuple[int, int], resize=None) -> None:
        """Prepare the engine for a network shape once."""

    def reject(self, reason: str, message: str) -> None:
        """Count a skipped item; log it at most once a period per reason."""

    def warn_throttled(self, key: str, message: str) -> None:
        """Log a warning at most once a period per `key` (no item skipped)."""

    # ---- outputs ------------------------------------------------------------------------
    def add_publisher(self, msg_type, topic: str) -> Any:
        """A publisher of `topic` (relative: in the node's namespace) with the output QoS."""

    def add_tf_publisher(self, static: bool) -> Any:
        """A publisher of /tf (or /tf_static) with tf2's QoS."""
