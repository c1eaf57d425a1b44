"""Pair node: DUSt3R two-view reconstruction with PnP pose (stereo rig or one moving camera).

Same lifecycle, worker, QoS, CameraInfo and bad-input machinery as the depth node (the shared
PerceptionLifecycleNode base). Modes:
- `stereo`: camera1/{image,camera_info} and camera2/{image,camera_info}; frames paired by stamp
  (ros/pair/pairing.py); camera 1 is the reference.
- `temporal`: image + camera_info of one camera; each frame is paired with the current keyframe,
  poses chain keyframe to keyframe (geometry/pose/keyframes.py) in an odom-like frame.
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
This file is the node: parameters, the engine and pipeline for the model, the lifecycle hooks and
the metric-depth side input. Each mode's inputs and per-pair work are in ros/pair/stereo.py and
ros/pair/temporal.py (the steps they share in ros/pair/steps.py); publishing rules (TF in metres
only by default, frame-name checks, camera-resolution depth) in ros/pair/outputs.py, an object the
node owns; temporal mode can map the chain to odom -> base_link with the camera mounting from the
robot's TF tree (robot_base_frame; ros/pair/odometry.py, ros/runtime/tf/tf_buffer.py).
Scale semantics (geometry/pointmap/scale.py): `depth` is 32FC1 metres and is published only with a
metric scale (baseline or depth); without one, `depth_unscaled` carries DUSt3R-unit depth if
`publish_unscaled_depth` is set, never `depth`. Points and poses carry the active units, which
/diagnostics reports (`units`, `scale_source`, `scale`).
"""
from __future__ import annotations

import time
from typing import NamedTuple

from tt_depth_ros.geometry.pointmap.scale import METRIC_SOURCES
from tt_depth_ros.pipelines.depth import engine_kind
from tt_depth_ros.pipelines.pair_anyview import make_pair_pipeline
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.pair.figures import PairFigures
from tt_depth_ros.ros.pair.host import PairHost
from tt_depth_ros.ros.pair.outputs import PairPublishers
from tt_depth_ros.ros.pair.params import (
    PAIR_NODE_PARAMS,
    PairParams,
    check_pair_kind,
    pair_engine_views,
    pair_settings,
    validate_pair_params,
)
from tt_depth_ros.ros.pair.steps import PairSteps
from tt_depth_ros.ros.pair.stereo import StereoMode
from tt_depth_ros.ros.pair.temporal import TemporalMode
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthImages
from tt_depth_ros.ros.runtime.lifecycle_node import PerceptionLifecycleNode


class PairNode(PerceptionLifecycleNode):
    """DUSt3R / DA3 any-view stereo and temporal reconstruction node; see the module docstring."""

    PARAM_SPECS = PAIR_NODE_PARAMS
    PARAMS_TYPE = PairParams

    def __init__(self, node_name: str = 'pair_node', **kwargs) -> None:
        """Declare parameters; nothing heavy happens before configure."""
        self.pipeline = None   # pipelines/pair_dust3r.py or pipelines/pair_anyview.py
        self.mode: StereoMode | TemporalMode | None = None
        self.outputs: PairPublishers | None = None
        self.figures = PairFigures()
        self.metric_depth = MetricDepthImages()
        super().__init__(node_name, **kwargs)

    # ---- configuration --------------------------------------------------------------------
    def validate(self) -> list[str]:
        """Cross-parameter checks: model family, network size, scale source per mode."""
        return validate_pair_params(self.params)

    def configure_for_engine(self) -> None:
        """The built engine's own kind must suit the pair node; ValueError (configure fails).

        An engine plugin declares its kind in `EngineInfo.details` like every engine.
        """
        errors = check_pair_kind(self.params, engine_kind(self.engine.info.details))
        if errors:
            raise ValueError('; '.join(errors))

    def engine_num_views(self) -> int | None:
        """DA3 any-view models: a two-view engine (temporal: window_size views); else default."""
        return pair_engine_views(self.params)

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network shape for expected_width x expected_height, if given."""
        self.pipeline = None
        w, h = self.params.expected_width, self.params.expected_height
        if not (w and h):
            return []
        return [make_pair_pipeline(self.engine, pair_settings(self.params)).plan_for(w, h).net_hw]

    def create_outputs(self) -> None:
        """Pipeline, publishers (topics relative: remappable, namespace-able) and the mode."""
        self.pipeline, self.outputs, self.mode = pair_work(self, self.engine, self.figures,
                                                           self.metric_depth_for)

    def create_inputs(self) -> None:
        """Subscriptions for the mode (+ metric_depth when scale_source=depth)."""
        self.mode.create_inputs()
        self.outputs.restart()
        self.metric_depth.clear()
        if self.params.scale_source == 'depth':
            self.subscribe_metric_depth(self.metric_depth)

    def metric_depth_for(self, stamp_ns: int, wait: bool = True):
        """The metric depth image of this stamp (scale_source=depth); None if it did not come.

        Waits up to metric_depth_wait_s for it, unless `wait` is False.
        """
        if self.params.scale_source != 'depth':
            return None
        return self.metric_depth.image_for(
            stamp_ns, self.params.metric_depth_wait_s if wait else 0.0)

    def input_qos(self):
        """Input QoS; stereo keeps >= pair_queue_size messages (see the module docstring)."""
        qos = super().input_qos()
        if self.params.mode == 'stereo':
            qos.depth = max(qos.depth, self.params.pair_queue_size)
        return qos

    # ---- worker side ----------------------------------------------------------------------
    def process(self, item) -> None:
        """Worker: one stereo pair or one temporal frame to published outputs."""
        t0 = time.perf_counter()
        published = self.mode.process(item)
        if published is None or self.pipeline is None:
            return
        stages = dict(published.stages)
        stages['total'] = time.perf_counter() - t0
        now = self.get_clock().now().nanoseconds
        self.stats.on_output((now - stamp_to_ns(published.header.stamp)) / 1e9, stages)

    def diagnostics_extra(self) -> dict:
        """Pairing, PnP, scale and keyframe figures for /diagnostics."""
        extra = self.figures.snapshot()
        extra['mode'] = self.params.mode
        extra['scale_source_configured'] = self.params.scale_source
        metric = self.params.scale_source in METRIC_SOURCES or (
            self.pipeline is not None and self.pipeline.metric_model)
        units = self.pipeline.units if self.pipeline is not None else 'dust3r-units'
        extra['engine'] = self.pipeline.engine_label if self.pipeline is not None else ''
        extra['pose_source'] = self.pipeline.pose_source if self.pipeline is not None else ''
        extra['depth_output'] = ('depth (32FC1 metres)' if metric else
                                 f'depth_unscaled ({units})'
                                 if self.params.publish_unscaled_depth else
                                 'none (no metric scale)')
        if self.mode is not None:
            extra.update(self.mode.diagnostics())
        return extra


class PairWork(NamedTuple):
    """What a configured pair node works with: its pipeline, publishing rules and mode."""

    pipeline: object
    outputs: PairPublishers
    mode: StereoMode | TemporalMode


def pair_work(node: PairHost, engine, figures: PairFigures, metric_for) -> PairWork:
    """The pipeline, outputs and mode of `node`'s parameters on `engine` (configure).

    `node` is the pair node, or tt-depth-batch's offline host of the same interface
    (ros/pair/host.py `PairHost`; tools/batch/pair_host.py): both run this, so both do the same
    per-pair work.
    """
    pipeline = make_pair_pipeline(engine, pair_settings(node.params))
    figures.reset()
    outputs = PairPublishers(node, figures)
    steps = PairSteps(node, pipeline, figures)
    mode = StereoMode if node.params.mode == 'stereo' else TemporalMode
    return PairWork(pipeline, outputs, mode(node, steps, outputs, metric_for))
