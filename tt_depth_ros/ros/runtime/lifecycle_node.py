"""Lifecycle base of the perception nodes (depth node, pair node): the transitions.

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

The rest is composed from one-concept parts, reached through thin methods that subclasses call:
parameters (ros/runtime/common_params.py + the node's own, `self.params`), the engine
(ros/runtime/engine_builder.py: `build_engine`, `ensure_prepared`), inputs
(ros/runtime/inputs/subscriptions.py: `subscribe_image`, `precheck_image`, `decode_image`, `offer`),
CameraInfo by stamp and rectification (ros/runtime/inputs/camera_views.py: `camera_view`),
publishers (ros/runtime/publishers.py: `add_publisher`), throttled bad-input reporting
(ros/runtime/rejects.py: `reject`) and statistics (`self.stats`, /diagnostics). Subclasses provide
`PARAM_SPECS` and `PARAMS_TYPE` (ros/depth/params.py, ros/pair/params.py), `validate`,
`expected_shapes`, `create_outputs`, `create_inputs`, `process` and
`diagnostics_extra`.
"""
from __future__ import annotations

import time
import traceback

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from sensor_msgs.msg import Image
from tf2_msgs.msg import TFMessage

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.engines.cancel import BuildCancelled, CancelToken
from tt_depth_ros.engines.weights import WeightsUnavailableError
from tt_depth_ros.ros.runtime.diagnostics import NodeStats, diagnostic_array
from tt_depth_ros.ros.runtime.engine_builder import PreparedShapes, build_node_engine
from tt_depth_ros.ros.runtime.inputs.camera_info_sync import CameraInfoStore
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView, CameraViews
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import TOPIC as METRIC_DEPTH_TOPIC
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthImages
from tt_depth_ros.ros.runtime.inputs.subscriptions import NodeInputs
from tt_depth_ros.ros.runtime.mailbox import LatestFrameMailbox
from tt_depth_ros.ros.runtime.params import ParamTable
from tt_depth_ros.ros.runtime.publishers import NodePublishers
from tt_depth_ros.ros.runtime.qos import qos_profile
from tt_depth_ros.ros.runtime.rejects import RejectReporter
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer, subscribe_tf
from tt_depth_ros.ros.runtime.tf.tf_qos import TF_QOS, TF_STATIC_QOS
from tt_depth_ros.ros.runtime.worker import FrameStages, FrameWorker

WORKER_STOP_S = 10.0   # deactivate/cleanup wait for an in-flight inference (signal shutdown: less)

SUCCESS, FAILURE, ERROR = (TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE,
                           TransitionCallbackReturn.ERROR)


class WorkerStuckError(RuntimeError):
    """The worker thread is still inside prepare/infer: the engine must not be released."""


class PerceptionLifecycleNode(LifecycleNode):
    """Lifecycle node owning one engine, one worker thread and a latest-frame mailbox."""

    #: The node's whole parameter table (COMMON_PARAMS first) and its values type (params_type).
    PARAM_SPECS: tuple = ()
    PARAMS_TYPE: type = type(None)

    def __init__(self, node_name: str, **kwargs) -> None:
        """Declare parameters (never raises for bad values: on_configure reports them)."""
        self.engine: Engine | None = None
        self.worker: FrameWorker | None = None
        self._diag_timer = None
        self.cancel = CancelToken()          # cancelled once, when the process shuts down
        self.worker_join_s = WORKER_STOP_S   # bounded wait for an in-flight inference
        super().__init__(node_name, **kwargs)
        self.param_table = ParamTable(self, self.PARAMS_TYPE)
        for spec in self.PARAM_SPECS:
            self.param_table.declare(spec)
        self.param_table.read()
        self.state_label = 'unconfigured'
        self.stats = NodeStats()
        self.mailbox = self.make_mailbox()
        self.prepared = PreparedShapes()
        self.rejects = RejectReporter(self.get_logger(), self.stats,
                                      lambda: self.params.bad_input_log_period)
        self.inputs = NodeInputs(self, lambda: self.params, self.input_qos, self.stats,
                                 self.reject, self.mailbox)
        self.node_publishers = NodePublishers(self, self.output_qos, self.stats)
        self.camera_views = CameraViews(lambda: self.params, self.reject, self.get_logger())
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.add_on_set_parameters_callback(
            lambda ps: self.param_table.on_set(ps, self.state_label in ('inactive', 'active')))
        self.get_logger().info('parameters: ' + ', '.join(
            f'{k}={v!r}' for k, v in self.params.as_dict().items()))

    @property
    def params(self):
        """The current parameter values (a frozen PARAMS_TYPE; replaced when one changes)."""
        return self.param_table.values

    @property
    def camera_infos(self) -> CameraInfoStore:
        """Each camera's CameraInfos by stamp (ros/runtime/inputs/camera_info_sync.py)."""
        return self.camera_views.store

    # ---- hooks for subclasses -------------------------------------------------------------
    def validate(self) -> list[str]:
        """Cross-parameter checks beyond ranges; return error messages."""
        return []

    def configure_for_engine(self) -> None:
        """Set up what depends on the built engine, before it is prepared (configure).

        Raise ValueError for parameters the engine's model cannot honour (configure FAILURE).
        """

    def engine_num_views(self) -> int | None:
        """Views per forward the engine is built for (DA3 any-view / NESTED); None = default."""
        return None

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network (H, W) shapes to prepare at configure (empty = prepare on the first frame)."""
        return []

    def expected_resize(self, shape: tuple[int, int]):
        """The ResizeMap to prepare with an expected shape (the engine resizes on its device)."""
        return None

    def expected_preparations(self) -> list[tuple]:
        """(network shape, ResizeMap or None) pairs to prepare at configure.

        The default pairs `expected_shapes` with `expected_resize`; a node whose cameras share a
        network shape at different camera sizes lists each pair itself.
        """
        return [(shape, self.expected_resize(shape)) for shape in self.expected_shapes()]

    def make_mailbox(self):
        """The worker's hand-over: one latest-frame slot (or one per camera: scheduler.py)."""
        return LatestFrameMailbox()

    def create_outputs(self) -> None:
        """Create lifecycle publishers (configure); use `add_publisher`."""

    def create_inputs(self) -> None:
        """Create subscriptions (activate); use `subscribe_image` / `subscribe_camera_info`."""

    def process(self, item) -> None:
        """Handle one frame in the worker thread."""
        raise NotImplementedError

    def frame_stages(self) -> FrameStages | None:
        """The frame work as start/finish halves (pipelining, batching); None = `process`."""
        return None

    def diagnostics_extra(self) -> dict:
        """Extra key/values for /diagnostics."""
        return {}

    def diagnostics_statuses(self, state: str) -> list:
        """More DiagnosticStatus entries beside the node's own (e.g. one per camera)."""
        return []

    # ---- engine ---------------------------------------------------------------------------
    def build_engine(self) -> Engine:
        """The engine of the node's parameters, cancellable (ros/runtime/engine_builder.py)."""
        return build_node_engine(self.params, self.get_logger(), self.cancel,
                                 self.engine_num_views())

    def ensure_prepared(self, shape: tuple[int, int], resize=None) -> None:
        """Prepare the engine for a network shape once (logged: compile/trace can take seconds).

        `resize`: the ResizeMap of a camera size the engine resizes on its device (DA3FramePath
        `device_resize`), prepared with the network shape.
        """
        self.prepared.ensure(self.engine, shape, self.get_logger(), resize)

    def abort_configure(self) -> None:
        """Process shutdown: a configure in progress stops at its next checkpoint (any thread)."""
        self.cancel.cancel()

    # ---- lifecycle ------------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Validate parameters, build + prepare the engine, create publishers and diagnostics."""
        try:
            self.cancel.check('before configure')
            errors = self.param_table.read() + self.validate()
            if errors:
                for e in errors:
                    self.get_logger().error(f'configure failed: {e}')
                self.stats.on_error('configure: ' + '; '.join(errors))
                return FAILURE
            self.stats.reset()
            self.camera_views.reset()
            self.prepared.reset()
            self.get_logger().info(f'configure: building engine for {self.params.model!r} '
                                   f'(backend {self.params.backend}) ...')
            t0 = time.monotonic()
            self.engine = self.build_engine()
            self.cancel.check('after building the engine')
            self.get_logger().info(f'engine built in {time.monotonic() - t0:.2f} s: '
                                   f'{self.engine.info}')
            self.configure_for_engine()
            for shape, resize in self.expected_preparations():
                self.ensure_prepared(shape, resize)
                self.cancel.check('while preparing the engine')
            self.create_outputs()
            self._diag_timer = self.create_timer(self.params.diagnostics_period,
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
            self.inputs.restart()
            self.worker = FrameWorker(self.mailbox, self.process, self.rejects.processing_failed,
                                      name=f'{self.get_name()}-worker',
                                      stages=self.frame_stages())
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
        self.inputs.destroy_all()
        if self.worker is not None:
            if not self.worker.stop(self.worker_join_s):
                raise WorkerStuckError(
                    f'the worker is still inside prepare/infer {self.worker_join_s:.1f} s after '
                    'being asked to stop; the engine is NOT released (closing it under a running '
                    'inference is unsafe); retry the transition, or restart the process')
            self.worker = None
        for _ in range(self.mailbox.clear()):
            self.stats.on_drop()

    def _release_all(self) -> None:
        self._stop_inputs()
        self.node_publishers.destroy_all()
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if self.engine is not None:
            engine, self.engine = self.engine, None
            engine.close()
        self.camera_views.clear()
        self.state_label = 'unconfigured'

    # ---- QoS and publishers ---------------------------------------------------------------
    def input_qos(self):
        """QoS of subscriptions from parameters."""
        return qos_profile(self.params.input_reliability, self.params.input_depth)

    def output_qos(self):
        """QoS of publishers from parameters."""
        return qos_profile(self.params.output_reliability, self.params.output_depth)

    def add_publisher(self, msg_type, topic: str):
        """Lifecycle publisher with output QoS and incompatible-QoS logging."""
        return self.node_publishers.add(msg_type, topic)

    def add_tf_publisher(self, static: bool):
        """Lifecycle publisher of /tf_static (static) or /tf with tf2's QoS."""
        if static:
            pub = self.create_lifecycle_publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
        else:
            pub = self.create_lifecycle_publisher(TFMessage, '/tf', TF_QOS)
        return self.node_publishers.track(pub)

    # ---- inputs (ros/runtime/inputs/subscriptions.py, ros/runtime/inputs/camera_views.py) ----
    def track_subscription(self, sub):
        """Own a subscription created by a subclass or helper: destroyed on deactivate."""
        return self.inputs.track(sub)

    def subscribe_image(self, topic: str, callback, transport: str = ''):
        """Image on `topic` or CompressedImage on `topic`/compressed ('' = input_transport)."""
        return self.inputs.subscribe_image(topic, callback, transport)

    def subscribe_camera_info(self, topic: str, key: str):
        """Cache CameraInfos of `topic` under `key` by stamp (invalid ones cached as errors)."""
        return self.inputs.subscribe_camera_info(
            topic, lambda msg: self.camera_views.on_camera_info(key, topic, msg))

    def subscribe_tf(self, buffer: TfBuffer) -> None:
        """Feed `buffer` from /tf and /tf_static (tf2's listener QoS) while active."""
        for sub in subscribe_tf(self, buffer):
            self.track_subscription(sub)

    def input_history_depth(self) -> int:
        """Messages each image subscription keeps (the input QoS depth)."""
        return self.input_qos().depth

    def subscribe_metric_depth(self, images: MetricDepthImages, topic: str = METRIC_DEPTH_TOPIC):
        """Feed `images` from `topic` (scale_source=depth); a bad message is a reject."""
        def on_image(msg) -> None:
            error = images.put(msg)
            if error is not None:
                self.reject('metric_depth', error)
        return self.track_subscription(self.create_subscription(
            Image, topic, on_image, self.input_qos()))

    def camera_view(self, key: str, rgb: np.ndarray, stamp,
                    fallback: str = 'using the default focal; the metric scale is unreliable'
                    ) -> CameraView | None:
        """The pinhole view of a decoded frame: its CameraInfo by `stamp`, rectified.

        None when the frame must be skipped (already reported); see CameraViews.view.
        """
        return self.camera_views.view(key, rgb, stamp, fallback)

    def precheck_image(self, msg, key: str) -> bool:
        """Cheap executor-side checks (size, encoding, stamp order); False = rejected."""
        return self.inputs.precheck(msg, key)

    def decode_image(self, msg, key: str) -> np.ndarray | None:
        """Message -> (H, W, 3) uint8 RGB, or None after a throttled reject."""
        return self.inputs.decode(msg, key)

    def offer(self, item) -> bool:
        """Hand a frame to the worker; True when it replaced an unprocessed one (a drop)."""
        return self.inputs.offer(item)

    # ---- reporting ------------------------------------------------------------------------
    def reject(self, reason: str, message: str) -> None:
        """Count a skipped frame and log at most once per bad_input_log_period per reason."""
        self.rejects.reject(reason, message)

    def warn_throttled(self, key: str, message: str) -> None:
        """Log a warning at most once per bad_input_log_period per `key` (nothing skipped)."""
        self.rejects.warn(key, message)

    def publish_diagnostics(self) -> None:
        """Publish one DiagnosticArray with this node's status."""
        info = self.engine.info if self.engine is not None else None
        extra = {'backend': info.backend if info else '', 'device': info.device if info else '',
                 'model': info.model if info else self.params.model,
                 'precision': info.dtype if info else ''}
        extra.update(self.camera_views.diagnostics())
        extra.update(self.diagnostics_extra())
        status = self.stats.to_status(f'{self.get_fully_qualified_name()}', extra['device'],
                                      self.state_label, extra,
                                      drop_warn_ratio=self.params.drop_warn_ratio)
        statuses = [status, *self.diagnostics_statuses(self.state_label)]
        self._diag_pub.publish(diagnostic_array(self.get_clock().now().to_msg(), statuses))
