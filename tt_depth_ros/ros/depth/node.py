"""Depth node: camera Image + CameraInfo in; metric depth, its CameraInfo and a cloud out.

One frame (docs/design.md §2): the executor validates the message and puts it in the latest-frame
mailbox; the worker decodes it to RGB, takes intrinsics from the CameraInfo of its stamp (P with
binning/ROI, scaled explicitly to the image size; rectified when D != 0) and runs THE DA3 frame
path (pipelines/depth.py: upstream resize to the network grid, engine, metres from the focal AT
NETWORK RESOLUTION, sky (+Inf) and out-of-range depth, optional resample to camera resolution),
then publishes `depth` (32FC1 m / 16UC1 mm), `depth/camera_info` (same size as the depth image),
`points` (organized, depth_image_proc layout) and optionally `depth/colorized` and
`depth/compressedDepth` (image_transport's compressedDepth PNG, ros/msgs/compressed_depth.py),
all with the input header. The other DA3 kinds (any-view, mono, NESTED) run the same frame path;
their metric scale is pipelines/depth_scale.py and what they publish ros/msgs/depth_outputs.py
lists. This file holds only the ROS work: subscribe, call, publish.
"""
from __future__ import annotations

import time

from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth import DA3FramePath, FrameOptions, engine_kind
from tt_depth_ros.pipelines.depth_scale import scale_depth_frame
from tt_depth_ros.ros.depth.figures import DepthFigures
from tt_depth_ros.ros.depth.kind_rules import (
    check_kind_params,
    no_camera_info_fallback,
    uses_model_intrinsics,
)
from tt_depth_ros.ros.depth.params import (
    DEPTH_NODE_PARAMS,
    DepthParams,
    depth_frame_options,
    relative_scale_settings,
    validate_depth_params,
)
from tt_depth_ros.ros.depth.scale_inputs import ScaleSideInputs
from tt_depth_ros.ros.msgs.cloud import CloudBuffer
from tt_depth_ros.ros.msgs.depth_outputs import depth_output_msgs, depth_topics
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView
from tt_depth_ros.ros.runtime.lifecycle_node import PerceptionLifecycleNode


class DepthNode(PerceptionLifecycleNode):
    """Monocular depth (any DA3 model) as a lifecycle node; see the module docstring."""

    PARAM_SPECS = DEPTH_NODE_PARAMS
    PARAMS_TYPE = DepthParams

    def __init__(self, node_name: str = 'depth_node', **kwargs) -> None:
        """Declare parameters; nothing heavy happens before configure."""
        self._pubs: dict = {}
        self._cloud_buffer = CloudBuffer()     # the worker publishes each cloud at once
        self.frame_path: DA3FramePath | None = None
        self.kind: ModelKind | None = None
        self.side_inputs = ScaleSideInputs()
        self.figures = DepthFigures()
        self.camera_info_sub = None
        super().__init__(node_name, **kwargs)

    def validate(self) -> list[str]:
        """Fixed network size must be both-or-neither and multiples of 14."""
        return validate_depth_params(self.params)

    def configure_for_engine(self) -> None:
        """The DA3 frame path of the engine's kind.

        Raises ValueError (configure fails) for parameters the model kind cannot honour.
        """
        self.kind = engine_kind(self.engine.info.details)
        check_kind_params(self.params, self.kind)
        self.frame_path = DA3FramePath(self.engine, self.kind)
        self.figures.reset()

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network shape for expected_width x expected_height, if given."""
        plan = self._expected_plan()
        return [plan.net_hw] if plan is not None else []

    def expected_resize(self, shape: tuple[int, int]):
        """The expected camera size's resize when the engine runs it on its device."""
        plan = self._expected_plan()
        return plan.resize if plan is not None else None

    def _expected_plan(self):
        w, h = self.params.expected_width, self.params.expected_height
        return self.frame_path.plan((h, w), self.frame_options()) if w and h else None

    def frame_options(self) -> FrameOptions:
        """The frame path's options from the current (partly runtime) parameters."""
        return depth_frame_options(self.params, self.frame_path.is_metric)

    def create_outputs(self) -> None:
        """Publishers of the model kind's topics (ros/msgs/depth_outputs.py)."""
        self._pubs = {topic: self.add_publisher(msg_type, topic)
                      for topic, msg_type in depth_topics(self.params, self.kind).items()}

    def create_inputs(self) -> None:
        """Subscriptions: image (or image/compressed), camera_info and the scale's side inputs."""
        self.camera_info_sub = self.subscribe_camera_info('camera_info', 'camera')
        self.subscribe_image('image', self._on_image)
        self.side_inputs.clear()
        if self.params.scale_source == 'depth':
            self.subscribe_metric_depth(self.side_inputs.metric_depth)
        if self.params.scale_source == 'camera_height' and self.params.camera_height_frame:
            self.subscribe_tf(self.side_inputs.tf)

    def _on_image(self, msg) -> None:
        self.stats.on_input()
        if self.precheck_image(msg, 'image'):
            self.offer(msg)

    def process(self, msg) -> None:
        """Worker: one frame from message to its published outputs (module docstring)."""
        t0 = time.perf_counter()
        rgb = self.decode_image(msg, 'image')
        if rgb is None:
            return
        p = self.params
        options = self.frame_options()
        try:
            plan = self.frame_path.plan(rgb.shape[:2], options)
        except ValueError as exc:
            self.reject('size', str(exc))
            return
        view = self._camera_view(rgb, msg.header.stamp)     # rectified when D != 0
        if view is None:
            return
        t1 = time.perf_counter()
        self.ensure_prepared(plan.net_hw, plan.resize)
        frame = self.frame_path(view.rgb, self.frame_path.intrinsics(view.K, view.tx), options,
                                border=view.border, plan=plan)
        scaled = scale_depth_frame(
            self.kind, frame, relative_scale_settings(p), p.min_confidence,
            p.max_depth_m,
            self.side_inputs.for_frame(p, msg.header, p.metric_depth_wait_s))
        t2 = time.perf_counter()
        for topic, out in depth_output_msgs(p, msg.header, scaled, self._listening,
                                            self._cloud_buffer):
            self._pubs[topic].publish(out)
        t3 = time.perf_counter()
        self.figures.record(scaled)
        if scaled.scale_failed:
            self.reject('scale', scaled.failure_message)
            return
        stages = {'decode': t1 - t0, **frame.timings, 'publish': t3 - t2}
        now = self.get_clock().now().nanoseconds
        self.stats.on_output((now - stamp_to_ns(msg.header.stamp)) / 1e9, stages)

    def _camera_view(self, rgb, stamp) -> CameraView | None:
        """The frame's camera per `focal_source`; None = frame skipped (already reported).

        The CameraInfo of its stamp (rectified when D != 0), or K None for the model's estimate.
        """
        if uses_model_intrinsics(self.kind, self.params.focal_source,
                                 self._camera_info_known()):
            return CameraView(rgb, None, 0.0, None)
        return self.camera_view('camera', rgb, stamp, fallback=no_camera_info_fallback(self.kind))

    def _camera_info_known(self) -> bool:
        """focal_source 'auto': whether the camera's CameraInfo is (or is about to be) there.

        Before the first CameraInfo, a frame waits up to camera_info_wait_s for it only when a
        CameraInfo publisher exists (its first message may trail the image); a camera without
        one never waits and uses the model's estimate at once.
        """
        if not self.kind.estimates_intrinsics or self.params.focal_source != 'auto':
            return True
        if self.camera_infos.has_any('camera'):
            return True
        if not self.count_publishers(self.camera_info_sub.topic_name):
            return False
        return self.camera_infos.wait_any('camera', self.params.camera_info_wait_s)

    def _listening(self, topic: str) -> bool:
        pub = self._pubs.get(topic)
        return pub is not None and pub.get_subscription_count() > 0

    def diagnostics_extra(self) -> dict:
        """Model kind, focal and scale figures of the last frame."""
        if self.kind is None or self.kind is ModelKind.METRIC:
            return {}
        return {**self.figures.snapshot(), 'model_kind': self.kind.value,
                'scale_source_configured': self.params.scale_source,
                'focal_source_configured': self.params.focal_source}


