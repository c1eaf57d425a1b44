"""Publish a rosbag2 into live topics as raw serialized messages (ros2 bag play, without ROS).

The bag's CDR bytes go straight into rclpy publishers of the matching class: no decode, no
re-encode. Messages are grouped into *frames*, each ending with one message on the frame topic
(the camera image), so three pacing modes make sense for a perception node:

- `recorded`: the bag's own timing (scaled by `speed`);
- `rate`: one frame every 1/rate_hz s on absolute deadlines (no drift), the other messages of a
  frame (camera_info, ...) published just before its image;
- `consumer`: as fast as the node keeps up: after each frame, wait for its output (matched by
  header stamp) on an output topic.

Options: topic remapping, `/clock` (for `use_sim_time`), loops (header stamps and clock shifted by
one bag span per pass so they stay unique and monotonic), and recording topics into a new bag
(tools/bag/record.py). Usage: `python -m tt_depth_ros.tools.bag.replay BAG --rate-hz 10 --clock`.
"""
from __future__ import annotations

import argparse
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from tt_depth_ros.tools.bag.io import BagMessage, has_header, header_stamp_ns, read_bag, restamp
from tt_depth_ros.tools.bag.loopback_option import add_loopback_option, apply_loopback_option

MODES = ('recorded', 'rate', 'consumer')


def group_frames(messages: list[BagMessage], frame_topic: str) -> list[list[BagMessage]]:
    """Split bag-ordered messages into frames ending with a `frame_topic` message.

    Messages after the last frame message join the last frame (published before its image).
    """
    frames, current = [], []
    for m in messages:
        current.append(m)
        if m.topic == frame_topic:
            frames.append(current)
            current = []
    if not frames:
        raise ValueError(f'no message on frame topic {frame_topic!r} in the selection')
    if current:
        frames[-1][-1:-1] = current
    return frames


def default_frame_topic(messages: list[BagMessage], types: dict[str, str]) -> str:
    """The busiest sensor_msgs/Image topic; ties prefer names ending 'image_raw', then 'image'."""
    counts = Counter(m.topic for m in messages if types[m.topic] == 'sensor_msgs/msg/Image')
    if not counts:
        raise ValueError('the bag has no sensor_msgs/msg/Image topic; pass frame_topic explicitly')
    return sorted(counts, key=lambda t: (-counts[t], not t.endswith('image_raw'),
                                         'image' not in t.rsplit('/', 1)[-1], len(t), t))[0]


class Primed(NamedTuple):
    """What `Player.prime` got: latencies (ms) of the frames answered, stamp offset to use next."""

    latencies_ms: list[float]
    next_offset_ns: int


class StampWaiter:
    """Raw subscription on an output topic; `wait` returns once a stamp (or a later one) arrived."""

    def __init__(self, node, topic: str, msgtype: str, qos_depth: int = 10):
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from tt_depth_ros.tools.bag.io import message_class
        self._cond = threading.Condition()
        self._latest = -1
        self._header = has_header(msgtype)
        self.count = 0
        qos = QoSProfile(depth=qos_depth, reliability=ReliabilityPolicy.RELIABLE)
        self.subscription = node.create_subscription(
            message_class(msgtype), topic, self._on_msg, qos, raw=True)

    def _on_msg(self, raw: bytes) -> None:
        with self._cond:
            self.count += 1
            self._latest = max(self._latest, header_stamp_ns(raw) if self._header else self.count)
            self._cond.notify_all()

    def wait(self, stamp_ns: int, count_before: int, timeout_s: float) -> bool:
        """True when an output with stamp >= stamp_ns (headerless: a new message) arrived."""
        target = stamp_ns if self._header else count_before + 1
        with self._cond:
            return self._cond.wait_for(lambda: self._latest >= target, timeout_s)


class Player:
    """Publishes pre-loaded bag messages on a caller-owned rclpy node (the caller spins it).

    Args:
        node: rclpy Node that owns the publishers.
        messages: bag messages in time order (tools/bag/io.read_bag).
        types: {topic: msgtype} of the messages.
        remap: {bag topic: published topic}.
        frame_topic: topic that ends a frame (default: default_frame_topic).
        publish_clock: publish rosgraph_msgs/Clock on /clock with the bag time of each message.
        qos_depth: KEEP_LAST depth of the (reliable) publishers.
        restamp_loops: on loop pass k > 0 shift header stamps and clock by k bag spans.
    """

    def __init__(self, node, messages: list[BagMessage], types: dict[str, str], *,
                 remap: dict[str, str] | None = None, frame_topic: str | None = None,
                 publish_clock: bool = False, qos_depth: int = 10, restamp_loops: bool = True):
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from tt_depth_ros.tools.bag.io import message_class
        self.node = node
        self.frame_topic = frame_topic or default_frame_topic(messages, types)
        self.frames = group_frames(messages, self.frame_topic)
        remap = dict(remap or {})
        unknown = sorted(set(remap) - set(types))
        if unknown:
            raise ValueError(f'remap names topics not in the selection: {unknown}')
        qos = QoSProfile(depth=qos_depth, reliability=ReliabilityPolicy.RELIABLE)
        self.publishers = {t: node.create_publisher(message_class(mt), remap.get(t, t), qos)
                           for t, mt in types.items()}
        self._header = {t: has_header(mt) for t, mt in types.items()}
        self.clock_pub = None
        if publish_clock:
            from rosgraph_msgs.msg import Clock
            self.clock_pub = node.create_publisher(Clock, '/clock', qos)
        self.restamp_loops = restamp_loops
        first, last = self.frames[0][-1].timestamp_ns, self.frames[-1][-1].timestamp_ns
        n = len(self.frames)
        period = (last - first) // (n - 1) if n > 1 else 100_000_000
        self.loop_span_ns = last - first + period

    def wait_for_subscribers(self, count: int = 1, timeout_s: float = 10.0,
                             all_topics: bool = False, settle_s: float = 2.0) -> bool:
        """Block until the frame topic's publisher (or every publisher) has `count` subscribers.

        The writer side matches first; `settle_s` more lets the readers match this writer too:
        a sample sent before that is lost even to a reliable reader (a volatile reader that
        matches late starts after it), and a loaded machine takes a while to complete discovery.
        """
        pubs = list(self.publishers.values()) if all_topics else [self.publishers[self.frame_topic]]
        if all_topics and self.clock_pub is not None:
            pubs.append(self.clock_pub)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() >= count for p in pubs):
                time.sleep(settle_s)
                return True
            time.sleep(0.02)
        return False

    def _publish(self, m: BagMessage, offset_ns: int) -> int | None:
        raw = m.raw
        stamp = None
        if self._header[m.topic]:
            stamp = header_stamp_ns(raw) + offset_ns
            if offset_ns:
                raw = restamp(raw, stamp)
        if self.clock_pub is not None:
            from builtin_interfaces.msg import Time
            from rosgraph_msgs.msg import Clock
            t = m.timestamp_ns + offset_ns
            self.clock_pub.publish(Clock(clock=Time(sec=t // 10**9, nanosec=t % 10**9)))
        self.publishers[m.topic].publish(raw)
        return stamp

    def play(self, mode: str = 'recorded', *, rate_hz: float | None = None, speed: float = 1.0,
             loops: int = 1, max_frames: int | None = None, consumer: StampWaiter | None = None,
             consumer_timeout_s: float = 10.0, on_frame=None, stop: threading.Event | None = None,
             progress=None, stamp_offset_ns: int = 0) -> dict:
        """Publish frames; returns {'frames_sent', 'consumer_timeouts', 'duration_s'}.

        Args:
            mode: 'recorded' | 'rate' | 'consumer'.
            rate_hz: frames per second for mode 'rate'.
            speed: time scale for mode 'recorded' (2.0 = twice as fast).
            loops: passes over the bag; 0 = until `stop` is set or `max_frames` reached.
            max_frames: stop after this many frames.
            consumer: output waiter for mode 'consumer'.
            consumer_timeout_s: how long to wait for each output in mode 'consumer'.
            on_frame: callable(stamp_ns, send_time_ns, frame_index) after each frame message.
            stop: event that ends playback early.
            progress: callable(str) for a progress line every ~2 s.
            stamp_offset_ns: added to every header stamp and clock value (keeps stamps unique
                across successive `play` calls, e.g. benchmark runs).
        """
        if mode not in MODES:
            raise ValueError(f'mode must be one of {MODES}, got {mode!r}')
        if mode == 'rate' and not (rate_hz and rate_hz > 0):
            raise ValueError(f"mode 'rate' needs rate_hz > 0, got {rate_hz}")
        if mode == 'recorded' and not speed > 0:
            raise ValueError(f'speed must be > 0, got {speed}')
        if mode == 'consumer' and consumer is None:
            raise ValueError("mode 'consumer' needs a StampWaiter on the node's output topic")
        sent, timeouts, k = 0, 0, 0
        t0 = time.monotonic()
        last_progress = t0
        bag_t0 = self.frames[0][-1].timestamp_ns
        loop = 0
        while loops == 0 or loop < loops:
            offset = stamp_offset_ns + (loop * self.loop_span_ns if self.restamp_loops else 0)
            for index, frame in enumerate(self.frames):
                if (stop is not None and stop.is_set()) or (max_frames and sent >= max_frames):
                    return self._stats(sent, timeouts, t0)
                if mode == 'rate':
                    deadline = t0 + k / rate_hz
                elif mode == 'recorded':
                    deadline = t0 + (frame[-1].timestamp_ns - bag_t0 + loop * self.loop_span_ns) \
                        / 1e9 / speed
                else:
                    deadline = 0.0
                _sleep_until(deadline)   # a frame's other messages go out just before its image
                for m in frame[:-1]:
                    self._publish(m, offset)
                before = consumer.count if consumer is not None else 0
                stamp = self._publish(frame[-1], offset)
                if on_frame is not None:
                    on_frame(stamp, time.time_ns(), index)
                sent += 1
                k += 1
                if mode == 'consumer' and not consumer.wait(stamp or 0, before,
                                                            consumer_timeout_s):
                    timeouts += 1
                now = time.monotonic()
                if progress is not None and now - last_progress >= 2.0:
                    progress(f'replay: {sent} frames in {now - t0:.1f} s')
                    last_progress = now
            loop += 1
        return self._stats(sent, timeouts, t0)

    def prime(self, consumer, outputs: int = 1, *, attempt_timeout_s: float = 10.0,
              total_timeout_s: float = 300.0, stamp_offset_ns: int = 0) -> Primed:
        """Send single frames until `outputs` of them produced an output on `consumer`.

        The first frames after discovery can be lost (a best-effort reader not yet matched to
        this writer), and a node's first output includes engine preparation, so each frame is
        waited for at most `attempt_timeout_s` and resent, within `total_timeout_s`.

        Returns:
            Latencies of the frames that got an output and the stamp offset to use next.
        """
        lat: list[float] = []
        deadline = time.monotonic() + total_timeout_s
        offset = stamp_offset_ns
        while len(lat) < outputs and time.monotonic() < deadline:
            sent: dict[int, int] = {}
            self.play('consumer', loops=1, max_frames=1, consumer=consumer,
                      consumer_timeout_s=min(attempt_timeout_s,
                                             max(deadline - time.monotonic(), 0.1)),
                      stamp_offset_ns=offset,
                      on_frame=lambda st, t, i, sent=sent: sent.update({st: t}))
            offset += self.loop_span_ns
            got = consumer.take()
            lat += [(got[k] - t) / 1e6 for k, t in sent.items() if k in got]
        return Primed(lat, offset)

    @staticmethod
    def _stats(sent: int, timeouts: int, t0: float) -> dict:
        return {'frames_sent': sent, 'consumer_timeouts': timeouts,
                'duration_s': time.monotonic() - t0}


def _sleep_until(deadline: float) -> None:
    """Sleep to a monotonic deadline; the last ~2 ms are spun for accuracy."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(left - 0.002 if left > 0.004 else 0)


def parse_remap(items: list[str]) -> dict[str, str]:
    """['from:=to', ...] -> {from: to} (ValueError on a malformed item)."""
    out = {}
    for item in items:
        if ':=' not in item:
            raise ValueError(f"remap must look like 'from:=to', got {item!r}")
        a, b = item.split(':=', 1)
        out[a] = b
    return out


def main(argv: list[str] | None = None) -> int:
    """Console entry point: replay a bag (optionally recording topics)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('bag', type=Path)
    ap.add_argument('--topics', nargs='+', help='bag topics to publish (default: all)')
    ap.add_argument('--remap', nargs='+', default=[], metavar='FROM:=TO')
    ap.add_argument('--frame-topic', help='topic ending each frame (default: busiest Image topic)')
    pace = ap.add_mutually_exclusive_group()
    pace.add_argument('--rate-hz', type=float, help='fixed frame rate')
    pace.add_argument('--speed', type=float, help='recorded timing scaled by this factor')
    pace.add_argument('--as-fast-as', metavar='TOPIC:TYPE',
                      help='wait for this output topic (header stamp match) after each frame')
    ap.add_argument('--loops', type=int, default=1, help='passes over the bag; 0 = forever')
    ap.add_argument('--no-restamp', action='store_true', help='keep original stamps on loops')
    ap.add_argument('--max-frames', type=int)
    ap.add_argument('--clock', action='store_true', help='publish /clock (use_sim_time)')
    ap.add_argument('--wait-subscribers', type=int, default=0,
                    help='wait until the frame topic has this many subscribers')
    ap.add_argument('--wait-all', action='store_true',
                    help='--wait-subscribers applies to every published topic (and /clock)')
    ap.add_argument('--record', type=Path, help='record --record-topic topics into this new bag')
    ap.add_argument('--record-topic', nargs='+', default=[], metavar='TOPIC[:TYPE]')
    add_loopback_option(ap)
    a = ap.parse_args(argv)

    apply_loopback_option(a)   # only on request: by default the ROS environment is used as is
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from tt_depth_ros.tools.bag.record import Recorder, parse_topic_specs

    messages, types = read_bag(a.bag, a.topics)
    rclpy.init()
    node = rclpy.create_node('bag_replay')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    recorder = None
    try:
        player = Player(node, messages, types, remap=parse_remap(a.remap),
                        frame_topic=a.frame_topic, publish_clock=a.clock,
                        restamp_loops=not a.no_restamp)
        waiter = None
        if a.as_fast_as:
            topic, _, msgtype = a.as_fast_as.partition(':')
            if not msgtype:
                raise ValueError('--as-fast-as needs TOPIC:TYPE, e.g. /camera/depth:'
                                 'sensor_msgs/msg/Image')
            waiter = StampWaiter(node, topic, msgtype)
        if a.record:
            recorder = Recorder(node, a.record, parse_topic_specs(a.record_topic))
        spinner.start()
        if recorder is not None:
            recorder.start(timeout_s=10.0)
        if a.wait_subscribers and not player.wait_for_subscribers(a.wait_subscribers,
                                                                  all_topics=a.wait_all):
            print(f'warning: fewer than {a.wait_subscribers} subscribers after 10 s; playing')
        mode = 'rate' if a.rate_hz else 'consumer' if waiter else 'recorded'
        print(f'replaying {a.bag} ({len(player.frames)} frames, frame topic '
              f'{player.frame_topic}, mode {mode}, '
              f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "unset (0)")})',
              flush=True)
        stats = player.play(mode, rate_hz=a.rate_hz, speed=a.speed or 1.0, loops=a.loops,
                            max_frames=a.max_frames, consumer=waiter, progress=print)
        print(f"sent {stats['frames_sent']} frames in {stats['duration_s']:.2f} s", flush=True)
        if recorder is not None:
            time.sleep(0.5)  # let the last outputs arrive
    except KeyboardInterrupt:
        pass
    finally:
        if recorder is not None:
            print(f'recorded {recorder.close()} into {a.record}')
        executor.shutdown()
        if spinner.is_alive():
            spinner.join(5)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
