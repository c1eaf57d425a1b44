"""The benchmark's ROS side: playback, output monitor and diagnostics listener on one node.

Mirrors ros2_benchmark's graph (docs/ros.md §8) without modifying the node under test: the
player (tools/bag/replay.py) publishes pre-buffered bag frames, the monitor raw-subscribes to the
node's output and records the receive time of each header stamp (read from the CDR bytes, no
deserialization on the hot path), and the listener keeps the node's latest /diagnostics values.
"""
from __future__ import annotations

import threading
import time

from tt_depth_ros.tools.bag.io import header_stamp_ns, message_class


class OutputMonitor:
    """Receive times per header stamp on one output topic; optionally keeps raw payloads.

    Args:
        node: rclpy node (spun by the caller).
        topic: output topic of the node under test.
        msgtype: its message type ('sensor_msgs/msg/Image').
        keep_payloads: store the raw bytes of every output (accuracy pass).
    """

    def __init__(self, node, topic: str, msgtype: str, keep_payloads: bool = False):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        self.topic = topic
        self.keep_payloads = keep_payloads
        self.received: dict[int, int] = {}
        self.payloads: dict[int, bytes] = {}
        self.duplicates = 0
        self._cond = threading.Condition()
        qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        self.sub = node.create_subscription(message_class(msgtype), topic, self._on_msg, qos,
                                            raw=True)

    def _on_msg(self, raw: bytes) -> None:
        now = time.time_ns()
        stamp = header_stamp_ns(raw)
        with self._cond:
            if stamp in self.received:
                self.duplicates += 1
            else:
                self.received[stamp] = now
                if self.keep_payloads:
                    self.payloads[stamp] = raw
            self._cond.notify_all()

    def take(self) -> dict[int, int]:
        """{stamp: receive ns} of every output since the last `take` (then forgotten)."""
        with self._cond:
            out = dict(self.received)
            self.received.clear()
            return out

    @property
    def count(self) -> int:
        """Outputs held (Player consumer protocol)."""
        with self._cond:
            return len(self.received)

    def wait(self, stamp_ns: int, count_before: int, timeout_s: float) -> bool:
        """True once the output with header stamp `stamp_ns` arrived (Player consumer protocol)."""
        with self._cond:
            return self._cond.wait_for(lambda: stamp_ns in self.received, timeout_s)

    def wait_for(self, stamps: set[int], timeout_s: float, idle_s: float) -> None:
        """Wait until all `stamps` arrived, `timeout_s` passed, or nothing arrived for `idle_s`."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            last_n, last_change = -1, time.monotonic()
            while True:
                n = len(stamps & self.received.keys())
                now = time.monotonic()
                if n != last_n:
                    last_n, last_change = n, now
                if n == len(stamps) or now >= deadline or now - last_change >= idle_s:
                    return
                self._cond.wait(min(0.1, max(deadline - now, 0.001)))


class DiagnosticsListener:
    """Latest /diagnostics key/values of statuses whose name ends with `node_name`."""

    def __init__(self, node, node_name: str):
        from diagnostic_msgs.msg import DiagnosticArray
        self.node_name = node_name.lstrip('/')
        self.latest: dict[str, str] = {}
        self.count = 0
        self._lock = threading.Lock()
        self.sub = node.create_subscription(DiagnosticArray, '/diagnostics', self._on_msg, 10)

    def _on_msg(self, msg) -> None:
        for status in msg.status:
            if status.name.lstrip('/').endswith(self.node_name):
                with self._lock:
                    self.latest = {kv.key: kv.value for kv in status.values}
                    self.latest['_level'] = str(int.from_bytes(status.level, 'little')
                                                if isinstance(status.level, bytes)
                                                else status.level)
                    self.latest['_message'] = status.message
                    self.count += 1

    def snapshot(self) -> dict[str, str]:
        """Copy of the latest values (empty until the first status arrived)."""
        with self._lock:
            return dict(self.latest)

    def stages_ms(self) -> dict[str, float]:
        """Per-stage median times (ms) from `stage_<name>_ms` values."""
        out = {}
        for k, v in self.snapshot().items():
            if k.startswith('stage_') and k.endswith('_ms'):
                try:
                    out[k[len('stage_'):-len('_ms')]] = float(v)
                except ValueError:
                    continue
        return out
