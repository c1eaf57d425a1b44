"""One rosbag2 through the depth node's frame work, offline: its outputs into a new MCAP bag.

Nothing here re-implements the node: each camera gets the node's own admission and decoding
(ros/runtime/inputs/subscriptions.py NodeInputs: stamp order, encoding, size, data size), CameraInfo
by stamp and rectification (ros/runtime/inputs/camera_views.py), reject counting
(ros/runtime/rejects.py), THE DA3 frame path (pipelines/depth.py) with the node's options
(ros/depth/params.py `depth_frame_options`), the metric scale of every kind
(pipelines/depth_scale.py, with the node's side inputs: ros/depth/scale_inputs.py, and a scale
state per camera: the filter runs in bag time) and the node's message builders
(ros/msgs/depth_outputs.py). What differs is only the transport: messages come
from the bag in its order, every frame is processed (the replay of a bag paced by the node's
output), and outputs are written, not published.

The node waits up to `camera_info_wait_s` for a CameraInfo that arrives after its image (and
`metric_cloud_wait_s` for a LiDAR scan); offline the wait is a look-ahead in bag time: an image is
processed once the bag has been read that far past it (CameraInfos, scans and TF in that window
are cached first), so no wall-clock wait happens; a frame takes the scans that had arrived by its
bag time plus the scan wait, as the node would have.
"""
from __future__ import annotations

import dataclasses
import posixpath
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path

from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from tf2_msgs.msg import TFMessage

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth import DA3FramePath, engine_kind
from tt_depth_ros.pipelines.depth_scale import ScaleState, scale_depth_frame
from tt_depth_ros.ros.depth.kind_rules import (
    check_kind_params,
    no_camera_info_fallback,
    uses_model_intrinsics,
)
from tt_depth_ros.ros.depth.params import DepthParams, depth_frame_options
from tt_depth_ros.ros.depth.scale_inputs import ScaleSideInputs
from tt_depth_ros.ros.depth.scale_params import needs_tf, scale_settings
from tt_depth_ros.ros.msgs.depth_outputs import depth_output_msgs, metric_output_types
from tt_depth_ros.ros.runtime.diagnostics import NodeStats
from tt_depth_ros.ros.runtime.engine_builder import PreparedShapes
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView, CameraViews
from tt_depth_ros.ros.runtime.inputs.metric_cloud_input import TOPIC as METRIC_CLOUD
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import TOPIC as METRIC_DEPTH
from tt_depth_ros.ros.runtime.inputs.subscriptions import NodeInputs
from tt_depth_ros.ros.runtime.rejects import RejectReporter
from tt_depth_ros.tools.bag.io import default_typestore_distro, message_class, zero_padded_cdr
from tt_depth_ros.tools.bag.sample import typestore_for
from tt_depth_ros.tools.batch.cameras import Camera, check_cameras, default_cameras
from tt_depth_ros.tools.batch.offline_log import OfflineLogger

KEY = 'camera'   # the depth node's camera key


class BagFailed(Exception):
    """A bag that cannot be processed; the message names the problem and what to do."""


NodeLogger = OfflineLogger   # an rclpy-logger face over `logging` (offline_log.py)


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
    """The node-side state of one camera: admission, CameraInfos, scale side inputs, counters.

    The node's own parts, without a node: decoding and prechecks (NodeInputs), CameraInfo by stamp
    and rectification (CameraViews), throttled reject reports, the metric-scale side inputs.
    The bag's look-ahead replaces the node's wall-clock waits (camera_info_wait_s 0).
    """

    def __init__(self, cam: Camera, p: DepthParams, logger: NodeLogger) -> None:
        self.cam = cam
        self.frames_in = self.frames_out = 0
        self.stats = NodeStats()
        self.skipped: Counter = Counter()
        offline = dataclasses.replace(p, camera_info_wait_s=0.0, metric_depth_wait_s=0.0)
        self._rejects = RejectReporter(logger, self.stats, lambda: p.bad_input_log_period)
        self.inputs = NodeInputs(None, lambda: offline, None, self.stats, self.reject, None)
        self.views = CameraViews(lambda: offline, self.reject, logger)
        self.side = ScaleSideInputs()
        self.scale_state = ScaleState()
        self.routes = {cam.camera_info: [(CameraInfo, lambda m, t: self.views.on_camera_info(
            KEY, 'camera_info', m))]}
        if p.scale_source == 'depth':
            self.routes[self.metric_depth_topic] = [(Image, self._on_metric_depth)]
        if p.scale_source == 'cloud':
            self.routes[self.metric_cloud_topic] = [(PointCloud2, self._on_cloud)]
        if needs_tf(p):
            self.routes['/tf'] = [(TFMessage, lambda m, t: self.side.tf.add_msg(m, False))]
            self.routes['/tf_static'] = [(TFMessage, lambda m, t: self.side.tf.add_msg(m, True))]

    @property
    def metric_depth_topic(self) -> str:
        """The node's `metric_depth` input in the camera's namespace."""
        return posixpath.join(self.cam.ns, METRIC_DEPTH)

    @property
    def metric_cloud_topic(self) -> str:
        """The node's `metric_cloud` input in the camera's namespace."""
        return posixpath.join(self.cam.ns, METRIC_CLOUD)

    def reject(self, reason: str, message: str) -> None:
        """Count a skipped frame and log it as the node would (throttled per reason)."""
        self.skipped[reason] += 1
        self._rejects.reject(reason, message)

    def _on_metric_depth(self, msg, t: int) -> None:
        error = self.side.metric_depth.put(msg)
        if error is not None:
            self.reject('metric_depth', error)

    def _on_cloud(self, msg, t: int) -> None:
        error = self.side.clouds.put(msg, arrival=t)   # the scan arrived at its bag time
        if error is not None:
            self.reject('metric_cloud', error)

    def camera_view(self, kind: ModelKind, focal_source: str, rgb, stamp) -> CameraView | None:
        """The node's choice of intrinsics for this frame (ros/depth/node.py `_camera_view`)."""
        if uses_model_intrinsics(kind, focal_source, self.views.store.has_any(KEY)):
            return CameraView(rgb, None, 0.0, None)
        return self.views.view(KEY, rgb, stamp, no_camera_info_fallback(kind))

    def summary(self) -> dict:
        return {'image': self.cam.image, 'camera_info': self.cam.camera_info, 'ns': self.cam.ns,
                'frames_in': self.frames_in, 'frames_out': self.frames_out,
                'skipped': dict(sorted(self.skipped.items()))}


class DepthBagJob:
    """Run one bag's cameras through a built DA3 engine (any kind) and write the node's outputs.

    Args:
        engine: the engine (built once per process from the node's parameters).
        p: the depth node's parameter values.
        logger: where the node's log lines go (prefixed with the bag).
    """

    def __init__(self, engine: Engine, p: DepthParams, logger: NodeLogger) -> None:
        kind = engine_kind(engine.info.details)
        try:
            check_kind_params(p, kind)   # the node's configure check
        except ValueError as exc:
            raise BagFailed(f'the depth node would not configure with these parameters: {exc}; '
                            'fix the parameter file') from None
        self.engine, self.p, self.log, self.kind = engine, p, logger, kind
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

        lookahead_ns = (int(self.p.camera_info_wait_s * 1e9)
                        if self.p.camera_info_sync == 'exact' else 0)
        if self.p.scale_source == 'cloud':
            lookahead_ns = max(lookahead_ns, int(self.p.metric_cloud_wait_s * 1e9))
        ts = typestore_for(default_typestore_distro())
        with Reader(bag) as reader:
            types = {c.topic: c.msgtype for c in reader.connections}
            cameras = cameras or default_cameras(types, self.p.input_transport == 'compressed')
            check_cameras(cameras, types)
            self.log.info('cameras: ' + ', '.join(f'{c.image} -> {c.ns}' for c in cameras))
            outputs = metric_output_types(self.p) if self.kind is ModelKind.METRIC else {}
            counts: Counter = Counter()
            now = {'t': 0}
            with Writer(out, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
                conns = {}

                def write(topic: str, cls, msg) -> None:
                    if topic not in conns:   # relative kinds: the topics they publish on
                        conns[topic] = writer.add_connection(topic, msgtype_of(cls), typestore=ts)
                    cdr = zero_padded_cdr(serialize_message(msg), conns[topic].msgtype, ts)
                    writer.write(conns[topic], now['t'], cdr)
                    counts[topic] += 1

                work = {cam.image: _CameraWork(cam, self.p, self.log) for cam in cameras}
                routes: dict = {}
                for w in work.values():
                    side = {'depth': w.metric_depth_topic,
                            'cloud': w.metric_cloud_topic}.get(self.p.scale_source)
                    if side is not None and side not in types:
                        raise BagFailed(f'{side} (the depth node input for '
                                        f"scale_source={self.p.scale_source!r}) is not in "
                                        f'the bag; it has {sorted(types)}')
                    for topic, handlers in w.routes.items():
                        routes.setdefault(topic, []).extend(handlers)
                wanted = [c for c in reader.connections if c.topic in work or c.topic in routes]
                for cam in cameras:
                    for rel, cls in outputs.items():
                        conns[cam.output(rel)] = writer.add_connection(
                            cam.output(rel), msgtype_of(cls), typestore=ts)
                pending: deque = deque()   # images read, waiting for the CameraInfo look-ahead
                started: deque = deque()   # frames handed to the engine, not yet written
                depth = self.frames_in_flight()

                def emit(st: _Started) -> None:
                    now['t'] = st.t
                    for rel, msg in self._finish(st):
                        write(st.work.cam.output(rel), type(msg), msg)

                def flush(before_ns: int | None) -> None:
                    while pending and (before_ns is None or pending[0][0] + lookahead_ns
                                       < before_ns):
                        t, conn, raw = pending.popleft()
                        st = self._start(work[conn.topic], conn.msgtype, raw, t)
                        if st is not None:
                            started.append(st)
                        while len(started) >= depth:
                            emit(started.popleft())

                for conn, t, raw in reader.messages(connections=wanted):
                    flush(t)
                    for msg_type, callback in routes.get(conn.topic, ()):
                        callback(deserialize_message(bytes(raw), msg_type), t)
                    if conn.topic in work:
                        pending.append((t, conn, bytes(raw)))
                flush(None)
                while started:
                    emit(started.popleft())
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

    def frames_in_flight(self) -> int:
        """2 when the engine pipelines (ttnn with two command queues) and the model is metric.

        Frame N+1 then goes to the engine before frame N's messages are built, so the upload
        and the host's decoding overlap the device. Relative and NESTED outputs, and any with a
        scale source, read the node's scale state when they publish, so they keep one frame in
        flight (the node's order).
        """
        return 2 if (self.engine.pipelines and self.kind is ModelKind.METRIC
                     and self.p.scale_source == 'none') else 1

    def _start(self, w: _CameraWork, msgtype: str, raw: bytes, t: int):
        """The node's `_on_image` + the first half of `process`: a _Started, or None (skipped)."""
        t0 = time.perf_counter()
        msg = deserialize_message(raw, message_class(msgtype))
        w.frames_in += 1
        w.stats.on_input()
        if not w.inputs.precheck(msg, 'image'):
            return None
        rgb = w.inputs.decode(msg, 'image')
        if rgb is None:
            return None
        options = depth_frame_options(self.p, self.kind.is_metric)
        try:
            plan = self.path.plan(rgb.shape[:2], options)
        except ValueError as exc:
            w.reject('size', str(exc))
            return None
        view = w.camera_view(self.kind, self.p.focal_source, rgb, msg.header.stamp)
        if view is None:
            return None
        t1 = time.perf_counter()
        try:
            self.prepared.ensure(self.engine, plan.net_hw, self.log, plan.resize)
            frame = self.path.start(view.rgb, self.path.intrinsics(view.K, view.tx), options,
                                    border=view.border, plan=plan)
        except Exception as exc:  # noqa: BLE001 - the node's worker counts it and goes on
            w.reject('processing', f'{type(exc).__name__}: {exc}')
            return None
        return _Started(w, msg, t, frame, t1 - t0)

    def _finish(self, st: '_Started') -> list:
        """The second half of `process` for a started frame: its output messages."""
        w, msg = st.work, st.msg
        try:
            frame = self.path.finish(st.frame)
        except Exception as exc:  # noqa: BLE001 - the node's worker counts it and goes on
            w.reject('processing', f'{type(exc).__name__}: {exc}')
            return []
        t2 = time.perf_counter()
        p = self.p
        try:
            scaled = scale_depth_frame(self.kind, frame, scale_settings(p),
                                       p.min_confidence, p.max_depth_m,
                                       w.side.for_frame(p, msg.header, st.t), w.scale_state)
            msgs = list(depth_output_msgs(p, msg.header, scaled))
        except Exception as exc:  # noqa: BLE001 - as above
            w.reject('processing', f'{type(exc).__name__}: {exc}')
            return []
        self.stages.update({'decode': st.decode_s, **frame.timings,
                            'messages': time.perf_counter() - t2})
        if scaled.scale_failed:
            w.reject('scale', scaled.failure_message)
        else:
            w.frames_out += 1
        return msgs


@dataclass
class _Started:
    """A frame of the bag handed to the engine: its camera, message, bag time, started frame."""

    work: _CameraWork
    msg: object
    t: int
    frame: object            # pipelines.depth.StartedFrame
    decode_s: float
