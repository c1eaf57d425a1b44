"""A small TF buffer (no tf2_ros wheel exists): static + dynamic edges, chained, stamp-aware.

Enough of tf2's BufferCore for a node that needs the camera's mounting on the robot: /tf_static
edges are kept forever, /tf edges for `cache_s` seconds per child frame; a lookup walks both
frames up to their common ancestor and composes the edges, interpolating each dynamic edge at the
requested stamp (slerp/lerp like tf2) and refusing to extrapolate beyond `max_extrapolation_s`.
Stamp 0 means "latest" (tf2's TimePointZero). Math in geometry/pose/se3.py; thread-safe.
"""
from __future__ import annotations

import bisect
import threading

import numpy as np

from tt_depth_ros.geometry.pose.se3 import interpolate_qt, invert_T, quat_from_R
from tt_depth_ros.ros.msgs.pose import T_from_transform_msg
from tt_depth_ros.ros.msgs.stamps import NS_PER_S as NS
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.tf.tf_qos import TF_QOS, TF_STATIC_LISTENER_QOS

_IDENTITY = np.eye(4)
_IDENTITY.setflags(write=False)     # the start of every walk up the tree: never written


class TfLookupError(LookupError):
    """No transform between two frames at that time (the message says why)."""


class _StampedEdge:
    """One stamped transform of a dynamic edge, also as (quaternion, translation).

    Made when the transform arrives, so that a lookup between two stamps (the worker's hot
    path, every frame of a moving camera) converts no matrices.
    """

    __slots__ = ('T', 'qt')

    def __init__(self, T: np.ndarray) -> None:
        self.T = T
        self.qt = (quat_from_R(T[:3, :3]), T[:3, 3])


class TfBuffer:
    """Frames as a forest: each child has one parent (the latest edge that named it)."""

    def __init__(self, cache_s: float = 10.0, max_extrapolation_s: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._static: dict[str, tuple[str, np.ndarray]] = {}
        self._dynamic: dict[str, tuple[str, list, list]] = {}   # child -> parent, stamps, edges
        self._cache_ns = int(cache_s * NS)
        self._extra_ns = int(max_extrapolation_s * NS)

    def add_msg(self, msg, static: bool) -> None:
        """Add every TransformStamped of a tf2_msgs/TFMessage."""
        for tf in msg.transforms:
            stamp = stamp_to_ns(tf.header.stamp)
            self.add(tf.header.frame_id, tf.child_frame_id, T_from_transform_msg(tf), stamp,
                     static)

    def add(self, parent: str, child: str, T_parent_child: np.ndarray, stamp_ns: int = 0,
            static: bool = False) -> None:
        """One edge parent -> child (frame names as tf2 uses them, no leading '/')."""
        parent, child = parent.lstrip('/'), child.lstrip('/')
        if not parent or not child or parent == child:
            return
        with self._lock:
            if static:
                self._static[child] = (parent, np.array(T_parent_child, dtype=np.float64))
                self._dynamic.pop(child, None)
                return
            old = self._dynamic.get(child)
            if old is None or old[0] != parent:
                old = (parent, [], [])
                self._dynamic[child] = old
            _, stamps, edges = old
            edge = _StampedEdge(np.array(T_parent_child, dtype=np.float64))
            i = bisect.bisect_left(stamps, stamp_ns)
            if i < len(stamps) and stamps[i] == stamp_ns:
                edges[i] = edge
            else:
                stamps.insert(i, stamp_ns)
                edges.insert(i, edge)
            while stamps and stamps[-1] - stamps[0] > self._cache_ns:
                stamps.pop(0)
                edges.pop(0)

    def _edge(self, child: str, stamp_ns: int):
        """(parent, T_parent_child) of `child` at `stamp_ns`, None if child is a root."""
        if child in self._static:
            return self._static[child]
        if child not in self._dynamic:
            return None
        parent, stamps, edges = self._dynamic[child]
        if stamp_ns == 0:
            return parent, edges[-1].T
        i = bisect.bisect_left(stamps, stamp_ns)
        if i < len(stamps) and stamps[i] == stamp_ns:
            return parent, edges[i].T
        if i == 0 or i == len(stamps):
            edge = stamps[0] if i == 0 else stamps[-1]
            if abs(edge - stamp_ns) <= self._extra_ns:
                return parent, edges[0 if i == 0 else -1].T
            raise TfLookupError(
                f'{parent} -> {child}: no transform at {stamp_ns / NS:.6f} s (have '
                f'{stamps[0] / NS:.6f} .. {stamps[-1] / NS:.6f} s; would extrapolate)')
        a = (stamp_ns - stamps[i - 1]) / (stamps[i] - stamps[i - 1])
        return parent, interpolate_qt(*edges[i - 1].qt, *edges[i].qt, a)

    def _up(self, frame: str, stamp_ns: int) -> tuple[dict[str, np.ndarray], str | None]:
        """Ancestors of `frame` (itself included) with T_ancestor_frame, nearest first.

        Also returns why the walk stopped early (an edge unavailable at that stamp), if it did.
        """
        poses, cur, T = {frame: _IDENTITY}, frame, _IDENTITY
        while True:
            try:
                edge = self._edge(cur, stamp_ns)
            except TfLookupError as exc:
                return poses, str(exc)
            if edge is None:
                return poses, None
            parent, T_pc = edge
            if parent in poses:
                raise TfLookupError(f'TF loop through {parent!r}')
            T = T_pc if T is _IDENTITY else T_pc @ T
            poses[parent] = T
            cur = parent

    def lookup(self, target: str, source: str, stamp_ns: int = 0) -> np.ndarray:
        """T_target_source (source-frame points to the target frame) at `stamp_ns` (0 = latest).

        Composes the edges up to the closest common ancestor only, like tf2.

        Raises:
            TfLookupError: unknown frame, frames in different trees, or a stamp outside the
                buffered time of a dynamic edge on the way.
        """
        target, source = target.lstrip('/'), source.lstrip('/')
        if target == source:
            return np.eye(4)
        with self._lock:
            up_t, why_t = self._up(target, stamp_ns)
            up_s, why_s = self._up(source, stamp_ns)
        for frame, T_anc_source in up_s.items():       # nearest ancestor first (insertion order)
            if frame in up_t:
                return invert_T(up_t[frame]) @ T_anc_source
        why = why_s or why_t or (f'frames {target!r} and {source!r} are not connected (roots '
                                 f'{list(up_t)[-1]!r} and {list(up_s)[-1]!r}; is the TF tree '
                                 'published, e.g. robot_state_publisher for /tf_static?)')
        raise TfLookupError(f'no transform {target!r} <- {source!r}: {why}')

    def clear(self) -> None:
        with self._lock:
            self._static.clear()
            self._dynamic.clear()


def subscribe_tf(node, buffer: TfBuffer) -> list:
    """Feed `buffer` from /tf and /tf_static (tf2's listener QoS); returns the subscriptions."""
    from tf2_msgs.msg import TFMessage
    return [node.create_subscription(TFMessage, '/tf', lambda m: buffer.add_msg(m, False),
                                     TF_QOS),
            node.create_subscription(TFMessage, '/tf_static', lambda m: buffer.add_msg(m, True),
                                     TF_STATIC_LISTENER_QOS)]
