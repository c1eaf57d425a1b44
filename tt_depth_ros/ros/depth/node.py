"""Depth node: camera Image + CameraInfo in; metric depth, its CameraInfo and a cloud out.

One frame (docs/design.md §2): the executor validates the message and puts it in the latest-frame
mailbox; the worker decodes it to RGB, takes intrinsics from the CameraInfo of its stamp (P with
binning/ROI, scaled explicitly to the image size; rectified when D != 0) and runs THE DA3 frame
path (pipelines/depth.py: upstream resize to the network grid, engine, metres from the focal AT
NETWORK RESOLUTION, sky (+Inf) and out-of-range depth, optional resample to camera resolution),
then publishes `depth` (32FC1 m / 16UC1 mm), `depth/camera_info` (same size as the depth image),
`points` (organized, depth_image_proc layout) and optionally `depth/colorized` and
`depth/compressedDepth` (image_transport's compressedDepth PNG, ros/msgs/compressed_depth.py),
all with the input header. The other DA3 kinds (any-view, mono, NESTED) run the same frame path
and publish what ros/depth/relative_outputs.py lists; this file holds only the ROS work.
"""
from __future__ import annotations

import time

from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from tt_depth_ros.geometry.depth.metric_depth import SKY_MODES
from tt_depth_ros.pipelines.depth import DA3FramePath, DepthFrame, FrameOptions
from tt_depth_ros.ros.depth.compressed_params import COMPRESSED_DEPTH_PARAMS
from tt_depth_ros.ros.depth.family_params import FAMILY_DEPTH_PARAMS
from tt_depth_ros.ros.depth.relative_outputs import RelativeNestedOutputs
from tt_depth_ros.ros.msgs.cloud import CloudBuffer
from tt_depth_ros.ros.msgs.metric_outputs import (
    COLORIZED,
    COMPRESSED,
    DEPTH,
    INFO,
    POINTS,
    compressed_depth_for,
    metric_output_msgs,
)
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS
from tt_depth_ros.ros.runtime.lifecycle_node import PerceptionLifecycleNode
from tt_depth_ros.ros.runtime.params import ParamSpec
from tt_depth_ros.ros.runtime.params import params_markdown as _params_markdown

DEPTH_PARAMS = (
    ParamSpec('onnx_provider', 'CPUExecutionProvider', 'backend onnxruntime: the execution '
              'provider (e.g. CUDAExecutionProvider, TensorrtExecutionProvider); one not '
              'installed fails configure, listing the available ones (no fallback).'),
    ParamSpec('process_res', 504, 'Long side of the network input (upstream upper-bound resize, '
              'snapped to multiples of 14).', int_range=(14, 4096)),
    ParamSpec('network_height', 0, 'Fixed network input height (multiple of 14, with '
              'network_width); 0 = from process_res.', int_range=(0, 4096)),
    ParamSpec('network_width', 0, 'Fixed network input width (multiple of 14); 0 = auto.',
              int_range=(0, 4096)),
    ParamSpec('expected_width', 0, 'Camera width to prepare the engine for at configure; 0 = '
              'prepare on the first frame.', int_range=(0, 16384)),
    ParamSpec('expected_height', 0, 'Camera height to prepare at configure; 0 = first frame.',
              int_range=(0, 16384)),
    ParamSpec('output_resolution', 'camera', "'camera' resamples depth to the input size; "
              "'network' publishes the network grid (CameraInfo scaled to match).",
              choices=('camera', 'network'), runtime=True),
    ParamSpec('sky_mode', 'inf', "Sky pixels: 'inf' (+Inf, REP 117 no return), 'nan' "
              "(invalid) or 'keep' (predicted depth).", choices=SKY_MODES, runtime=True),
    ParamSpec('sky_threshold', 0.3, 'Sky score at or above which a pixel is sky (upstream 0.3).',
              float_range=(0.0, 100.0), runtime=True),
    ParamSpec('max_depth_m', 0.0, 'Depth beyond this becomes +Inf; 0 = no limit.',
              float_range=(0.0, 1e6), runtime=True),
    ParamSpec('depth_encoding', '32FC1', "'32FC1' metres (NaN invalid, +Inf no return) or "
              "'16UC1' millimetres (0 invalid).", choices=('32FC1', '16UC1'), runtime=True),
    ParamSpec('points_enable', True, 'Publish the organized PointCloud2 on points.',
              runtime=True),
    ParamSpec('points_format', 'xyz', "'xyz' (point_step 16) or 'xyzrgb' (rgb at 16, step 32).",
              choices=('xyz', 'xyzrgb'), runtime=True),
    ParamSpec('points_decimation', 1, 'Keep every n-th row and column (cloud stays organized).',
              int_range=(1, 64), runtime=True),
    ParamSpec('points_max_range_m', 0.0, 'Points beyond this range become NaN; 0 = no limit.',
              float_range=(0.0, 1e6), runtime=True),
    ParamSpec('colorized_enable', False, 'Publish an rgb8 turbo preview on depth/colorized.',
              runtime=True),
    ParamSpec('colorized_max_m', 0.0, 'Far end of the preview colour scale; 0 = per frame.',
              float_range=(0.0, 1e6), runtime=True),
) + COMPRESSED_DEPTH_PARAMS + FAMILY_DEPTH_PARAMS


class DepthNode(PerceptionLifecycleNode):
    """Monocular depth (any DA3 model) as a lifecycle node; see the module docstring."""

    def __init__(self, node_name: str = 'depth_node', **kwargs) -> None:
        """Declare parameters; nothing heavy happens before configure."""
        self._pub_depth = self._pub_info = self._pub_points = self._pub_color = None
        self._pub_compressed = None     # depth/compressedDepth, with compressed_depth:=true
        self._cloud_buffer = CloudBuffer()     # the worker publishes each cloud at once
        self.frame_path: DA3FramePath | None = None
        self.relative_nested: RelativeNestedOutputs | None = None   # any-view / NESTED / mono
        self.camera_info_sub = None
        super().__init__(node_name, **kwargs)

    def node_param_specs(self) -> list[ParamSpec]:
        """Depth-specific parameters (see README)."""
        return list(DEPTH_PARAMS)

    def validate(self) -> list[str]:
        """Fixed network size must be both-or-neither and multiples of 14."""
        return validate_depth_params(self.params)

    def configure_for_engine(self) -> None:
        """The DA3 frame path of the engine's kind, and the handler of the non-metric kinds.

        Raises ValueError (configure fails) for parameters the model kind cannot honour.
        """
        self.relative_nested = RelativeNestedOutputs.for_node(self)
        kind = 'metric' if self.relative_nested is None else self.relative_nested.kind
        self.frame_path = DA3FramePath(self.engine, kind)

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network shape for expected_width x expected_height, if given."""
        w, h = self.params['expected_width'], self.params['expected_height']
        return [self.frame_options().network_hw(w, h)] if w and h else []

    def expected_resize(self, shape: tuple[int, int]):
        """The expected camera size's resize when the engine runs it on its device."""
        w, h = self.params['expected_width'], self.params['expected_height']
        return self.frame_path.device_resize((h, w), self.frame_options())

    def frame_options(self) -> FrameOptions:
        """The frame path's options from the current (partly runtime) parameters."""
        return depth_frame_options(self.params, self.frame_path.is_metric)

    def create_outputs(self) -> None:
        """Publishers: depth (+ compressedDepth if set), depth/camera_info, points, colorized."""
        if self.relative_nested is not None:
            self.relative_nested.create_outputs(self.add_publisher)
            return
        self._pub_depth = self.add_publisher(Image, 'depth')
        self._pub_compressed = self.compressed_depth_publisher(self.add_publisher)
        self._pub_info = self.add_publisher(CameraInfo, 'depth/camera_info')
        self._pub_points = self.add_publisher(PointCloud2, 'points')
        self._pub_color = self.add_publisher(Image, 'depth/colorized')

    def create_inputs(self) -> None:
        """Subscriptions: image (or image/compressed) and camera_info."""
        self.camera_info_sub = self.subscribe_camera_info('camera_info', 'camera')
        self.subscribe_image('image', self._on_image)
        if self.relative_nested is not None:
            self.relative_nested.create_inputs()

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
        options = self.frame_options()
        height, width = rgb.shape[:2]
        try:
            net = options.network_hw(width, height)
        except ValueError as exc:
            self.reject('size', str(exc))
            return
        view = (self.relative_nested.camera_view(rgb, msg.header.stamp)
                if self.relative_nested is not None else
                self.camera_view('camera', rgb, msg.header.stamp))   # rectified when D != 0
        if view is None:
            return
        t1 = time.perf_counter()
        self.ensure_prepared(net, self.frame_path.device_resize((height, width), options))
        frame = self.frame_path(view.rgb, self.frame_path.intrinsics(view.K, view.tx), options,
                                border=view.border)
        t2 = time.perf_counter()
        published = (self.relative_nested.publish(msg.header, frame)
                     if self.relative_nested is not None else
                     self.publish_outputs(msg.header, frame))
        t3 = time.perf_counter()
        if not published:
            return
        stages = {'decode': t1 - t0, **frame.timings, 'publish': t3 - t2}
        now = self.get_clock().now().nanoseconds
        self.stats.on_output((now - stamp_to_ns(msg.header.stamp)) / 1e9, stages)

    def publish_outputs(self, header, frame: DepthFrame) -> bool:
        """Publish every enabled output of a metric frame with the input header.

        The messages come from ros/msgs/metric_outputs.py (also what tt-depth-batch writes);
        depth and depth/camera_info always go out, the optional ones when someone listens.
        """
        pubs = {DEPTH: self._pub_depth, COMPRESSED: self._pub_compressed, INFO: self._pub_info,
                POINTS: self._pub_points, COLORIZED: self._pub_color}

        def listening(topic: str) -> bool:
            return pubs[topic] is not None and pubs[topic].get_subscription_count() > 0

        for topic, msg in metric_output_msgs(self.params, header, frame, listening,
                                             self._cloud_buffer):
            pubs[topic].publish(msg)
        return True

    def compressed_depth_publisher(self, add_publisher):
        """The depth/compressedDepth publisher when compressed_depth is set, else None (no topic).

        Only metric `depth` has one: relative depth (`depth_relative`) has a different unit per
        frame, so a fixed depth_max and quantisation in metres would mean nothing for it.
        """
        if not self.params['compressed_depth']:
            return None
        return add_publisher(CompressedImage, 'depth/compressedDepth')

    def publish_compressed_depth(self, pub, depth, header) -> None:
        """The compressedDepth twin of a published metric depth image (when someone listens)."""
        publish_compressed_depth(self.params, pub, depth, header)

    def diagnostics_extra(self) -> dict:
        """Model kind, focal and scale figures of the relative / NESTED handler."""
        return self.relative_nested.diagnostics() if self.relative_nested is not None else {}


def validate_depth_params(p: dict) -> list[str]:
    """Cross-parameter errors of depth node values `p` (network and expected sizes both-or-neither).

    The node's configure and tt-depth-batch's parameter file check both call this.
    """
    nh, nw = p['network_height'], p['network_width']
    errors = []
    if (nh == 0) != (nw == 0):
        errors.append('network_height and network_width must both be 0 or both be set')
    elif nh and (nh % 14 or nw % 14):
        errors.append(f'network size {nh}x{nw} must be multiples of 14')
    if bool(p['expected_width']) != bool(p['expected_height']):
        errors.append('expected_width and expected_height must both be 0 or both be set')
    return errors


def publish_compressed_depth(p: dict, pub, depth, header) -> None:
    """The compressedDepth twin of a metric depth image on `pub` (None: off; or nobody listens).

    The node and tt-depth-batch's offline host of the relative/NESTED outputs both call this.
    """
    if pub is None or pub.get_subscription_count() == 0:
        return
    pub.publish(compressed_depth_for(p, depth, header))


def depth_frame_options(p: dict, is_metric: bool) -> FrameOptions:
    """The DA3 frame path's options from depth node values `p` (the node and tt-depth-batch)."""
    fixed = (p['network_height'], p['network_width'])
    return FrameOptions(process_res=p['process_res'], fixed_size=fixed if fixed[0] else None,
                        sky_mode=p['sky_mode'], sky_threshold=p['sky_threshold'],
                        max_depth_m=(p['max_depth_m'] or None) if is_metric else None,
                        output=p['output_resolution'], nested_focal_rescale=True)


def params_markdown() -> str:
    """The depth node's parameter table in Markdown (README material)."""
    return _params_markdown(COMMON_PARAMS + DEPTH_PARAMS)

