"""The depth node's outputs for DA3 models other than the metric ones: any-view, NESTED, mono.

What each kind publishes (all with the input header; sizes follow `output_resolution`):

* relative (any-view `da3-small` ... `da3-giant-1.1`, `da3mono-large`): never `depth`.
  `depth_relative` (32FC1, the model's own unit, NaN invalid, +Inf sky for mono) with
  `depth_relative/camera_info`, and `points_relative` (same unit). With `scale_source` `depth` or
  `camera_height` and a scale for the frame: `depth` (metres, `depth_encoding`),
  `depth/camera_info` and `points` (metres) as well; a frame without a scale publishes the relative
  outputs and is counted as rejected [scale].
* NESTED (`da3nested-giant-large-1.1`): metric `depth`, `depth/camera_info`, `points`.
* any-view and NESTED also: `confidence` (32FC1, >= 1) and `camera_info_estimated` (the model's
  intrinsics on the published grid).

Intrinsics (`focal_source`): the CameraInfo (once a valid one arrived, for 'auto') or the model's
estimate. NESTED's metres are set by the focal: upstream aligns its depth to the metric branch
scaled with the *estimated* focal, so the node multiplies by f_used / f_estimated (f = mean of
fx, fy at network resolution) - the same as aligning with the used focal, up to the alignment's
0.01 m validity floor. /diagnostics says which focal scaled the depth and how far the estimate is
from the CameraInfo (`focal_difference_pct`).
"""
from __future__ import annotations

import threading
import time

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from tf2_msgs.msg import TFMessage

from tt_depth_ros.geometry import metric_depth as md
from tt_depth_ros.geometry.colorize import colorize_depth
from tt_depth_ros.geometry.da3_preprocess import resize_to_network, scale_intrinsics
from tt_depth_ros.geometry.depth_postprocess import finish_depth
from tt_depth_ros.geometry.scale import ScaleResult
from tt_depth_ros.pipelines.relative_scale import RelativeScaleSettings, confident, relative_scale
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.cloud import depth_cloud_msg
from tt_depth_ros.ros.msgs.depth import depth_image_msg, image_msg_to_depth, rgb_image_msg
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.stamp_cache import StampedCache
from tt_depth_ros.ros.runtime.tf_height import TfHeight

KINDS = ('anyview', 'nested', 'mono')


def engine_kind(details: dict) -> str:
    """'metric', 'mono', 'anyview' or 'nested' from an engine's info.details."""
    kind = details.get('kind')
    if kind:
        return str(kind)
    return 'metric' if details.get('is_metric', True) else 'mono'


def _focal(K: np.ndarray) -> float:
    return (float(K[0, 0]) + float(K[1, 1])) / 2.0


class DepthFamily:
    """Per-frame work and publishers of one non-metric DA3 kind (module docstring)."""

    def __init__(self, node, kind: str) -> None:
        self.node, self.kind = node, kind
        self.relative = kind in ('anyview', 'mono')
        self.estimates = kind in ('anyview', 'nested')
        self.pubs: dict = {}
        self.metric_cache = StampedCache(30)
        self.tf = TfHeight()
        self._lock = threading.Lock()
        self._info: dict = {}

    @classmethod
    def for_node(cls, node) -> 'DepthFamily | None':
        """The handler for the node's engine (None for metric models); ValueError if misused."""
        p, kind = node.p, engine_kind(node.engine.info.details)
        model = p['model']
        if kind == 'metric' or kind not in KINDS:
            if p['scale_source'] != 'none':
                raise ValueError(f"scale_source={p['scale_source']!r} is for relative-depth "
                                 f'models; {model!r} predicts metres already (use none)')
            if p['focal_source'] == 'estimated':
                raise ValueError(f"focal_source='estimated': {model!r} does not estimate "
                                 'intrinsics (any-view and NESTED models do)')
            return None
        if kind == 'nested' and p['scale_source'] != 'none':
            raise ValueError(f"scale_source={p['scale_source']!r}: {model!r} predicts metres "
                             '(NESTED); use none')
        if kind == 'mono' and p['focal_source'] == 'estimated':
            raise ValueError(f"focal_source='estimated': {model!r} does not estimate intrinsics")
        if p['scale_source'] == 'camera_height' and not (p['camera_height_m'] > 0 or
                                                         p['camera_height_frame']):
            raise ValueError('scale_source=camera_height needs camera_height_m > 0 (metres, '
                             'optical centre above the ground) or camera_height_frame (TF)')
        return cls(node, kind)

    # ---- topics ---------------------------------------------------------------------------
    def create_outputs(self, add_publisher) -> None:
        """Lifecycle publishers of this kind (module docstring)."""
        names = [('depth/colorized', Image)]
        if self.relative:
            names += [('depth_relative', Image), ('depth_relative/camera_info', CameraInfo),
                      ('points_relative', PointCloud2)]
        if not self.relative or self.node.p['scale_source'] != 'none':
            names += [('depth', Image), ('depth/camera_info', CameraInfo),
                      ('points', PointCloud2)]
        if self.estimates:
            names += [('confidence', Image), ('camera_info_estimated', CameraInfo)]
        self.pubs = {t: add_publisher(typ, t) for t, typ in names}
        with self._lock:
            self._info = {'scale_failures': 0}

    def create_inputs(self) -> None:
        """The metric_depth subscription of scale_source=depth."""
        self.metric_cache.clear()
        node = self.node
        if node.p['scale_source'] == 'depth':
            node.track_subscription(node.create_subscription(Image, 'metric_depth',
                                                             self._on_metric, node.input_qos()))
        if node.p['scale_source'] == 'camera_height' and node.p['camera_height_frame']:
            latched = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                 reliability=ReliabilityPolicy.RELIABLE)
            node.track_subscription(node.create_subscription(TFMessage, '/tf_static',
                                                             self.tf.on_tf, latched))
            node.track_subscription(node.create_subscription(TFMessage, '/tf', self.tf.on_tf,
                                                             QoSProfile(depth=100)))

    def _on_metric(self, msg) -> None:
        try:
            self.metric_cache.put(stamp_to_ns(msg.header.stamp), image_msg_to_depth(msg))
        except ValueError as exc:
            self.node.reject('metric_depth', f'metric_depth: {exc}')

    # ---- per frame ------------------------------------------------------------------------
    def _pre_K(self, rgb: np.ndarray, stamp):
        """(rgb, K_img or None, tx, focal source, border) before inference; None = skipped.

        The CameraInfo is the one of the image's stamp and a distorted image is rectified
        (ros/runtime/lifecycle_node.camera_view), exactly as for the metric model; `border` (None
        or the Rectifier) marks rectified pixels from outside the source image.
        """
        node, fs = self.node, self.node.p['focal_source']
        if self.estimates and (fs == 'estimated' or (fs == 'auto' and not self._has_camera_info())):
            return rgb, None, 0.0, 'estimated', None
        fallback = ("using the model's estimated intrinsics" if self.estimates else
                    'using the default focal; the point geometry is approximate')
        view = node.camera_view('camera', rgb, stamp, fallback=fallback)
        if view is None:
            return None
        rgb, K, tx, border = view.rgb, view.K, view.tx, view.border
        if K is None:
            return rgb, None, 0.0, 'estimated' if self.estimates else 'default', border
        return rgb, K, tx, 'camera_info', border

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
        return node.camera_infos.wait_any('camera', node.p['camera_info_wait_s'])

    def process(self, msg, rgb: np.ndarray, net: tuple[int, int]) -> None:
        """Worker: one frame of this kind, from RGB to every output of the module docstring."""
        node, p = self.node, self.node.p
        t = [time.perf_counter()]
        pre = self._pre_K(rgb, msg.header.stamp)
        if pre is None:
            return
        rgb, K_img, tx, source, border = pre
        height, width = rgb.shape[:2]
        node.ensure_prepared(net)
        img_net = resize_to_network(rgb, net, p['process_res'])
        t.append(time.perf_counter())
        out = node.engine.infer(img_net)
        t.append(time.perf_counter())
        net_wh, img_wh = (net[1], net[0]), (width, height)
        K_est_net = out.get('intrinsics')
        if source == 'estimated':
            K_img = scale_intrinsics(K_est_net, net_wh, img_wh)
        elif source == 'default':
            K_img = scale_intrinsics(md.default_intrinsics(*net_wh), net_wh, img_wh)
        K_net = scale_intrinsics(K_img, img_wh, net_wh)
        raw = out['depth']
        focal = {'focal_source': source, 'focal_used_px': round(_focal(K_img), 3)}
        if K_est_net is not None:
            f_est = _focal(scale_intrinsics(K_est_net, net_wh, img_wh))
            focal.update(focal_estimated_px=round(f_est, 3),
                         focal_difference_pct=round(100.0 * (f_est / _focal(K_img) - 1.0), 3))
        if self.kind == 'nested':
            raw = raw * np.float32(_focal(K_net) / _focal(K_est_net))
        to_camera = p['output_resolution'] == 'camera'
        out_hw = (height, width) if to_camera else None
        if border is not None:
            raw = border.mark_invalid(raw)
        depth = finish_depth(raw, out.get('sky'), K_net, metric=False,
                             sky_threshold=p['sky_threshold'], sky_mode=p['sky_mode'],
                             max_depth_m=p['max_depth_m'] if self.kind == 'nested' else None,
                             out_hw=out_hw)
        if border is not None:   # rectified pixels from outside the source: invalid (NaN)
            depth = border.mark_invalid(depth)
        conf = out.get('conf')
        if conf is not None and to_camera:
            conf = md.resize_depth(conf, out_hw)
        K_out, color = (K_img, rgb) if to_camera else (K_net, img_net)
        if not to_camera and source == 'camera_info':
            tx = tx * K_net[0, 0] / K_img[0, 0]
        K_est_out = None if K_est_net is None else (
            scale_intrinsics(K_est_net, net_wh, img_wh) if to_camera else K_est_net)
        t.append(time.perf_counter())
        published = self._publish(msg, depth, conf, K_out, K_est_out, tx, color, focal)
        t.append(time.perf_counter())
        if not published:
            return
        stages = dict(zip(('resize', 'infer', 'postprocess', 'publish'), np.diff(t)))
        stages.update({f'engine_{k}': v for k, v in node.engine.last_timings.items()})
        now = node.get_clock().now().nanoseconds
        node.stats.on_output((now - stamp_to_ns(msg.header.stamp)) / 1e9, stages)

    def _publish(self, msg, depth, conf, K, K_est, tx, color, focal: dict) -> bool:
        """Publish one frame; False when the metric scale failed (relative outputs still out)."""
        node, p, header = self.node, self.node.p, msg.header
        h, w = depth.shape
        mask = confident(depth, conf, p['min_confidence'])
        if conf is not None:
            self.pubs['confidence'].publish(depth_image_msg(conf.astype(np.float32), header))
        if K_est is not None:
            self.pubs['camera_info_estimated'].publish(camera_info_for(K_est, w, h, header))
        info = dict(focal, depth_kind='relative' if self.relative else 'metric')
        metric = None
        if self.relative:
            self.pubs['depth_relative'].publish(depth_image_msg(depth, header))
            self.pubs['depth_relative/camera_info'].publish(camera_info_for(K, w, h, header, tx))
            settings, why = self._scale_settings(header.frame_id)
            scale, fit = ((relative_scale(settings, depth, mask, K,
                                          self._metric_for(header.stamp)))
                          if settings is not None else
                          (ScaleResult('camera_height', None, why), None))
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
                self._cloud('points_relative', depth, mask, K, header, color)
        else:
            metric, scale = depth, None
            info.update(scale_source='model (NESTED metric branch)', scale=1.0, units='metres')
        if metric is not None:
            self.pubs['depth'].publish(depth_image_msg(metric, header, p['depth_encoding']))
            self.pubs['depth/camera_info'].publish(camera_info_for(K, w, h, header, tx))
            self._cloud('points', metric, mask, K, header, color)
        self._colorized(metric if metric is not None else depth, header)
        with self._lock:
            self._info.update(info)
            if scale is not None and not scale.ok:
                self._info['scale_failures'] += 1
                self._info['last_scale_failure'] = scale.reason
        if scale is not None and not scale.ok:
            node.reject('scale', f'no {scale.source} scale for this frame (depth_relative '
                        f'published, nothing on depth): {scale.reason}')
            return False
        return True

    def _scale_settings(self, frame_id: str):
        """(settings, '') for this frame, or (None, why) when TF has no camera height yet."""
        p = self.node.p
        height = p['camera_height_m']
        if p['scale_source'] == 'camera_height' and p['camera_height_frame']:
            height, why = self.tf.height(p['camera_height_frame'], frame_id)
            if height is None:
                return None, why
            with self._lock:
                self._info['camera_height_m'] = round(height, 4)
        return RelativeScaleSettings(p['scale_source'], p['min_scale_support'], height,
                                     p['ground_max_tilt_deg'], p['ground_tolerance'],
                                     p['ground_min_inlier_ratio']), ''

    def _metric_for(self, stamp) -> np.ndarray | None:
        if self.node.p['scale_source'] != 'depth':
            return None
        return self.metric_cache.get(stamp_to_ns(stamp), self.node.p['metric_depth_wait_s'])

    def _cloud(self, topic, depth, mask, K, header, color) -> None:
        p, pub = self.node.p, self.pubs[topic]
        if not p['points_enable'] or pub.get_subscription_count() == 0:
            return
        kept = np.where(mask | np.isposinf(depth), depth, np.float32(np.nan))
        rgb = color if p['points_format'] == 'xyzrgb' else None
        pub.publish(depth_cloud_msg(kept, K, header, rgb, p['points_decimation'],
                                    p['points_max_range_m'] or None))

    def _colorized(self, depth, header) -> None:
        p, pub = self.node.p, self.pubs['depth/colorized']
        if p['colorized_enable'] and pub.get_subscription_count() > 0:
            preview = colorize_depth(depth, None, p['colorized_max_m'] or None)
            pub.publish(rgb_image_msg(preview, header))

    def diagnostics(self) -> dict:
        """Kind, focal and scale figures of the last frame for /diagnostics."""
        with self._lock:
            extra = dict(self._info)
        extra['model_kind'] = self.kind
        extra['scale_source_configured'] = self.node.p['scale_source']
        extra['focal_source_configured'] = self.node.p['focal_source']
        return extra
