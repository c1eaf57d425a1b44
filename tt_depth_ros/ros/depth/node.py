"""Depth node: camera Image + CameraInfo in; metric depth, its CameraInfo and a cloud out.

One frame (docs/design.md §2): the executor validates the message and puts it in its camera's
latest-frame mailbox; the worker decodes it to RGB, takes intrinsics from the CameraInfo of its
stamp (P with binning/ROI, scaled explicitly to the image size; rectified when D != 0) and runs THE
DA3 frame path (pipelines/depth.py: upstream resize to the network grid, engine, metres from the
focal AT NETWORK RESOLUTION, sky (+Inf) and out-of-range depth, optional resample to camera
resolution), then publishes `depth` (32FC1 m / 16UC1 mm), `depth/camera_info` (same size as the
depth image), `points` (organized, depth_image_proc layout) and optionally `depth/colorized` and
`depth/compressedDepth` (image_transport's compressedDepth PNG, ros/msgs/compressed_depth.py),
all with the input header. The other DA3 kinds (any-view, mono, NESTED) run the same frame path;
their metric scale is pipelines/depth_scale.py and what they publish ros/msgs/depth_outputs.py
lists.

One node serves one camera (`cameras` empty: `image`, `camera_info`, outputs beside them) or
several from its one engine (ros/depth/cameras_param.py): each camera is a `DepthCamera`
(ros/depth/camera.py: subscriptions, CameraInfo key, scale side inputs, figures, publishers,
statistics) and the worker takes their frames round-robin (ros/runtime/scheduler.py). A frame is
`start`ed (decode, camera, engine submit) and `finish`ed (collect, scale, publish) on its own
camera's state. This file holds only the ROS work: subscribe, call, publish.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from sensor_msgs.msg import PointCloud2

from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth import (
    DA3FramePath,
    FrameOptions,
    FrameRequest,
    StartedFrame,
    engine_kind,
)
from tt_depth_ros.pipelines.depth_scale import scale_depth_frame
from tt_depth_ros.ros.depth.camera import CameraFrame, DepthCamera, camera_key
from tt_depth_ros.ros.depth.cameras_param import parse_cameras, shapes_needed
from tt_depth_ros.ros.depth.kind_rules import (
    check_kind_params,
    no_camera_info_fallback,
    uses_model_intrinsics,
)
from tt_depth_ros.ros.depth.params import (
    DEPTH_NODE_PARAMS,
    DepthParams,
    depth_frame_options,
    validate_depth_params,
)
from tt_depth_ros.ros.depth.scale_inputs import ScaleSideInputs
from tt_depth_ros.ros.depth.scale_params import needs_tf, scale_settings
from tt_depth_ros.ros.msgs.depth_outputs import depth_output_msgs, depth_topics
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.engine_builder import build_node_engine
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView
from tt_depth_ros.ros.runtime.lifecycle_node import PerceptionLifecycleNode
from tt_depth_ros.ros.runtime.qos import qos_profile
from tt_depth_ros.ros.runtime.scheduler import CameraMailboxes
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer
from tt_depth_ros.ros.runtime.worker import FrameStages

CLOUD_QOS_DEPTH = 5


@dataclass
class StartedDepth:
    """A camera's frame handed to the engine (`DepthNode.start`); `finish` publishes it."""

    item: CameraFrame
    params: DepthParams        # the parameter values the frame started with (one snapshot)
    frame: StartedFrame
    decode_s: float


class DepthNode(PerceptionLifecycleNode):
    """Monocular depth (any DA3 model) as a lifecycle node; see the module docstring."""

    PARAM_SPECS = DEPTH_NODE_PARAMS
    PARAMS_TYPE = DepthParams

    def __init__(self, node_name: str = 'depth_node', **kwargs) -> None:
        """Declare parameters; nothing heavy happens before configure."""
        self.cameras: list[DepthCamera] = []
        self.frame_path: DA3FramePath | None = None
        self.kind: ModelKind | None = None
        self.tf = TfBuffer()       # one TF tree for every camera's scale (heights, scans, poses)
        super().__init__(node_name, **kwargs)

    def make_mailbox(self) -> CameraMailboxes:
        """A latest-frame slot per camera, taken round-robin (ros/runtime/scheduler.py)."""
        return CameraMailboxes(camera_key)

    def validate(self) -> list[str]:
        """Fixed network size must be both-or-neither and multiples of 14; valid cameras."""
        return validate_depth_params(self.params)

    def configure_for_engine(self) -> None:
        """The DA3 frame path of the engine's kind and the cameras' state.

        Raises ValueError (configure fails) for parameters the model kind cannot honour.
        """
        self.kind = engine_kind(self.engine.info.details)
        check_kind_params(self.params, self.kind)
        self.frame_path = DA3FramePath(self.engine, self.kind)
        self.cameras = [DepthCamera(spec, ScaleSideInputs(self.tf))
                        for spec in parse_cameras(self.params.cameras)]
        for cam in self.cameras:
            cam.reset()
        self.mailbox.configure({cam.key: cam.policy for cam in self.cameras})

    def build_engine(self):
        """The engine; several cameras: two command queues (ttnn) and a trace per size."""
        p = self.params
        cameras = parse_cameras(p.cameras)
        if len(cameras) < 2:
            return super().build_engine()
        default = (p.expected_width, p.expected_height) if p.expected_width else None
        return build_node_engine(p, self.get_logger(), self.cancel, ttnn_command_queues=2,
                                 max_shapes=shapes_needed(cameras, default))

    def expected_preparations(self) -> list[tuple]:
        """Each camera's expected size (its `size`, else expected_width x expected_height).

        Raises ValueError when the engine cannot keep that many shapes prepared at once.
        """
        out, who = [], {}
        for cam in self.cameras:
            w, h = cam.spec.size or (self.params.expected_width, self.params.expected_height)
            if w and h:
                plan = tuple(self.frame_path.plan((h, w), self.frame_options()))
                if plan not in out:
                    out.append(plan)
                who.setdefault(plan, []).append(f'{cam.key} {w}x{h}')
        limit = self.engine.max_prepared
        if limit is not None and len(out) > limit:
            shapes = '; '.join(f'network {net[0]}x{net[1]}: {", ".join(who[(net, r)])}'
                               for net, r in out)
            raise ValueError(f'the cameras need {len(out)} prepared shapes at once ({shapes}) '
                             f'but the engine keeps {limit}: give the cameras fewer distinct '
                             'sizes (or one network_height/network_width), or serve them from '
                             'more nodes (multi_camera.launch.py share_engine:=false)')
        return out

    def frame_options(self) -> FrameOptions:
        """The frame path's options from the current (partly runtime) parameters."""
        return depth_frame_options(self.params, self.kind.is_metric)

    def create_outputs(self) -> None:
        """Each camera's publishers of the model kind's topics (ros/msgs/depth_outputs.py)."""
        topics = depth_topics(self.params, self.kind)
        for cam in self.cameras:
            cam.pubs = {topic: self.add_publisher(msg_type, cam.spec.output(topic))
                        for topic, msg_type in topics.items()}

    def create_inputs(self) -> None:
        """Per camera: image (or image/compressed), camera_info, the scale's side inputs."""
        p = self.params
        for cam in self.cameras:
            cam.side_inputs.clear()
            cam.scale_state.clear()
            cam.camera_info_sub = self.subscribe_camera_info(cam.spec.camera_info, cam.key)
            self.subscribe_image(cam.spec.image, partial(self._on_image, cam), cam.spec.transport)
            if p.scale_source == 'depth':
                self.subscribe_metric_depth(cam.side_inputs.metric_depth, cam.metric_depth_topic)
            if p.scale_source == 'cloud':
                # a few scans deep: one may arrive while the previous is still being converted
                qos = qos_profile(p.input_reliability, max(p.input_depth, CLOUD_QOS_DEPTH))
                self.track_subscription(self.create_subscription(
                    PointCloud2, cam.metric_cloud_topic, partial(self._on_cloud, cam), qos))
        if needs_tf(p):
            self.subscribe_tf(self.tf)

    def _on_cloud(self, cam: DepthCamera, msg) -> None:
        error = cam.side_inputs.clouds.put(msg)
        if error is not None:
            self.reject('metric_cloud', self._named(cam, error))

    def _on_image(self, cam: DepthCamera, msg) -> None:
        self.stats.on_input()
        cam.stats.on_input()
        if self.precheck_image(msg, cam.label):
            dropped = self.offer(CameraFrame(cam, msg))
            cam.stats.on_offer(dropped)
            if dropped:
                cam.stats.on_drop()

    def process(self, item: CameraFrame) -> None:
        """Worker: one frame from message to its published outputs (module docstring)."""
        started = self.start(item)
        if started is not None:
            self.finish(started)

    def start(self, item: CameraFrame) -> StartedDepth | None:
        """Decode, place in its camera and hand to the engine; None = skipped (reported)."""
        placed = self._place(item)
        if placed is None:
            return None
        request, p, decode_s = placed
        return StartedDepth(item, p, self.frame_path.start(*request), decode_s)

    def start_frames(self, items: list[CameraFrame]) -> list[StartedDepth]:
        """`start` for the frames several cameras have waiting (batched when the engine can)."""
        placed = []
        for item in items:
            try:
                one = self._place(item)
            except Exception as exc:  # noqa: BLE001 - one camera's bad frame spares the others
                self.rejects.processing_failed(item, exc)
                continue
            if one is not None:
                placed.append((item, *one))
        frames = self.frame_path.start_batch([request for _, request, _, _ in placed])
        return [StartedDepth(item, p, frame, decode_s)
                for (item, _, p, decode_s), frame in zip(placed, frames)]

    def _place(self, item: CameraFrame) -> tuple[FrameRequest, DepthParams, float] | None:
        """Decode a frame and give it its camera: the frame path request, or None (reported)."""
        t0 = time.perf_counter()
        cam, msg = item
        rgb = self.decode_image(msg, cam.label)
        if rgb is None:
            return None
        p = self.params
        options = self.frame_options()
        try:
            plan = self.frame_path.plan(rgb.shape[:2], options)
        except ValueError as exc:
            self.reject('size', self._named(cam, str(exc)))
            return None
        view = self._camera_view(cam, rgb, msg.header.stamp)     # rectified when D != 0
        if view is None:
            return None
        t1 = time.perf_counter()
        self.ensure_prepared(plan.net_hw, plan.resize)
        request = FrameRequest(view.rgb, self.frame_path.intrinsics(view.K, view.tx), options,
                               view.border, plan)
        return request, p, t1 - t0

    def discard(self, started: StartedDepth) -> None:
        """Stop with a frame in flight: collect it from the engine, publish nothing (a drop)."""
        self.engine.collect(started.frame.ticket)
        self.stats.on_drop()
        started.item.camera.stats.on_drop()

    def frame_stages(self) -> FrameStages | None:
        """Several cameras: the frame work as start/finish halves (one camera: `process`).

        Two starts in flight on a pipelining engine (ttnn with two command queues); the
        same-shape frames of waiting cameras in one forward when `batch_frames` and the engine
        batches.
        """
        if len(self.cameras) < 2:
            return None
        batch = len(self.cameras) if self.params.batch_frames and self.engine.batches else 1
        return FrameStages(self.start_frames, self.finish, self.discard,
                           in_flight=2 if self.engine.pipelines else 1, batch=batch)

    def finish(self, started: StartedDepth) -> None:
        """Collect a started frame, scale it with its camera's inputs, publish there, count."""
        cam, msg = started.item
        p = started.params
        frame = self.frame_path.finish(started.frame)
        scaled = scale_depth_frame(
            self.kind, frame, scale_settings(p), p.min_confidence, p.max_depth_m,
            cam.side_inputs.for_frame(p, msg.header), cam.scale_state)
        t2 = time.perf_counter()
        cam.publish(depth_output_msgs(p, msg.header, scaled, cam.listening, cam.cloud_buffer))
        t3 = time.perf_counter()
        cam.figures.record(scaled)
        if scaled.scale_failed:
            self.reject('scale', self._named(cam, scaled.failure_message))
            return
        stages = {'decode': started.decode_s, **frame.timings, 'publish': t3 - t2}
        now = self.get_clock().now().nanoseconds
        latency = (now - stamp_to_ns(msg.header.stamp)) / 1e9
        self.stats.on_output(latency, stages)
        cam.stats.on_output(latency, stages)

    @staticmethod
    def _named(cam: DepthCamera, message: str) -> str:
        return message if cam.spec.single else f'{cam.key}: {message}'

    def _camera_view(self, cam: DepthCamera, rgb, stamp) -> CameraView | None:
        """The frame's camera per `focal_source`; None = frame skipped (already reported).

        The CameraInfo of its stamp (rectified when D != 0), or K None for the model's estimate.
        """
        if uses_model_intrinsics(self.kind, self.params.focal_source,
                                 self._camera_info_known(cam)):
            return CameraView(rgb, None, 0.0, None)
        return self.camera_view(cam.key, rgb, stamp,
                                fallback=no_camera_info_fallback(self.kind))

    def _camera_info_known(self, cam: DepthCamera) -> bool:
        """focal_source 'auto': whether the camera's CameraInfo is (or is about to be) there.

        Before the first CameraInfo, a frame waits up to camera_info_wait_s for it only when a
        CameraInfo publisher exists (its first message may trail the image); a camera without
        one never waits and uses the model's estimate at once.
        """
        if not self.kind.estimates_intrinsics or self.params.focal_source != 'auto':
            return True
        if self.camera_infos.has_any(cam.key):
            return True
        if not self.count_publishers(cam.camera_info_sub.topic_name):
            return False
        return self.camera_infos.wait_any(cam.key, self.params.camera_info_wait_s)

    def _kind_figures(self, cam: DepthCamera) -> dict:
        if self.kind is None or (self.kind is ModelKind.METRIC and
                                 self.params.scale_source == 'none'):
            return {}
        return {**cam.figures.snapshot(), 'model_kind': self.kind.value,
                'scale_source_configured': self.params.scale_source,
                'focal_source_configured': self.params.focal_source}

    def diagnostics_extra(self) -> dict:
        """Model kind, focal and scale figures of the last frame (one camera; else per camera)."""
        if len(self.cameras) == 1:
            return self._kind_figures(self.cameras[0])
        extra = {'cameras': ','.join(cam.key for cam in self.cameras)}
        if self.kind is not None and self.kind is not ModelKind.METRIC:
            extra['model_kind'] = self.kind.value
        return extra

    def diagnostics_statuses(self, state: str) -> list:
        """With several cameras, one status per camera: its rates, drops, latency, figures."""
        if len(self.cameras) < 2:
            return []
        device = self.engine.info.device if self.engine is not None else ''
        out = []
        for cam in self.cameras:
            counts = self.mailbox.counters(cam.key)
            extra = {'camera': cam.key, 'image_topic': cam.spec.image,
                     'dropped_mailbox': counts['dropped'], 'frames_taken': counts['taken'],
                     **self._kind_figures(cam)}
            out.append(cam.stats.to_status(f'{self.get_fully_qualified_name()}: {cam.key}',
                                           device, state, extra,
                                           drop_warn_ratio=self.params.drop_warn_ratio))
        return out
