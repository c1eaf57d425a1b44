"""The depth node's outputs for the DA3 kinds beyond DA3METRIC: any-view, mono and NESTED.

What each kind publishes (all with the input header; sizes follow `output_resolution`):

* relative (any-view `da3-small` ... `da3-giant-1.1`, `da3mono-large`), every frame:
  `depth_relative` (32FC1, the model's own unit, NaN invalid, +Inf sky for mono) with
  `depth_relative/camera_info`, and `points_relative` (same unit). Relative depth never goes on
  `depth`. With `scale_source` `depth` or `camera_height`, a frame with a metric scale also
  publishes `depth` (metres, `depth_encoding`), `depth/camera_info` and `points` (metres); a frame
  without one publishes only the relative outputs and counts as rejected [scale].
* NESTED (`da3nested-giant-large-1.1`): metric `depth`, `depth/camera_info`, `points`.
* with `compressed_depth`, every metric `depth` also goes on `depth/compressedDepth`; relative
  depth never does (its unit changes per frame; a fixed depth_max in metres means nothing).
* any-view and NESTED also: `confidence` (32FC1, >= 1) and `camera_info_estimated` (the model's
  intrinsics on the published grid).

Intrinsics (`focal_source`): the CameraInfo (once a valid one arrived, for 'auto') or the model's
estimate. NESTED's metres are set by the focal: upstream aligns its depth to the metric branch
scaled with the *estimated* focal, so the frame path multiplies by f_used / f_estimated
(pipelines/depth.py `FrameOptions.nested_focal_rescale`) - the same as aligning with the used
focal, up to the alignment's 0.01 m validity floor. /diagnostics says which focal scaled the depth
and how far the estimate is from the CameraInfo (`focal_difference_pct`).
"""
from __future__ import annotations

import threading

import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from tt_depth_ros.geometry.depth import metric_depth as md
from tt_depth_ros.geometry.depth.colorize import colorize_depth
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.pipelines.depth import DepthFrame, engine_kind
from tt_depth_ros.pipelines.relative_scale import (
    FrameScale,
    RelativeScaleSettings,
    confident,
    relative_scale,
)
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.cloud import depth_cloud_msg
from tt_depth_ros.ros.msgs.depth import depth_image_msg, rgb_image_msg
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthInput
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer, subscribe_tf
from tt_depth_ros.ros.runtime.tf.tf_height import camera_height

KINDS = ('anyview', 'nested', 'mono')


def check_kind_params(p: dict, kind: str) -> None:
    """Raise ValueError for depth node values `p` that a model of `kind` cannot honour.

    The node's configure and tt-depth-batch call this with the kind of the built engine.
    """
    model = p['model']
    if kind == 'metric' or kind not in KINDS:
        if p['scale_source'] != 'none':
            raise ValueError(f"scale_source={p['scale_source']!r} is for relative-depth "
                             f'models; {model!r} predicts metres already (use none)')
        if p['focal_source'] == 'estimated':
            raise ValueError(f"focal_source='estimated': {model!r} does not estimate "
                             'intrinsics (any-view and NESTED models do)')
        return
    if kind == 'nested' and p['scale_source'] != 'none':
        raise ValueError(f"scale_source={p['scale_source']!r}: {model!r} predicts metres "
                         '(NESTED); use none')
    if kind == 'mono' and p['focal_source'] == 'estimated':
        raise ValueError(f"focal_source='estimated': {model!r} does not estimate intrinsics")
    if p['scale_source'] == 'camera_height' and not (p['camera_height_m'] > 0 or
                                                      p['camera_height_frame']):
        raise ValueError('scale_source=camera_height needs camera_height_m > 0 (metres, '
                         'optical centre above the ground) or camera_height_frame (TF)')


class RelativeNestedOutputs:
    """Publishers and per-frame publishing of the relative (any-view, mono) and NESTED kinds.

    Also the ROS inputs these kinds need beyond the image: the intrinsics choice of
    `focal_source` and the metric-scale side inputs of `scale_source` (a metric depth image, the
    camera height from TF).
    """

    def __init__(self, node, kind: str) -> None:
        self.node, self.kind = node, kind
        self.relative = kind in ('anyview', 'mono')
        self.estimates = kind in ('anyview', 'nested')
        self.pubs: dict = {}
        self.metric_depth = MetricDepthInput(node)
        self.tf = TfBuffer()
        self._lock = threading.Lock()
        self._info: dict = {}

    @classmethod
    def for_node(cls, node) -> 'RelativeNestedOutputs | None':
        """The handler for the node's engine (None for metric models); ValueError if misused."""
        kind = engine_kind(node.engine.info.details)
        check_kind_params(node.params, kind)
        return None if kind == 'metric' or kind not in KINDS else cls(node, kind)

    # ---- topics ---------------------------------------------------------------------------
    def create_outputs(self, add_publisher) -> None:
        """Lifecycle publishers of this kind (module docstring)."""
        names = [('depth/colorized', Image)]
        if self.relative:
            names += [('depth_relative', Image), ('depth_relative/camera_info', CameraInfo),
                      ('points_relative', PointCloud2)]
        if not self.relative or self.node.params['scale_source'] != 'none':
            names += [('depth', Image), ('depth/camera_info', CameraInfo),
                      ('points', PointCloud2)]
            if self.node.params['compressed_depth']:    # metric depth only (node.py says why)
                names.append(('depth/compressedDepth', CompressedImage))
        if self.estimates:
            names += [('confidence', Image), ('camera_info_estimated', CameraInfo)]
        self.pubs = {t: add_publisher(typ, t) for t, typ in names}
        with self._lock:
            self._info = {'scale_failures': 0}

    def create_inputs(self) -> None:
        """The side inputs of the scale source: metric_depth, or /tf and /tf_static."""
        node = self.node
        self.metric_depth.start()
        if node.params['scale_source'] == 'camera_height' and node.params['camera_height_frame']:
            self.tf.clear()
            for sub in subscribe_tf(node, self.tf):
                node.track_subscription(sub)

    # ---- per frame ------------------------------------------------------------------------
    def camera_view(self, rgb: np.ndarray, stamp) -> CameraView | None:
        """The frame's camera per `focal_source`; None = frame skipped (already reported).

        K None means the model's estimate (the default focal for mono, with no CameraInfo in
        'default_focal' mode).

        The CameraInfo is the one of the image's stamp and a distorted image is rectified
        (PerceptionLifecycleNode.camera_view), exactly as for the metric model.
        """
        node, focal_source = self.node, self.node.params['focal_source']
        if self.estimates and (focal_source == 'estimated' or
                               (focal_source == 'auto' and not self._has_camera_info())):
            return CameraView(rgb, None, 0.0, None)
        fallback = ("using the model's estimated intrinsics" if self.estimates else
                    'using the default focal; the point geometry is approximate')
        return node.camera_view('camera', rgb, stamp, fallback=fallback)

    def _has_camera_info(self) -> bool:
        """focal_source 'auto': whether the camera's CameraInfo is (or is about to be) there.

        Before the first CameraInfo, a frame waits up to camera_info_wait_s for it only when a
        CameraInfo publisher exists (its first message may trail the image); a camera without
        one never waits and uses the model's estimate at once.
        """
        node = self.node
        if node.camera_infos.has_any('camera'):
            return True
        if not node.count_publishers(node.camera_info_sub.topic_name):
            return False
        return node.camera_infos.wait_any('camera', node.params['camera_info_wait_s'])

    def publish(self, header, frame: DepthFrame) -> bool:
        """Publish one frame; False when the metric scale failed (relative outputs still out)."""
        p = self.node.params
        depth, K, tx = frame.depth, frame.K, frame.tx
        h, w = depth.shape
        mask = confident(depth, frame.conf, p['min_confidence'])
        if frame.conf is not None:
            self.pubs['confidence'].publish(depth_image_msg(frame.conf.astype(np.float32),
                                                            header))
        if frame.K_estimated is not None:
            self.pubs['camera_info_estimated'].publish(camera_info_for(frame.K_estimated, w, h,
                                                                       header))
        info = dict(self._focal_figures(frame),
                    depth_kind='relative' if self.relative else 'metric')
        metric = None
        if self.relative:
            self.pubs['depth_relative'].publish(depth_image_msg(depth, header))
            self.pubs['depth_relative/camera_info'].publish(camera_info_for(K, w, h, header, tx))
            self._cloud('points_relative', depth, mask, K, header, frame.image)
            scale, fit = self._frame_scale(header, depth, mask, K, info)
            info.update(scale_source=scale.source, scale=scale.value,
                        scale_support=scale.support, scale_spread=round(scale.spread, 5),
                        units='metres' if scale.metric else 'model units (relative)')
            if fit is not None:
                info.update(ground_inlier_ratio=round(fit.inlier_ratio, 4),
                            ground_tilt_deg=round(fit.tilt_deg, 2))
            if scale.metric:
                metric = depth * np.float32(scale.value)
                if p['max_depth_m']:
                    metric = md.clip_max_depth(metric, p['max_depth_m'])
        else:
            metric, scale = depth, None
            info.update(scale_source='model (NESTED metric branch)', scale=1.0, units='metres')
        if metric is not None:
            self.pubs['depth'].publish(depth_image_msg(metric, header, p['depth_encoding']))
            self.node.publish_compressed_depth(self.pubs.get('depth/compressedDepth'), metric,
                                               header)
            self.pubs['depth/camera_info'].publish(camera_info_for(K, w, h, header, tx))
            self._cloud('points', metric, mask, K, header, frame.image)
        self._colorized(metric if metric is not None else depth, header)
        with self._lock:
            self._info.update(info)
            if scale is not None and not scale.ok:
                self._info['scale_failures'] += 1
                self._info['last_scale_failure'] = scale.reason
        if scale is not None and not scale.ok:
            self.node.reject('scale', f'no {scale.source} scale for this frame (depth_relative '
                             f'published, nothing on depth): {scale.reason}')
            return False
        return True

    @staticmethod
    def _focal_figures(frame: DepthFrame) -> dict:
        """/diagnostics: which focal set the geometry and how far the model's estimate is."""
        used = frame.focal_used_px
        figures = {'focal_source': frame.intrinsics_source, 'focal_used_px': round(used, 3)}
        if frame.focal_estimated_px is not None:
            est = frame.focal_estimated_px
            figures.update(focal_estimated_px=round(est, 3),
                           focal_difference_pct=round(100.0 * (est / used - 1.0), 3))
        return figures

    def _frame_scale(self, header, depth: np.ndarray, mask: np.ndarray,
                     K: np.ndarray, info: dict) -> FrameScale:
        """The metric scale of this frame from `scale_source` (no scale: the reason why).

        A height read from /tf goes into this frame's `info`, so /diagnostics shows it together
        with the scale it produced, never next to the previous frame's scale.
        """
        p = self.node.params
        height_m = p['camera_height_m']
        if p['scale_source'] == 'camera_height' and p['camera_height_frame']:
            height = camera_height(self.tf, p['camera_height_frame'], header.frame_id)
            if height.metres is None:
                return FrameScale(ScaleResult('camera_height', None, height.why_not), None)
            height_m = height.metres
            info['camera_height_m'] = round(height_m, 4)
        settings = RelativeScaleSettings(p['scale_source'], p['min_scale_support'], height_m,
                                         p['ground_max_tilt_deg'], p['ground_tolerance'],
                                         p['ground_min_inlier_ratio'])
        return relative_scale(settings, depth, mask, K,
                              self.metric_depth.image_for(stamp_to_ns(header.stamp)))

    def _cloud(self, topic, depth, mask, K, header, color) -> None:
        p, pub = self.node.params, self.pubs[topic]
        if not p['points_enable'] or pub.get_subscription_count() == 0:
            return
        kept = np.where(mask | np.isposinf(depth), depth, np.float32(np.nan))
        rgb = color if p['points_format'] == 'xyzrgb' else None
        pub.publish(depth_cloud_msg(kept, K, header, rgb, p['points_decimation'],
                                    p['points_max_range_m'] or None))

    def _colorized(self, depth, header) -> None:
        p, pub = self.node.params, self.pubs['depth/colorized']
        if p['colorized_enable'] and pub.get_subscription_count() > 0:
            preview = colorize_depth(depth, None, p['colorized_max_m'] or None)
            pub.publish(rgb_image_msg(preview, header))

    def diagnostics(self) -> dict:
        """Kind, focal and scale figures of the last frame for /diagnostics."""
        with self._lock:
            extra = dict(self._info)
        extra['model_kind'] = self.kind
        extra['scale_source_configured'] = self.node.params['scale_source']
        extra['focal_source_configured'] = self.node.params['focal_source']
        return extra
