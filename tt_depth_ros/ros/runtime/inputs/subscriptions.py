"""A node's inputs: its subscriptions and the admission of each image message to the worker.

The executor side of one frame (docs/design.md §2): `precheck` does the cheap checks (stamp order,
declared size, encoding, data size) before anything is decoded, `offer` hands the message to the
latest-frame mailbox (replacing an unprocessed one counts as a drop); the worker calls `decode`.
Subscriptions are owned here (`track`) and destroyed together on deactivate (`destroy_all`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from tt_depth_ros.ros.msgs.image_codec import (
    ENCODINGS,
    ImageDecodeError,
    compressed_image_size,
    compressed_to_rgb,
    image_msg_to_rgb,
)
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.mailbox import LatestFrameMailbox
from tt_depth_ros.ros.runtime.qos import subscription_events

CAMERA_INFO_DEPTH = 10
"""Fewest CameraInfos a subscription keeps (they are tiny; see subscribe_camera_info)."""


class NodeInputs:
    """Subscriptions, prechecks, decoding and the mailbox hand-off of one node.

    Args:
        node: the rclpy node that creates and destroys the subscriptions.
        params: the node's current parameter values (input_transport, max_image_pixels).
        qos: the node's input QoS (called per subscription: a node may widen it).
        stats: the node's statistics.
        reject: the node's `reject(reason, message)`.
        mailbox: the worker's latest-frame mailbox.
    """

    def __init__(self, node, params: Callable, qos: Callable, stats: NodeStats,
                 reject: Callable[[str, str], None], mailbox: LatestFrameMailbox) -> None:
        self._node, self._params, self._qos = node, params, qos
        self._stats, self._reject, self._mailbox = stats, reject, mailbox
        self._subs: list = []
        self._last_stamp: dict[str, int] = {}

    # ---- subscriptions --------------------------------------------------------------------
    def track(self, sub):
        """Own a subscription created elsewhere: destroyed with the others on deactivate."""
        self._subs.append(sub)
        return sub

    def subscribe_image(self, topic: str, callback, transport: str = ''):
        """Subscribe Image on `topic` or CompressedImage on `topic`/compressed.

        `transport` 'raw' or 'compressed' ('': the input_transport parameter).
        """
        compressed = (transport or self._params().input_transport) == 'compressed'
        msg_type, name = (CompressedImage, f'{topic}/compressed') if compressed else (Image, topic)
        logger = self._node.get_logger()
        sub = self._node.create_subscription(
            msg_type, name, callback, self._qos(),
            event_callbacks=subscription_events(logger, name,
                                                lambda t: self._stats.on_reject('qos', t)))
        return self.track(sub)

    def subscribe_camera_info(self, topic: str, callback):
        """Subscribe CameraInfo on `topic` with the input QoS (incompatible QoS is logged).

        The history keeps at least CAMERA_INFO_DEPTH messages: each image needs the CameraInfo
        of its own stamp, and with a history of one an executor that falls a frame behind lets
        the next CameraInfo replace it, losing a frame whose image did arrive.
        """
        qos = self._qos()
        qos.depth = max(qos.depth, CAMERA_INFO_DEPTH)
        sub = self._node.create_subscription(
            CameraInfo, topic, callback, qos,
            event_callbacks=subscription_events(self._node.get_logger(), topic))
        return self.track(sub)

    def destroy_all(self) -> None:
        """Destroy every subscription (deactivate)."""
        for sub in self._subs:
            self._node.destroy_subscription(sub)
        self._subs.clear()

    # ---- admission ------------------------------------------------------------------------
    def restart(self) -> None:
        """Activate: stamps start over (a stamp before the last one of the previous run is fine)."""
        self._last_stamp.clear()

    def precheck(self, msg, key: str) -> bool:
        """Cheap executor-side checks (size, encoding, stamp order); False = rejected."""
        stamp_ns = stamp_to_ns(msg.header.stamp)
        last = self._last_stamp.get(key)
        self._last_stamp[key] = stamp_ns
        if last is not None and stamp_ns < last:
            back = (last - stamp_ns) / 1e9
            self._reject('stamp_backwards', f'{key}: stamp went back by {back:.3f} s (bag loop or '
                         'clock jump); frame skipped, continuing from the new time')
            return False
        max_pixels = self._params().max_image_pixels
        if isinstance(msg, CompressedImage):
            try:
                w, h = compressed_image_size(msg.data)
            except ImageDecodeError as exc:
                self._reject('decode', f'{key}: {exc}')
                return False
            if w * h > max_pixels:
                self._reject('size', f'{key}: compressed image declares {w}x{h}, above '
                             f'max_image_pixels={max_pixels}; not decoded')
                return False
        if isinstance(msg, Image):
            if msg.encoding not in ENCODINGS:
                self._reject('encoding', f'{key}: unsupported encoding {msg.encoding!r}')
                return False
            h, w = int(msg.height), int(msg.width)
            if h <= 0 or w <= 0 or h * w > max_pixels:
                self._reject('size', f'{key}: image size {w}x{h} is zero or above '
                             f'max_image_pixels={max_pixels}')
                return False
            if len(msg.data) != msg.step * h:
                self._reject('data_size', f'{key}: data size {len(msg.data)} != step*height '
                             f'= {msg.step}*{h}')
                return False
        return True

    def decode(self, msg, key: str) -> np.ndarray | None:
        """Message -> (H, W, 3) uint8 RGB, or None after a throttled reject."""
        try:
            if isinstance(msg, CompressedImage):
                return compressed_to_rgb(msg, self._params().max_image_pixels)
            return image_msg_to_rgb(msg, self._params().max_image_pixels)
        except ImageDecodeError as exc:
            self._reject('decode', f'{key}: {exc}')
            return None

    def offer(self, item) -> bool:
        """Hand a frame to the worker; True when it replaced an unprocessed one (a drop)."""
        dropped = self._mailbox.put(item)
        self._stats.on_offer(dropped)
        if dropped:
            self._stats.on_drop()
        return dropped
