"""Lifecycle base of the perception nodes (depth node, pair node): engine, worker, diagnostics.

Follows the rclpy lifecycle demo (ros2/demos lifecycle_py talker) and docs/ros.md §4:
configure = validate parameters, build and prepare the engine (slow, logged), create publishers;
activate = subscriptions + worker, then `super().on_activate` (enables lifecycle publishers);
deactivate = unsubscribe, stop the worker and drop its pending frame; cleanup = release engine and
publishers; shutdown from any state; errors go through `on_error`, which releases everything and
returns to unconfigured, so `configure` can be tried again. Every transition catches, logs with a
traceback and returns FAILURE/ERROR itself (rclpy would log nothing). The engine is never released
while the worker is inside prepare/infer: the worker join is bounded and a worker that does not stop
fails the transition (WorkerStuckError) with the engine kept. At process shutdown `abort_configure`
cancels the node's CancelToken, which the engine build checks between its steps.

Subclasses provide `declare_node_parameters`, `create_outputs`, `create_inputs`,
`expected_shapes` and `process`; the base gives them parameters (`self.p`), QoS, image decoding,
the CameraInfo of each image's stamp (ros/runtime/camera_info_sync.py) and rectification of
distorted inputs (ros/runtime/rectify_input.py) via `camera_view`, throttled bad-input reporting
(`self.reject`) and statistics (`self.stats`).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import time
import traceback

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.engines.cancel import BuildCancelled, CancelToken
from tt_depth_ros.engines.weights import WeightsUnavailableError
from tt_depth_ros.geometry.camera_model import CameraModelError, fit_to_image
from tt_depth_ros.ros.msgs.camera_info import CameraInfoError, camera_geometry
from tt_depth_ros.ros.msgs.image_codec import (
    ENCODINGS,
    ImageDecodeError,
    compressed_image_size,
    compressed_to_rgb,
    image_msg_to_rgb,
)
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.camera_info_sync import CAMERA_INFO_SYNC_PARAMS, CameraInfoStore
from tt_depth_ros.ros.runtime.camera_views import CameraView
from tt_depth_ros.ros.runtime.diagnostics import DROP_WINDOW_S, NodeStats, diagnostic_array
from tt_depth_ros.ros.runtime.mailbox import LatestFrameMailbox
from tt_depth_ros.ros.runtime.params import ParamSpec, ParamTable
from tt_depth_ros.ros.runtime.qos import publisher_events, qos_profile, subscription_events
from tt_depth_ros.ros.runtime.rectify_input import RECTIFY_PARAMS, InputRectification
from tt_depth_ros.ros.runtime.worker import FrameWorker

WORKER_STOP_S = 10.0   # deactivate/cleanup wait for an in-flight inference (signal shutdown: less)

SUCCESS, FAILURE, ERROR = (TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE,
                           TransitionCallbackReturn.ERROR)

COMMON_PARAMS = (
    ParamSpec('model', 'da3metric-large', 'Network to run (engines.factory.build_engine name).'),
    ParamSpec('weights_path', '', 'Explicit weights file; empty = HF cache, then pinned download.'),
    ParamSpec('revision', '', 'Hugging Face revision for the download; empty = pinned default.'),
    ParamSpec('backend', 'auto', 'Inference backend; auto = ttnn, else torch-cuda, else torch-cpu.',
              choices=('auto', 'ttnn', 'torch-cuda', 'torch-cpu')),
    ParamSpec('device_id', 0, 'Accelerator index (one process holds one device).',
              int_range=(0, 63)),
    ParamSpec('engine_plugin', '', "Tests/integration only: 'module:callable' returning an Engine "
              'instead of build_engine; never chosen automatically; set at process start only.',
              read_only=True),
    ParamSpec('engine_plugin_args', '{}', 'JSON object of keyword arguments for engine_plugin.',
              read_only=True),
    ParamSpec('input_transport', 'raw', "'raw' subscribes Image on <image>; 'compressed' "
              'subscribes CompressedImage on <image>/compressed (JPEG/PNG).',
              choices=('raw', 'compressed')),
    ParamSpec('input_reliability', 'best_effort', 'QoS reliability of image/camera_info inputs.',
              choices=('best_effort', 'reliable')),
    ParamSpec('input_depth', 1, 'QoS history depth of inputs.', int_range=(1, 100)),
    ParamSpec('output_reliability', 'reliable', 'QoS reliability of published outputs.',
              choices=('best_effort', 'reliable')),
    ParamSpec('output_depth', 2, 'QoS history depth of outputs.', int_range=(1, 100)),
    ParamSpec('camera_info_mode', 'wait', "'wait' skips frames until a valid CameraInfo arrived; "
              "'default_focal' uses the model's default focal (scale unreliable, warned).",
              choices=('wait', 'default_focal')),
    *CAMERA_INFO_SYNC_PARAMS,
    *RECTIFY_PARAMS,
    ParamSpec('max_image_pixels', 8192 * 8192, 'Images with more pixels are rejected.',
              int_range=(1, 1 << 28)),
    ParamSpec('diagnostics_period', 1.0, 'Seconds between /diagnostics messages.',
              float_range=(0.05, 60.0)),
    ParamSpec('bad_input_log_period', 5.0, 'Seconds between log lines per bad-input kind.',
              float_range=(0.0, 3600.0), runtime=True),
    ParamSpec('drop_warn_ratio', 0.5, 'Diagnostics go WARN when more than this fraction of the '
              'frames handed to the worker were dropped (replaced unprocessed) over the last '
              f'{DROP_WINDOW_S:g} s.', float_range=(0.0, 1.0), runtime=True),
    ParamSpec('autostart', True, 'Configure and activate at startup (without launch tooling).',
              read_only=True),
)


def with_defaults(specs, defaults: dict) -> list[ParamSpec]:
    """`specs` with the defaults a subclass overrides (e.g. the pair node's default model)."""
    return [dataclasses.replace(s, default=defaults[s.name]) if s.name in defaults else s
            for s in specs]


def _accepts(fn, name: str) -> bool:
    """Whether callable `fn` takes a keyword argument `name` (False if it cannot be inspected)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class WorkerStuckError(RuntimeError):
    """The worker thread is still inside prepare/infer: the engine must not be released."""


class PerceptionLifecycleNode(LifecycleNode):
    """Lifecycle node owning one engine, one worker thread and a latest-frame mailbox."""

    #: Subclass defaults for COMMON_PARAMS entries (name -> default), e.g. {'model': ...}.
    COMMON_DEFAULTS: dict = {}

    def __init__(self, node_name: str, **kwargs) -> None:
        """Declare parameters (never raises for bad values: on_configure reports them)."""
        self.engine: Engine | None = None
        self.worker: FrameWorker | None = None
        self._subs: list = []
        self._pubs: list = []
        self._diag_timer = None
        self.cancel = CancelToken()          # cancelled once, when the process shuts down
        self.worker_join_s = WORKER_STOP_S   # bounded wait for an in-flight inference
        super().__init__(node_name, **kwargs)
        self.params = ParamTable(self)
        for spec in with_defaults(COMMON_PARAMS, self.COMMON_DEFAULTS) + self.node_param_specs():
            self.params.declare(spec)
        self.p = self.params.values
        self.params.read()
        self.state_label = 'unconfigured'
        self.stats = NodeStats()
        self.mailbox = LatestFrameMailbox()
        self.camera_infos = CameraInfoStore()   # per camera, by stamp
        self.rectification = InputRectification()   # distorted inputs, undistorted
        self._last_stamp: dict[str, int] = {}
        self._last_log: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.add_on_set_parameters_callback(
            lambda ps: self.params.on_set(ps, self.state_label in ('inactive', 'active')))
        self.get_logger().info('parameters: ' + ', '.join(
            f'{k}={v!r}' for k, v in self.p.items()))

    # ---- hooks for subclasses -------------------------------------------------------------
    def node_param_specs(self) -> list[ParamSpec]:
        """ParamSpecs of the subclass (declared after the common ones)."""
        return []

    def validate(self) -> list[str]:
        """Cross-parameter checks beyond ranges; return error messages."""
        return []

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network (H, W) shapes to prepare at configure (empty = prepare on the first frame)."""
        return []

    def create_outputs(self) -> None:
        """Create lifecycle publishers (configure)."""

    def create_inputs(self) -> None:
        """Create subscriptions (activate); use `subscribe_image` / `subscribe_camera_info`."""

    def process(self, item) -> None:
        """Handle one frame in the worker thread."""
        raise NotImplementedError

    def diagnostics_extra(self) -> dict:
        """Extra key/values for /diagnostics."""
        return {}

    # ---- engine ---------------------------------------------------------------------------
    def build_engine(self) -> Engine:
        """Engine from `engine_plugin` (tests/integration) or engines.factory.build_engine.

        Both get the node's cancellation token (a plugin when it has a `cancel` parameter).
        """
        plugin = self.p['engine_plugin']
        if plugin:
            module, _, attr = plugin.partition(':')
            if not attr:
                raise ValueError(f"engine_plugin={plugin!r} must be 'module:callable'")
            kwargs = json.loads(self.p['engine_plugin_args'] or '{}')
            self.get_logger().warning(f'engine from plugin {plugin} (for tests and integration)')
            factory = getattr(importlib.import_module(module), attr)
            if _accepts(factory, 'cancel'):
                kwargs['cancel'] = self.cancel
            return factory(**kwargs)
        from tt_depth_ros.engines.factory import build_engine  # heavy (torch): only when used
        return build_engine(self.p['model'], weights=self.p['weights_path'] or None,
                            backend=self.p['backend'], device_id=self.p['device_id'],
                            revision=self.p['revision'] or None, logger=self.get_logger(),
                            cancel=self.cancel)

    def abort_configure(self) -> None:
        """Process shutdown: a configure in progress stops at its next checkpoint (any thread)."""
        self.cancel.cancel()

    @property
    def worker_stuck(self) -> bool:
        """Whether a worker thread that could not be stopped is still running."""
        return self.worker is not None and self.worker.running

    def ensure_prepared(self, shape: tuple[int, int]) -> None:
        """Prepare the engine for a network shape once (logged: compile/trace can take seconds)."""
        if shape in self._prepared:
            return
        self.get_logger().info(f'preparing engine for network shape {shape[0]}x{shape[1]} ...')
        t0 = time.monotonic()
        self.engine.prepare(shape)
        self._prepared.add(shape)
        self.get_logger().info(f'engine ready for {shape[0]}x{shape[1]} '
                               f'({time.monotonic() - t0:.2f} s)')

    # ---- lifecycle ------------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Validate parameters, build + prepare the engine, create publishers and diagnostics."""
        try:
            self.cancel.check('before configure')
            errors = self.params.read() + self.validate()
            if errors:
                for e in errors:
                    self.get_logger().error(f'configure failed: {e}')
                self.stats.on_error('configure: ' + '; '.join(errors))
                return FAILURE
            self.stats.reset()
            self.camera_infos.reset()
            self.rectification.reset()
            self._prepared: set = set()
            self.get_logger().info(f'configure: building engine for {self.p["model"]!r} '
                                   f'(backend {self.p["backend"]}) ...')
            t0 = time.monotonic()
            self.engine = self.build_engine()
            self.cancel.check('after building the engine')
            self.get_logger().info(f'engine built in {time.monotonic() - t0:.2f} s: '
                                   f'{self.engine.info}')
            for shape in self.expected_shapes():
                self.ensure_prepared(shape)
                self.cancel.check('while preparing the engine')
            self.create_outputs()
            self._diag_timer = self.create_timer(self.p['diagnostics_period'],
                                                 self.publish_diagnostics)
            self.state_label = 'inactive'
            return SUCCESS
        except BuildCancelled as exc:
            self.get_logger().info(f'configure {exc} (shutting down); released what it acquired')
            self._release_all()
            return FAILURE
        except Exception as exc:  # noqa: BLE001 - a failed configure must leave us unconfigured
            self.get_logger().error(f'configure failed: {exc}\n{traceback.format_exc()}')
            self.stats.on_error(f'configure: {exc}')
            self._release_all()
            # Expected, explained failures (bad value, no weights, backend unavailable) -> FAILURE;
            # anything else is an error handled by on_error.
            expected = isinstance(exc, (ValueError, WeightsUnavailableError))
            return FAILURE if expected else ERROR

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe, start the worker, enable the lifecycle publishers."""
        try:
            self._last_stamp.clear()
            self.worker = FrameWorker(self.mailbox, self._process_timed, self._on_worker_error,
                                      name=f'{self.get_name()}-worker')
            self.worker.start()
            self.create_inputs()
            self.state_label = 'active'
            return super().on_activate(state)
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f'activate failed: {exc}\n{traceback.format_exc()}')
            self.stats.on_error(f'activate: {exc}')
            return ERROR

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Unsubscribe, stop the worker and drop the frame it had not started."""
        try:
            self._stop_inputs()
            self.state_label = 'inactive'
            return super().on_deactivate(state)
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f'deactivate failed: {exc}\n{traceback.format_exc()}')
            self.stats.on_error(f'deactivate: {exc}')
            return ERROR

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release publishers, timers and the engine (device memory)."""
        try:
            self._release_all()
            return SUCCESS
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f'cleanup failed: {exc}\n{traceback.format_exc()}')
            return ERROR

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything from any state (a stuck worker keeps its engine; logged)."""
        try:
            self._release_all()
            self.state_label = 'finalized'
            return SUCCESS
        except WorkerStuckError as exc:
            self.get_logger().error(f'shutdown: {exc}')
            self.state_label = 'finalized'
            return FAILURE
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f'shutdown failed: {exc}\n{traceback.format_exc()}')
            return ERROR

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything and go back to unconfigured (recoverable by configure)."""
        self.get_logger().error(f'error while {state.label}: releasing resources; the node goes '
                                f'back to unconfigured, configure it again '
                                f'({self.stats.last_error})')
        try:
            self._release_all()
            return SUCCESS
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f'error recovery failed: {exc}\n{traceback.format_exc()}')
            return ERROR

    def _stop_inputs(self) -> None:
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs.clear()
        if self.worker is not None:
            if not self.worker.stop(self.worker_join_s):
                raise WorkerStuckError(
                    f'the worker is still inside prepare/infer {self.worker_join_s:.1f} s after '
                    'being asked to stop; the engine is NOT released (closing it under a running '
                    'inference is unsafe); retry the transition, or restart the process')
            self.worker = None
        if self.mailbox.clear():
            self.stats.on_drop()

    def _release_all(self) -> None:
        self._stop_inputs()
        for pub in self._pubs:
            self.destroy_lifecycle_publisher(pub)
        self._pubs.clear()
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if self.engine is not None:
            engine, self.engine = self.engine, None
            engine.close()
        self.camera_infos.clear()
        self.state_label = 'unconfigured'

    # ---- inputs ---------------------------------------------------------------------------
    def input_qos(self):
        """QoS of subscriptions from parameters."""
        return qos_profile(self.p['input_reliability'], self.p['input_depth'])

    def output_qos(self):
        """QoS of publishers from parameters."""
        return qos_profile(self.p['output_reliability'], self.p['output_depth'])

    def add_publisher(self, msg_type, topic: str):
        """Lifecycle publisher with output QoS and incompatible-QoS logging."""
        pub = self.create_lifecycle_publisher(
            msg_type, topic, self.output_qos(),
            event_callbacks=publisher_events(self.get_logger(), topic,
                                             lambda t: self.stats.on_reject('qos', t)))
        self._pubs.append(pub)
        return pub

    def track_subscription(self, sub):
        """Own a subscription created by a subclass or helper: destroyed on deactivate."""
        self._subs.append(sub)
        return sub

    def subscribe_image(self, topic: str, callback):
        """Subscribe Image on `topic` or CompressedImage on `topic`/compressed (input_transport)."""
        compressed = self.p['input_transport'] == 'compressed'
        msg_type, name = (CompressedImage, f'{topic}/compressed') if compressed else (Image, topic)
        sub = self.create_subscription(
            msg_type, name, callback, self.input_qos(),
            event_callbacks=subscription_events(self.get_logger(), name,
                                                lambda t: self.stats.on_reject('qos', t)))
        return self.track_subscription(sub)

    def subscribe_camera_info(self, topic: str, key: str):
        """Cache CameraInfos of `topic` under `key` by stamp (invalid ones cached as errors)."""
        def cb(msg: CameraInfo) -> None:
            stamp_ns = stamp_to_ns(msg.header.stamp)
            try:
                self.camera_infos.put(key, stamp_ns, msg, camera_geometry(msg))
            except CameraInfoError as exc:
                self.camera_infos.put(key, stamp_ns, msg, exc)
                self.reject('camera_info_invalid', f'{topic}: {exc}')
        sub = self.create_subscription(CameraInfo, topic, cb, self.input_qos(),
                                       event_callbacks=subscription_events(self.get_logger(),
                                                                           topic))
        return self.track_subscription(sub)

    def camera_info_match(self, key: str, stamp):
        """The CameraInfo for an image of `key` with header stamp `stamp` (camera_info_sync).

        Returns None (already reported) when the frame must be skipped, 'none' when no
        CameraInfo arrived at all and camera_info_mode is 'default_focal', else an InfoMatch.
        """
        stamp_ns = stamp_to_ns(stamp)
        p = self.p
        match = self.camera_infos.lookup(key, stamp_ns, p['camera_info_sync'],
                                         p['camera_info_tolerance_s'], p['camera_info_wait_s'])
        if match is not None:
            return match
        if not self.camera_infos.has_any(key):
            if p['camera_info_mode'] == 'wait':
                self.reject('no_camera_info', f'no CameraInfo received yet for {key} '
                            "(camera_info_mode='wait'); frame skipped")
                return None
            return 'none'
        skew = self.camera_infos.nearest_skew_s(key, stamp_ns)
        self.reject('camera_info_stamp', f'{key}: no CameraInfo with the image stamp '
                    f'{stamp_ns / 1e9:.6f} (nearest {skew:+.6f} s away, camera_info_tolerance_s='
                    f"{p['camera_info_tolerance_s']}); frame skipped. A camera that publishes "
                    "CameraInfo rarely or with other stamps needs camera_info_sync:='latest'")
        return None

    def camera_view(self, key: str, rgb: np.ndarray, stamp,
                    fallback: str = 'using the default focal; the metric scale is unreliable'
                    ) -> CameraView | None:
        """The pinhole view of a decoded frame: its CameraInfo by `stamp`, rectified (`rectify`).

        `fallback` says, in the once-only warning, what replaces the intrinsics when no
        CameraInfo has arrived in 'default_focal' mode.

        Returns:
            None when the frame must be skipped (already reported: no CameraInfo in 'wait' mode,
            invalid CameraInfo, incompatible size, calibration that cannot be rectified); else
            a CameraView (K None in 'default_focal' mode without CameraInfo; warned once).
        """
        height, width = rgb.shape[:2]
        match = self.camera_info_match(key, stamp)
        if match is None:
            return None
        if match == 'none':
            self.get_logger().warning(f'no CameraInfo for {key}: {fallback} '
                                      '(camera_info_mode=default_focal)', once=True)
            return CameraView(rgb, None, 0.0, None)
        geom = match.geometry
        if isinstance(geom, Exception):
            self.reject('camera_info_invalid', f'{key}: its CameraInfo is unusable: {geom}')
            return None
        try:
            K, _ = fit_to_image(geom, width, height)
        except CameraModelError as exc:
            self.reject('camera_info_size', f'{key}: {exc}')
            return None
        try:
            rgb, border = self.rectification.apply(match.msg, rgb, self.p['rectify'])
        except CameraModelError as exc:
            self.reject('rectify', f'{key}: cannot rectify with its CameraInfo: {exc}')
            return None
        return CameraView(rgb, K, geom.Tx * K[0, 0] / geom.K[0, 0], border)

    def precheck_image(self, msg, key: str) -> bool:
        """Cheap executor-side checks (size, encoding, stamp order); False = rejected."""
        stamp_ns = stamp_to_ns(msg.header.stamp)
        last = self._last_stamp.get(key)
        self._last_stamp[key] = stamp_ns
        if last is not None and stamp_ns < last:
            back = (last - stamp_ns) / 1e9
            self.reject('stamp_backwards', f'{key}: stamp went back by {back:.3f} s (bag loop or '
                        'clock jump); frame skipped, continuing from the new time')
            return False
        if isinstance(msg, CompressedImage):
            try:
                w, h = compressed_image_size(msg.data)
            except ImageDecodeError as exc:
                self.reject('decode', f'{key}: {exc}')
                return False
            if w * h > self.p['max_image_pixels']:
                self.reject('size', f'{key}: compressed image declares {w}x{h}, above '
                            f'max_image_pixels={self.p["max_image_pixels"]}; not decoded')
                return False
        if isinstance(msg, Image):
            if msg.encoding not in ENCODINGS:
                self.reject('encoding', f'{key}: unsupported encoding {msg.encoding!r}')
                return False
            h, w = int(msg.height), int(msg.width)
            if h <= 0 or w <= 0 or h * w > self.p['max_image_pixels']:
                self.reject('size', f'{key}: image size {w}x{h} is zero or above '
                            f'max_image_pixels={self.p["max_image_pixels"]}')
                return False
            if len(msg.data) != msg.step * h:
                self.reject('data_size', f'{key}: data size {len(msg.data)} != step*height '
                            f'= {msg.step}*{h}')
                return False
        return True

    def decode_image(self, msg, key: str) -> np.ndarray | None:
        """Message -> (H, W, 3) uint8 RGB, or None after a throttled reject."""
        try:
            if isinstance(msg, CompressedImage):
                return compressed_to_rgb(msg, self.p['max_image_pixels'])
            return image_msg_to_rgb(msg, self.p['max_image_pixels'])
        except ImageDecodeError as exc:
            self.reject('decode', f'{key}: {exc}')
            return None

    def offer(self, item) -> None:
        """Hand a frame to the worker; replacing an unprocessed one counts as a drop."""
        dropped = self.mailbox.put(item)
        self.stats.on_offer(dropped)
        if dropped:
            self.stats.on_drop()

    # ---- reporting ------------------------------------------------------------------------
    def reject(self, reason: str, message: str) -> None:
        """Count a skipped frame and log at most once per bad_input_log_period per reason."""
        self.stats.on_reject(reason, message)
        now = time.monotonic()
        if now - self._last_log.get(reason, -1e9) >= self.p['bad_input_log_period']:
            n = self._suppressed.pop(reason, 0)
            more = f' ({n} more since the last report)' if n else ''
            self.get_logger().warning(f'frame skipped [{reason}]: {message}{more}')
            self._last_log[reason] = now
        else:
            self._suppressed[reason] = self._suppressed.get(reason, 0) + 1

    def _process_timed(self, item) -> None:
        self.process(item)

    def _on_worker_error(self, item, exc: BaseException) -> None:
        self.stats.on_error(f'processing: {type(exc).__name__}: {exc}')
        now = time.monotonic()
        if now - self._last_log.get('worker', -1e9) >= self.p['bad_input_log_period']:
            self._last_log['worker'] = now
            self.get_logger().error('frame processing failed: '
                                    + ''.join(traceback.format_exception(exc)))

    def publish_diagnostics(self) -> None:
        """Publish one DiagnosticArray with this node's status."""
        info = self.engine.info if self.engine is not None else None
        extra = {'backend': info.backend if info else '', 'device': info.device if info else '',
                 'model': info.model if info else self.p['model']}
        extra.update(self.camera_infos.counters())
        extra.update(self.rectification.diagnostics(self.p['rectify']))
        extra.update(self.diagnostics_extra())
        status = self.stats.to_status(f'{self.get_fully_qualified_name()}', extra['device'],
                                      self.state_label, extra,
                                      drop_warn_ratio=self.p['drop_warn_ratio'])
        self._diag_pub.publish(diagnostic_array(self.get_clock().now().to_msg(), [status]))
