"""Pair node: DUSt3R two-view reconstruction with PnP pose (stereo rig or one moving camera).

Same lifecycle, worker, QoS, CameraInfo and bad-input machinery as the depth node (the shared
PerceptionLifecycleNode base). Modes:
- `stereo`: camera1/{image,camera_info} and camera2/{image,camera_info}; frames paired by stamp
  (ros/pair/pairing.py); camera 1 is the reference.
- `temporal`: image + camera_info of one camera; each frame is paired with the current keyframe,
  poses chain keyframe to keyframe (geometry/keyframes.py) in an odom-like frame.
Per pair (pipelines/pair_dust3r.py): preprocess -> engine -> PnP of camera 2 with its K at network
resolution -> scale -> outputs. A failed or weak PnP publishes no pose and no TF for that pair;
in stereo mode its cloud (and depth) are still published, so it is counted in `pnp_failures`, not
as a skipped frame (temporal mode cannot place the frame without the pose and skips it).
Stereo inputs keep a history of at least `pair_queue_size` images per camera: with depth 1 a camera
publishing twice before the executor takes the first (a bag replay, a stalled executor) would lose
that frame inside the middleware, uncounted, and orphan its partner. Latest-wins applies to pairs
(the mailbox). Accounting in /diagnostics, per camera: received_cameraN = pairs + unpaired_cameraN
+ queued_cameraN + duplicates; per pair: pairs = published + dropped_mailbox + skipped (rejected_*
from the worker, one reason per pair) + errors, up to the one in flight.
Each image uses the CameraInfo of its stamp and is rectified when its D is non-zero (base class);
without CameraInfo (default_focal) each camera's focal is estimated from its own pointmap.
Publishing rules (TF in metres only by default, frame-name checks, camera-resolution depth) live
in ros/pair/outputs.py; temporal mode can map the chain to odom -> base_link with the camera
mounting from the robot's TF tree (robot_base_frame; ros/pair/odometry.py,
ros/runtime/tf_buffer.py).
Scale semantics (geometry/scale.py): `depth` is 32FC1 metres and is published only with a metric
scale (baseline or depth); without one, `depth_unscaled` carries DUSt3R-unit depth if
`publish_unscaled_depth` is set, never `depth`. Points and poses carry the active units, which
/diagnostics reports (`units`, `scale_source`, `scale`).
"""
from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from tf2_msgs.msg import TFMessage

from tt_depth_ros.geometry.keyframes import KeyframeChain, KeyframePolicy
from tt_depth_ros.geometry.scale import METRIC_SOURCES, ScaleResult
from tt_depth_ros.geometry.se3 import invert_T
from tt_depth_ros.pipelines.pair_anyview import ANYVIEW_PAIR_MODELS, make_pair_pipeline
from tt_depth_ros.pipelines.pair_dust3r import PairPipeline, PairSettings
from tt_depth_ros.ros.msgs.cloud import pointcloud2_msg
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.pair.odometry import RobotOdometry
from tt_depth_ros.ros.pair.outputs import PairPublishing, drop_borders
from tt_depth_ros.ros.pair.pairing import ApproxTimePairer
from tt_depth_ros.ros.pair.params import DUST3R_MODELS, PAIR_PARAMS
from tt_depth_ros.ros.runtime.lifecycle_node import (
    COMMON_PARAMS,
    PerceptionLifecycleNode,
    with_defaults,
)
from tt_depth_ros.ros.runtime.metric_depth_input import MetricDepthInput
from tt_depth_ros.ros.runtime.node_runner import run_lifecycle_node
from tt_depth_ros.ros.runtime.params import ParamSpec
from tt_depth_ros.ros.runtime.params import params_markdown as _params_markdown
from tt_depth_ros.ros.runtime.tf_buffer import TfBuffer, TfLookupError, subscribe_tf
from tt_depth_ros.ros.runtime.tf_qos import TF_QOS, TF_STATIC_QOS

ROBOT_FRAMES = ('odom', 'map', 'base_link', 'base_footprint', 'world')   # REP 105 names


class PairNode(PairPublishing, PerceptionLifecycleNode):
    """DUSt3R stereo / temporal reconstruction node; see the module docstring."""

    COMMON_DEFAULTS = {'model': 'dust3r-vitl-512-dpt'}

    def __init__(self, node_name: str = 'pair_node', **kwargs) -> None:
        """Declare parameters; nothing heavy happens before configure."""
        self.pipeline: PairPipeline | None = None
        self.pairer: ApproxTimePairer | None = None
        self.chain: KeyframeChain | None = None
        self._out: dict = {}
        self.metric_depth = MetricDepthInput(self)
        self._info_lock = threading.Lock()
        self._pair_times: deque = deque(maxlen=256)
        self._window: deque = deque()    # earlier keyframes (rgb) of the temporal window
        self._info: dict = {}
        self.tf_buffer = TfBuffer()
        self.robot: RobotOdometry | None = None
        self._last_extrinsic: np.ndarray | None = None
        super().__init__(node_name, **kwargs)

    # ---- configuration --------------------------------------------------------------------
    def node_param_specs(self) -> list[ParamSpec]:
        """Pair-node parameters (see README)."""
        return list(PAIR_PARAMS)

    def validate(self) -> list[str]:
        """Cross-parameter checks: model family, network size, scale source per mode."""
        p, errors = self.p, []
        if p['model'] not in DUST3R_MODELS + ANYVIEW_PAIR_MODELS and not p['engine_plugin']:
            errors.append(f"model={p['model']!r} is not a pair model; use one of "
                          f'{list(DUST3R_MODELS + ANYVIEW_PAIR_MODELS)} '
                          '(e.g. -p model:=dust3r-vitl-512-dpt)')
        if p['network_size'] % 16 and p['model'] in DUST3R_MODELS and not p['engine_plugin']:
            errors.append(f"network_size={p['network_size']} must be a multiple of 16")
        if p['scale_source'] == 'baseline':
            if p['mode'] != 'stereo':
                errors.append("scale_source='baseline' needs mode='stereo' (a fixed rig)")
            if p['baseline_m'] <= 0:
                errors.append("scale_source='baseline' needs baseline_m > 0 (metres)")
        if p['robot_base_frame'] and (p['mode'] != 'temporal' or p['scale_source'] != 'depth'):
            errors.append("robot_base_frame needs mode='temporal' and scale_source='depth' "
                          '(the camera mounting is in metres, the trajectory must be too)')
        if p['window_size'] > 2 and (p['mode'] != 'temporal' or (
                p['model'] not in ANYVIEW_PAIR_MODELS and not p['engine_plugin'])):
            errors.append(f"window_size={p['window_size']} needs mode='temporal' and a DA3 "
                          f'any-view model ({list(ANYVIEW_PAIR_MODELS)})')
        anyview = p['model'] in ANYVIEW_PAIR_MODELS or bool(p['engine_plugin'])
        if p['pose_source'] == 'camera_decoder' and not anyview:
            errors.append("pose_source='camera_decoder' needs a DA3 any-view model "
                          f'({list(ANYVIEW_PAIR_MODELS)}); DUSt3R has no camera decoder, its '
                          "pose is always PnP ('auto' or 'pnp')")
        if bool(p['expected_width']) != bool(p['expected_height']):
            errors.append('expected_width and expected_height must both be 0 or both be set')
        try:
            KeyframePolicy(p['keyframe_every_n'], p['keyframe_max_rotation_deg'],
                           p['keyframe_max_translation'])
        except ValueError as exc:
            errors.append(str(exc))
        return errors

    def build_engine(self):
        """DA3 any-view models get a two-view engine; everything else as the base builds it."""
        if self.p['model'] not in ANYVIEW_PAIR_MODELS or self.p['engine_plugin']:
            return super().build_engine()
        from tt_depth_ros.engines.factory import build_engine  # heavy (torch): only when used
        return build_engine(self.p['model'], weights=self.p['weights_path'] or None,
                            backend=self.p['backend'], device_id=self.p['device_id'],
                            revision=self.p['revision'] or None, logger=self.get_logger(),
                            num_views=self.p['window_size'] if self.p['mode'] == 'temporal'
                            else 2)

    def _settings(self) -> PairSettings:
        p = self.p
        return PairSettings(p['network_size'], p['preprocess_mode'], p['conf_threshold'],
                            p['pnp_reproj_px'], p['pnp_iterations'], p['pnp_min_inliers'],
                            p['pnp_min_inlier_ratio'], p['scale_source'], p['baseline_m'],
                            pose_source=p['pose_source'])

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network shape for expected_width x expected_height, if given."""
        self.pipeline = None
        w, h = self.p['expected_width'], self.p['expected_height']
        if not (w and h):
            return []
        return [make_pair_pipeline(self.engine, self._settings()).plan_for(w, h).net_hw]

    def create_outputs(self) -> None:
        """Lifecycle publishers (topics relative: remappable, namespace-able)."""
        self.pipeline = make_pair_pipeline(self.engine, self._settings())
        pub = self.add_publisher
        self._out = {
            'points': pub(PointCloud2, 'points'), 'depth': pub(Image, 'depth'),
            'depth_info': pub(CameraInfo, 'depth/camera_info'),
            'depth_unscaled': pub(Image, 'depth_unscaled'),
            'depth_unscaled_info': pub(CameraInfo, 'depth_unscaled/camera_info'),
            'depth2': pub(Image, 'depth2'), 'depth2_info': pub(CameraInfo, 'depth2/camera_info'),
            'confidence': pub(Image, 'confidence'), 'pose': pub(PoseStamped, 'pose'),
            'path': pub(Path, 'path'),
            'tf': self.create_lifecycle_publisher(TFMessage, '/tf', TF_QOS),   # tf2's QoS
            'tf_static': self.create_lifecycle_publisher(TFMessage, '/tf_static', TF_STATIC_QOS),
        }
        self._pubs += [self._out['tf'], self._out['tf_static']]
        self.robot = (RobotOdometry(self.tf_buffer, self.p['robot_base_frame'])
                      if self.p['robot_base_frame'] else None)
        if self.p['mode'] == 'temporal' and self.robot is None and \
                self.p['tf_parent_frame'] in ROBOT_FRAMES:
            self.get_logger().warning(
                f"tf_parent_frame={self.p['tf_parent_frame']!r} only renames the parent: the "
                "transform is still the camera's optical-axis motion from the first keyframe, "
                "not a robot pose; use robot_base_frame:=base_link for odom -> base_link")
        self.pairer = ApproxTimePairer(self.p['pair_tolerance_s'], self.p['pair_queue_size'])
        self.chain = KeyframeChain(KeyframePolicy(self.p['keyframe_every_n'],
                                                  self.p['keyframe_max_rotation_deg'],
                                                  self.p['keyframe_max_translation']))
        with self._info_lock:
            self._info = {'pnp_failures': 0, 'pnp_ok': 0, 'scale_failures': 0,
                          'tf_published': 0, 'tf_withheld_unscaled': 0,
                          'pose_rejected_frame_id': 0}

    def create_inputs(self) -> None:
        """Subscriptions for the mode (+ metric_depth when scale_source=depth)."""
        if self.p['mode'] == 'stereo':
            self.pairer.reset()
            self.subscribe_camera_info('camera1/camera_info', 'camera1')
            self.subscribe_camera_info('camera2/camera_info', 'camera2')
            self.subscribe_image('camera1/image', lambda m: self._on_stereo(0, m))
            self.subscribe_image('camera2/image', lambda m: self._on_stereo(1, m))
        else:
            self.chain.reset()
            self._window = deque(maxlen=max(self.p['window_size'] - 2, 0))
            self.subscribe_camera_info('camera_info', 'camera')
            self.subscribe_image('image', self._on_temporal)
            if self.robot is not None:   # the camera mounting, from the robot's TF tree
                self.robot.reset()
                self.tf_buffer.clear()
                for sub in subscribe_tf(self, self.tf_buffer):
                    self.track_subscription(sub)
        self._last_extrinsic = None
        self.metric_depth.start()

    def input_qos(self):
        """Input QoS; stereo keeps >= pair_queue_size messages (see the module docstring)."""
        qos = super().input_qos()
        if self.p['mode'] == 'stereo':
            qos.depth = max(qos.depth, self.p['pair_queue_size'])
        return qos

    # ---- executor side --------------------------------------------------------------------
    def _on_stereo(self, side: int, msg) -> None:
        self.stats.on_input()
        if not self.precheck_image(msg, f'camera{side + 1}'):
            return
        pair = self.pairer.push(side, stamp_to_ns(msg.header.stamp), msg)
        if pair is not None:
            self._pair_times.append(time.monotonic())
            self.offer(pair)

    def _on_temporal(self, msg) -> None:
        self.stats.on_input()
        if self.precheck_image(msg, 'camera'):
            self.offer(msg)

    # ---- worker side ----------------------------------------------------------------------
    def _metric_for(self, stamp_ns: int, wait: bool = True) -> np.ndarray | None:
        """Metric depth image with exactly this stamp (waits up to metric_depth_wait_s)."""
        return self.metric_depth.image_for(stamp_ns, wait)

    def _decode_with_K(self, msg, key: str):
        """(rgb, K or None, border): decoded, rectified when D != 0, K of its stamp's CameraInfo.

        `border` is None or the Rectifier whose mask marks pixels from outside the source.
        """
        rgb = self.decode_image(msg, key)
        if rgb is None:
            return None
        view = self.camera_view(key, rgb, msg.header.stamp,
                                 fallback='the focal is estimated from the pointmap'
                                 if self.p['model'] in DUST3R_MODELS else
                                 "the model's estimated intrinsics are used")
        return None if view is None else (view.rgb, view.K, view.border)

    def _run(self, rgb1, K1, rgb2, K2, context=(), borders=(None, None)):
        try:
            plan = self.pipeline.plan_for(rgb1.shape[1], rgb1.shape[0])
        except ValueError as exc:
            self.reject('size', str(exc))
            return None
        self.ensure_prepared(plan.net_hw)
        self.pipeline.set_conf_threshold(self.p['conf_threshold'])   # runtime parameter
        try:
            result = self.pipeline.run(rgb1, rgb2, K1, K2, context,
                                       same_camera=self.p['mode'] == 'temporal')
        except ValueError as exc:
            self.reject('pair', str(exc))
            return None
        return drop_borders(result, borders)

    def process(self, item) -> None:
        """Worker: one stereo pair or one temporal frame to published outputs."""
        t0 = time.perf_counter()
        if self.p['mode'] == 'stereo':
            header = self._process_stereo(item)
        else:
            header = self._process_temporal(item)
        if header is None or self.pipeline is None:
            return
        stages = dict(getattr(self, '_last_stages', {}))
        stages['total'] = time.perf_counter() - t0
        now = self.get_clock().now().nanoseconds
        self.stats.on_output((now - stamp_to_ns(header.stamp)) / 1e9, stages)

    def _pose_ok(self, result, skips_frame: bool) -> bool:
        """Record the PnP outcome; a failure is a skipped frame only when `skips_frame`."""
        pose = result.pose
        with self._info_lock:
            self._info.update(pnp_inliers=pose.inliers,
                              pnp_inlier_ratio=round(pose.inlier_ratio, 4),
                              pnp_reproj_px=round(pose.reproj_error_px, 3),
                              focal_source=result.focal_source)
            self._info['pnp_ok' if pose.success else 'pnp_failures'] += 1
            if not pose.success:
                self._info['last_pnp_failure'] = pose.reason
        if not pose.success and skips_frame:
            self.reject('pnp', f'no pose for this frame (nothing published): {pose.reason}')
        elif not pose.success:
            self.get_logger().warning(
                f'no pose/TF for this pair (cloud still published): {pose.reason}',
                throttle_duration_sec=self.p['bad_input_log_period'])
        return pose.success

    def _scale_ok(self, scale: ScaleResult) -> bool:
        with self._info_lock:
            self._info.update(scale_source=scale.source, scale=scale.value,
                              scale_support=scale.support,
                              units='metres' if scale.metric else self.pipeline.units)
            if not scale.ok:
                self._info['scale_failures'] += 1
        if not scale.ok:
            self.reject('scale', f'no {scale.source} scale for this pair: {scale.reason}')
        return scale.ok

    def _process_stereo(self, pair):
        m1, m2 = pair.first, pair.second
        v1 = self._decode_with_K(m1, 'camera1')   # one reject (reason) per skipped pair
        v2 = None if v1 is None else self._decode_with_K(m2, 'camera2')
        if v2 is None:
            return None
        result = self._run(v1[0], v1[1], v2[0], v2[1], borders=(v1[2], v2[2]))
        if result is None:
            return None
        self._last_stages = dict(result.timings)
        pose_ok = self._pose_ok(result, skips_frame=False)
        metric = self._metric_for(pair.stamp_ns_1)
        scale = self.pipeline.stereo_scale(result, metric)
        if not self._scale_ok(scale):
            return None
        s = scale.value
        if self._out['points'].get_subscription_count() > 0:
            xyz, rgb = result.fused_points(s)
            self._out['points'].publish(pointcloud2_msg(xyz[None], rgb[None], m1.header))
        K1 = result.K1_net if result.K1_net is not None else result.K2_net
        self._publish_depth('depth', result.depth1(s), K1, m1.header, scale, result.plan1)
        if pose_ok and self.p['publish_depth2']:
            self._publish_depth('depth2', result.depth2(s), result.K2_net, m2.header, scale,
                                result.plan2, unscaled_topic=None)
        if self.p['publish_confidence']:
            self._publish_confidence(result.conf1, result.plan1, m1.header)
        if pose_ok:   # last: a pose that cannot be published never blocks cloud and depth
            T = result.T_units.copy()
            T[:3, 3] *= s
            parent = self.p['tf_parent_frame'] or m1.header.frame_id
            child = self.p['tf_child_frame'] or f'{m2.header.frame_id or "camera2"}_dust3r'
            if self._publish_pose(T, m1.header.stamp, parent, child, scale.metric) and \
                    scale.metric and self.p['publish_extrinsic_static']:
                self._publish_extrinsic(T, m1.header.stamp, parent, child)
        return m1.header

    def _process_temporal(self, msg):
        v = self._decode_with_K(msg, 'camera')
        if v is None:
            return None
        rgb, K, border = v
        stamp_ns = stamp_to_ns(msg.header.stamp)
        parent = self.p['tf_parent_frame'] or 'dust3r_odom'
        child = self.p['tf_child_frame'] or f'{msg.header.frame_id or "camera"}_dust3r'
        mount = None
        if self.robot is not None:   # odom -> base_link instead of the camera chain
            parent, child = self.p['odom_frame'], self.robot.base_frame
            try:
                mount = self.robot.mount(msg.header.frame_id, stamp_ns)
            except TfLookupError as exc:
                self.reject('tf_mount', f'camera mounting {child} <- '
                            f'{msg.header.frame_id!r} unknown: {exc}')
                return None
        if self.chain.keyframe is None:
            return self._start_chain(msg, (rgb, K, border), stamp_ns, parent, child, mount)
        kf_msg, kf_rgb, kf_K, kf_border = self.chain.keyframe.data
        result = self._run(kf_rgb, kf_K, rgb, K, tuple(reversed(self._window)),
                           borders=(kf_border, border))
        if result is None:
            return None
        self._last_stages = dict(result.timings)
        if not self._pose_ok(result, skips_frame=True):
            return None
        z_key = result.pts1[..., 2]
        scale = self.pipeline.chain_scale(self.chain.pair_scale(z_key, result.mask1))
        if not self._scale_ok(scale):
            return None
        z_frame = result.depth2(1.0)
        # a fresh metric reference if one is already there; else the propagated one is used
        metric = self._metric_for(stamp_ns, wait=False)
        metric_grid = None if metric is None else self.pipeline.metric_on_grid(result.plan2, metric)
        step = self.chain.track(result.T_units, scale, (msg, rgb, K, border), stamp_ns,
                                frame_depth=np.nan_to_num(z_frame, nan=0.0),
                                frame_mask=result.mask2, frame_metric_depth=metric_grid)
        if step.promoted and self._window.maxlen:
            self._window.append(kf_rgb)     # the old keyframe joins the window
        with self._info_lock:
            self._info.update(keyframes=self.chain.keyframes_made,
                              last_keyframe_reason=step.promoted or self._info.get(
                                  'last_keyframe_reason', ''))
        if self._out['points'].get_subscription_count() > 0:   # cloud in the current camera
            xyz, colors = result.fused_points(scale.value, invert_T(step.T_key_frame))
            self._out['points'].publish(pointcloud2_msg(xyz[None], colors[None], msg.header))
        self._publish_depth('depth', result.depth2(scale.value), result.K2_net, msg.header, scale,
                            result.plan2)
        if self.p['publish_confidence']:
            self._publish_confidence(result.conf2, result.plan2, msg.header)
        T_pub = step.T_odom_frame if mount is None else self.robot.base_pose(
            step.T_odom_frame, mount, stamp_ns)
        self._publish_pose(T_pub, msg.header.stamp, parent, child, scale.metric, trajectory=True)
        return msg.header

    def _start_chain(self, msg, view, stamp_ns, parent, child, mount=None):
        rgb = view[0]
        ref, metric = None, False
        if self.p['scale_source'] == 'depth':
            depth = self._metric_for(stamp_ns)
            if depth is None:
                self.reject('scale', 'no metric depth with the stamp of the first keyframe; '
                            'waiting for one')
                return None
            plan = self.pipeline.plan_for(rgb.shape[1], rgb.shape[0])
            ref, metric = self.pipeline.metric_on_grid(plan, depth), True
        self.chain.start((msg, *view), stamp_ns, ref, metric)
        if mount is not None:
            self.robot.start(mount, stamp_ns)
        with self._info_lock:
            self._info.update(keyframes=1, last_keyframe_reason='first frame (odom origin)')
        # The first keyframe IS the odom origin: its identity pose is exact, not a placeholder.
        self._publish_pose(np.eye(4), msg.header.stamp, parent, child, metric, trajectory=True)
        return msg.header

    def diagnostics_extra(self) -> dict:
        """Pairing, PnP, scale and keyframe figures for /diagnostics."""
        with self._info_lock:
            extra = {k: v for k, v in self._info.items()}
        extra['mode'] = self.p['mode']
        extra['scale_source_configured'] = self.p['scale_source']
        metric = self.p['scale_source'] in METRIC_SOURCES or (
            self.pipeline is not None and self.pipeline.metric_model)
        units = self.pipeline.units if self.pipeline is not None else 'dust3r-units'
        extra['engine'] = self.pipeline.engine_label if self.pipeline is not None else ''
        extra['pose_source'] = self.pipeline.pose_source if self.pipeline is not None else ''
        extra['depth_output'] = ('depth (32FC1 metres)' if metric else
                                 f'depth_unscaled ({units})'
                                 if self.p['publish_unscaled_depth'] else
                                 'none (no metric scale)')
        if self.pairer is not None and self.p['mode'] == 'stereo':
            st = self.pairer.stats
            times = list(self._pair_times)
            rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and \
                times[-1] > times[0] else 0.0
            extra.update(pairs=st.pairs, pairing_rate_hz=f'{rate:.2f}',
                         received_camera1=st.received[0], received_camera2=st.received[1],
                         unpaired_camera1=st.unpaired[0], unpaired_camera2=st.unpaired[1],
                         queued_camera1=st.queued[0], queued_camera2=st.queued[1],
                         input_history_depth=self.input_qos().depth,
                         pairing_resets=sum(st.resets),
                         pair_duplicates=sum(st.duplicates), last_pair_skew_s=st.last_skew_s)
        return extra


def params_markdown() -> str:
    """The pair node's parameter table in Markdown (README material)."""
    return _params_markdown(with_defaults(COMMON_PARAMS, PairNode.COMMON_DEFAULTS)
                            + list(PAIR_PARAMS))


def main(args: list[str] | None = None) -> int:
    """Console script `pair_node`: start, auto-activate (autostart), spin until SIGINT/SIGTERM."""
    return run_lifecycle_node(PairNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
