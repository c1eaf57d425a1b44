"""Record live topics into a new rosbag2 as raw serialized messages (ros2 bag record, without ROS).

Raw subscriptions (`create_subscription(..., raw=True)`) hand the CDR bytes straight to the
`rosbags` Writer; the bag timestamp is the receive time (wall clock, ns), as rosbag2 does, so the
recorded bag is also a record of arrival times. Message types come from the topic spec
(`/topic:pkg/msg/Type`) or from the ROS graph once the topic appears.
Usage: `python -m tt_depth_ros.tools.bag.record OUT --topic /camera/depth --count 30`.
"""
from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

from tt_depth_ros.tools.bag.io import default_typestore_distro, message_class
from tt_depth_ros.tools.bag.loopback_option import add_loopback_option, apply_loopback_option


def parse_topic_specs(items: list[str]) -> dict[str, str | None]:
    """['/a', '/b:pkg/msg/T'] -> {'/a': None, '/b': 'pkg/msg/T'}."""
    out: dict[str, str | None] = {}
    for item in items:
        topic, _, msgtype = item.partition(':')
        if not topic.startswith('/'):
            raise ValueError(f'record topics must be absolute (start with /), got {topic!r}')
        out[topic] = msgtype or None
    return out


class Recorder:
    """Raw-subscribes to topics on a caller-spun node and writes every message to a new bag.

    Args:
        node: rclpy Node (spun by the caller, e.g. in a background executor thread).
        path: output rosbag2 directory (must not exist).
        topics: {topic: msgtype or None (look it up in the graph)}.
        distro: typestore for the RIHS01 hashes (default: matches the running rclpy).
        storage: 'mcap' or 'sqlite3'.
        reliable: subscribe RELIABLE (default) or BEST_EFFORT.
        qos_depth: KEEP_LAST depth of the subscriptions.
    """

    def __init__(self, node, path: str | Path, topics: dict[str, str | None], *,
                 distro: str | None = None, storage: str = 'mcap', reliable: bool = True,
                 qos_depth: int = 100):
        if not topics:
            raise ValueError('nothing to record: give at least one topic')
        if Path(path).exists():
            raise FileExistsError(f'{path} exists; choose a new output directory')
        if storage not in ('mcap', 'sqlite3'):
            raise ValueError(f"storage must be 'mcap' or 'sqlite3', got {storage!r}")
        self.node = node
        self.path = Path(path)
        self.topics = dict(topics)
        self.distro = distro or default_typestore_distro()
        self.storage = storage
        self.reliable = reliable
        self.qos_depth = qos_depth
        self.counts = {t: 0 for t in topics}
        self.receive_ns: dict[str, list[int]] = {t: [] for t in topics}
        self._lock = threading.Lock()
        self._writer = None
        self._conns = {}
        self._subs = []

    def _resolve_types(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while any(v is None for v in self.topics.values()):
            graph = dict(self.node.get_topic_names_and_types())
            for t, v in self.topics.items():
                if v is None and graph.get(t):
                    self.topics[t] = graph[t][0]
            if time.monotonic() > deadline:
                missing = [t for t, v in self.topics.items() if v is None]
                raise TimeoutError(f'no publisher appeared for {missing} within {timeout_s} s; '
                                   'give their types as /topic:pkg/msg/Type to record anyway')
            time.sleep(0.05)

    def start(self, timeout_s: float = 10.0) -> None:
        """Resolve types (graph lookup up to `timeout_s`), open the bag, subscribe."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rosbags.rosbag2 import StoragePlugin, Writer

        from tt_depth_ros.tools.bag.sample import typestore_for
        self._resolve_types(timeout_s)
        ts = typestore_for(self.distro)
        plugin = StoragePlugin.MCAP if self.storage == 'mcap' else StoragePlugin.SQLITE3
        writer = Writer(self.path, version=9, storage_plugin=plugin)
        writer.open()
        self._writer = writer
        for t, mt in self.topics.items():
            self._conns[t] = writer.add_connection(t, mt, typestore=ts)
        rel = ReliabilityPolicy.RELIABLE if self.reliable else ReliabilityPolicy.BEST_EFFORT
        qos = QoSProfile(depth=self.qos_depth, reliability=rel)
        for t, mt in self.topics.items():
            self._subs.append(self.node.create_subscription(
                message_class(mt), t, lambda raw, t=t: self._on_msg(t, raw), qos, raw=True))

    def _on_msg(self, topic: str, raw: bytes) -> None:
        now = time.time_ns()
        with self._lock:
            if self._writer is None:
                return
            self._writer.write(self._conns[topic], now, raw)
            self.counts[topic] += 1
            self.receive_ns[topic].append(now)

    def close(self) -> dict[str, int]:
        """Stop recording, close the bag; returns message counts per topic. Idempotent."""
        with self._lock:  # callbacks arriving after this are ignored; subscriptions die with node
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        return dict(self.counts)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: record topics until --count per topic, --duration or Ctrl-C."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out', type=Path, help='new rosbag2 directory')
    ap.add_argument('--topic', nargs='+', required=True, metavar='TOPIC[:TYPE]')
    ap.add_argument('--count', type=int, help='stop once every topic has this many messages')
    ap.add_argument('--duration', type=float, help='stop after this many seconds')
    ap.add_argument('--storage', choices=('mcap', 'sqlite3'), default='mcap')
    ap.add_argument('--best-effort', action='store_true', help='subscribe best effort')
    add_loopback_option(ap)
    a = ap.parse_args(argv)

    apply_loopback_option(a)   # only on request: by default the ROS environment is used as is
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    rclpy.init()
    node = rclpy.create_node('bag_record')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    rec = Recorder(node, a.out, parse_topic_specs(a.topic), storage=a.storage,
                   reliable=not a.best_effort)
    t0 = time.monotonic()
    try:
        rec.start()
        print(f'recording {", ".join(rec.topics)} into {a.out} (ROS_DOMAIN_ID='
              f'{os.environ.get("ROS_DOMAIN_ID", "unset (0)")})', flush=True)
        while True:
            if a.count and all(c >= a.count for c in rec.counts.values()):
                break
            if a.duration and time.monotonic() - t0 >= a.duration:
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        pass
    finally:
        counts = rec.close()
        executor.shutdown()
        spinner.join(5)
        node.destroy_node()
        rclpy.try_shutdown()
    print(f'recorded {counts}', flush=True)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
