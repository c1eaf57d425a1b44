"""One rosbag2 through the depth node's frame work, offline: its outputs into a new MCAP bag.

Nothing here re-implements the node: each camera gets the node's own admission and decoding
(ros/runtime/inputs.py NodeInputs: stamp order, encoding, size, data size), CameraInfo by stamp
and rectification (ros/runtime/camera_views.py), reject counting (ros/runtime/rejects.py), THE
DA3 frame path (pipelines/depth.py) with the node's options (ros/depth/node.py
`depth_frame_options`) and the node's message builders (ros/msgs/metric_outputs.py). What
differs is only the transport: messages come from the bag in its order, every frame is processed
(the replay of a bag paced by the node's output), and outputs are written, not published.

The node waits up to `camera_info_wait_s` for a CameraInfo that arrives after its image; offline
the wait is a look-ahead in bag time: an image is processed once the bag has been read that far
past it (CameraInfos in that window are cached first), so no wall-clock wait happens.
"""
from __future__ import annotations

import logging
import time
from collections import Counter, deque
from pathlib import Path

from rclpy.serialization import deserialize_message, serialize_message

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.pipelines.depth import DA3FramePath, engine_kind
from tt_depth_ros.ros.depth.node import depth_frame_options
from tt_depth_ros.ros.depth.relative_outputs import check_kind_params
from tt_depth_ros.ros.msgs.metric_outputs import metric_output_msgs, metric_output_types
from tt_depth_ros.ros.runtime.camera_views import CameraViews
from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.engine_builder import PreparedShapes
from tt_depth_ros.ros.runtime.inputs import NodeInputs
from tt_depth_ros.ros.runtime.rejects import RejectReporter
from tt_depth_ros.tools.bag.io import default_typestore_distro, message_class, zero_padded_cdr
from tt_depth_ros.tools.bag.sample import typestore_for
from tt_depth_ros.tools.batch.cameras import Camera, check_cameras, default_cameras

KEY = 'camera'   # the depth node's camera key
NO_INFO_FALLBACK = 'using the default focal; the metric scale is unreliable'


class BagFailed(Exception):
    """A bag that cannot be processed; the message names the problem and what to do."""


class NodeLogger:
    """An rclpy-logger face (`info`, `warning(..., once=True)`, `error`) over `logging`."""

    def __init__(self, prefix: str, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger('tt_depth_batch')
        self._prefix, self._once = prefix, set()

    def _emit(self, level: int, msg: str, once: bool) -> None:
        if once:
            if msg in self._once:
                return
            self._once.add(msg)
        self._log.log(level, f'{self._prefix}{msg}')

    def info(self, msg: str, once: bool = False) -> None:
        self._emit(logging.INFO, msg, once)

    def warning(self, msg: str, once: bool = False) -> None:
        self._emit(logging.WARNING, msg, once)

    def error(self, msg: str, once: bool = False) -> None:
        self._emit(logging.ERROR, msg, once)


HINTS = {
    'no_camera_info': "no CameraInfo came: pass the right --camera camera_info=, or set "
                      "camera_info_mode 'default_focal' (metric scale unreliable)",
    'camera_info_stamp': "no CameraInfo has the images' stamps: camera_info_sync 'latest' or a "
                         'camera_info_tolerance_s',
    'encoding': 'the image topic has an encoding the node does not decode: pick the camera '
                "driver's colour image topic with --camera image=",
}


def _hint(skipped: dict) -> str:
    """What to do about the most common reject reason of a bag that produced nothing."""
    if not skipped:
        return 'the bag has no image messages on the camera topics'
    top = max(skipped, key=skipped.get)
    return HINTS.get(top, f'see the [{top}] log lines above for why')


def bag_cameras(bag: Path, cameras: list[Camera], compressed: bool) -> list[Camera]:
    """The cameras to run on `bag` (given, else its defaults), checked against its topics.

    Cheap (the bag's index only): a bag with missing topics fails before any engine is built.
    """
    from rosbags.rosbag2 import Reader

    with Reader(bag) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
    cameras = cameras or default_cameras(types, compressed)
    check_cameras(cameras, types)
    return cameras


def msgtype_of(cls: type) -> str:
    """'sensor_msgs/msg/Image' of a generated message class."""
    return f"{cls.__module__.split('.')[0]}/msg/{cls.__name__}"


class _CameraWork:
    """The node-side state of one camera: admission, CameraInfos, counters."""

    def __init__(self, cam: Camera, p: dict, logger: NodeLogger) -> None:
        self.cam = cam
        self.stats = NodeStats()
        self.skipped: Counter = Counter()
        self.frames_in = self.frames_out = 0
        self._rejects = RejectReporter(logger, self.stats, lambda: p['bad_input_log_period'])
        # admission and decoding need no node (it only creates subscriptions)
        self.inputs = NodeInputs(None, p, None, self.stats, self.reject, None)
        self.views = CameraViews(dict(p, camera_info_wait_s=0.0), self.reject, logger)

    def reject(self, reason: str, message: str) -> None:
        self.skipped[reason] += 1
        self._rejects.reject(reason, message)

    def summary(self) -> dict:
        return {'image': self.cam.image, 'camera_info': self.cam.camera_info, 'ns': self.cam.ns,
                'frames_in': self.frames_in, 'frames_out': self.frames_out,
                'skipped': dict(sorted(self.skipped.items()))}


class DepthBagJob:
    """Run one bag's cameras through a built metric DA3 engine and write the outputs.

    Args:
        engine: the engine (built once per process from the node's parameters).
        p: the depth node's parameter values.
        logger: where the node's log lines go (prefixed with the bag).
    """

    def __init__(self, engine: Engine, p: dict, logger: NodeLogger) -> None:
        kind = engine_kind(engine.info.details)
        check_kind_params(p, kind)
        if kind != 'metric':
            raise BagFailed(f'model {p["model"]!r} is a {kind!r} DA3 model; tt-depth-batch runs '
                            'metric models (da3metric-*) so far: use the depth node for it')
        self.engine, self.p, self.log = engine, p, logger
        self.path = DA3FramePath(engine, kind)
        self.prepared = PreparedShapes()
        self.stages: Counter = Counter()

    def run(self, bag: Path, cameras: list[Camera], out: Path) -> dict:
        """Read `bag`, write the outputs into the new MCAP bag `out`; returns the frame counts.

        `cameras` empty = the bag's default cameras (tools/batch/cameras.py).

        Raises:
            BagFailed: topics missing or of the wrong type, no frame produced.
            Exception: whatever the bag library raises for a corrupt or truncated bag.
        """
        from rosbags.rosbag2 import Reader, StoragePlugin, Writer

        lookahead_ns = (int(self.p['camera_info_wait_s'] * 1e9)
                        if self.p['camera_info_sync'] == 'exact' else 0)
        ts = typestore_for(default_typestore_distro())
        with Reader(bag) as reader:
            types = {c.topic: c.msgtype for c in reader.connections}
            cameras = cameras or default_cameras(types, self.p['input_transport'] == 'compressed')
            check_cameras(cameras, types)
            self.log.info('cameras: ' + ', '.join(f'{c.image} -> {c.ns}' for c in cameras))
            work = {cam.image: _CameraWork(cam, self.p, self.log) for cam in cameras}
            infos = {cam.camera_info: work[cam.image] for cam in cameras}
            wanted = [c for c in reader.connections if c.topic in work or c.topic in infos]
            outputs = metric_output_types(self.p)
            counts: Counter = Counter()
            with Writer(out, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
                conns = {}
                for cam in cameras:
                    for rel, cls in outputs.items():
                        conns[cam.output(rel)] = writer.add_connection(
                            cam.output(rel), msgtype_of(cls), typestore=ts)
                pending: deque = deque()   # images read, waiting for the CameraInfo look-ahead

                def flush(before_ns: int | None) -> None:
                    while pending and (before_ns is None or pending[0][0] + lookahead_ns
                                       < before_ns):
                        t, conn, raw = pending.popleft()
                        cam_work = work[conn.topic]
                        for rel, msg in self._frame(cam_work, conn.msgtype, raw):
                            topic = cam_work.cam.output(rel)
                            cdr = zero_padded_cdr(serialize_message(msg), conns[topic].msgtype, ts)
                            writer.write(conns[topic], t, cdr)
                            counts[topic] += 1

                for conn, t, raw in reader.messages(connections=wanted):
                    flush(t)
                    if conn.topic in infos:
                        cls = message_class(conn.msgtype)
                        info = deserialize_message(bytes(raw), cls)
                        infos[conn.topic].views.on_camera_info(KEY, conn.topic, info)
                    else:
                        pending.append((t, conn, bytes(raw)))
                flush(None)
        cams = [w.summary() for w in work.values()]
        frames_out = sum(c['frames_out'] for c in cams)
        result = {'cameras': cams, 'frames_in': sum(c['frames_in'] for c in cams),
                  'frames_out': frames_out, 'skipped': dict(sum(
                      (Counter(c['skipped']) for c in cams), Counter())),
                  'topics': dict(sorted(counts.items())), 'stages_s': dict(self.stages)}
        if frames_out == 0:
            raise BagFailed(f'no frame produced ({result["frames_in"]} images read, skipped: '
                            f'{result["skipped"] or "none"}); {_hint(result["skipped"])}', result)
        return result

    def _frame(self, w: _CameraWork, msgtype: str, raw: bytes):
        """The node's `_on_image` + `process` for one image message: its output messages."""
        t0 = time.perf_counter()
        msg = deserialize_message(raw, message_class(msgtype))
        w.frames_in += 1
        w.stats.on_input()
        if not w.inputs.precheck(msg, 'image'):
            return []
        rgb = w.inputs.decode(msg, 'image')
        if rgb is None:
            return []
        options = depth_frame_options(self.p, True)
        height, width = rgb.shape[:2]
        try:
            net = options.network_hw(width, height)
        except ValueError as exc:
            w.reject('size', str(exc))
            return []
        view = w.views.view(KEY, rgb, msg.header.stamp, NO_INFO_FALLBACK)
        if view is None:
            return []
        t1 = time.perf_counter()
        try:
            self.prepared.ensure(self.engine, net, self.log)
            frame = self.path(view.rgb, self.path.intrinsics(view.K, view.tx), options,
                              border=view.border)
        except Exception as exc:  # noqa: BLE001 - the node's worker counts it and goes on
            w.reject('processing', f'{type(exc).__name__}: {exc}')
            return []
        t2 = time.perf_counter()
        msgs = list(metric_output_msgs(self.p, msg.header, frame))
        self.stages.update({'decode': t1 - t0, **frame.timings,
                            'messages': time.perf_counter() - t2})
        w.frames_out += 1
        return msgs
