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
from tt_depth_ros.geometry.pose.keyframes import KeyframePolicy
from tt_depth_ros.pipelines.pair_anyview import ANYVIEW_PAIR_MODELS, make_pair_pipeline
from tt_depth_ros.pipelines.pair_dust3r import PairSettings
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.pair.figures import PairFigures
from tt_depth_ros.ros.pair.host import PairHost
from tt_depth_ros.ros.pair.outputs import PairOutputs
from tt_depth_ros.ros.pair.params import DUST3R_MODELS, PAIR_PARAMS
from tt_depth_ros.ros.pair.steps import PairSteps
from tt_depth_ros.ros.pair.stereo import StereoMode
from tt_depth_ros.ros.pair.temporal import TemporalMode
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS, with_defaults
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthImages
from tt_depth_ros.ros.runtime.lifecycle_node import PerceptionLifecycleNode
from tt_depth_ros.ros.runtime.params import ParamSpec
from tt_depth_ros.ros.runtime.params import params_markdown as _params_markdown


class PairNode(PerceptionLifecycleNode):
    """DUSt3R / DA3 any-view stereo and temporal reconstruction node; see the module docstring."""

    COMMON_DEFAULTS = {'model': 'dust3r-vitl-512-dpt'}

    def __init__(self, node_name: str = 'pair_node', **kwargs) -> None:
        """Declare parameters; nothing heavy happens before configure."""
        self.pipeline = None   # pipelines/pair_dust3r.py or pipelines/pair_anyview.py
        self.mode: StereoMode | TemporalMode | None = None
        self.outputs: PairOutputs | None = None
        self.figures = PairFigures()
        self.metric_depth = MetricDepthImages()
        super().__init__(node_name, **kwargs)

    # ---- configuration --------------------------------------------------------------------
    def node_param_specs(self) -> list[ParamSpec]:
        """Pair-node parameters (see README)."""
        return list(PAIR_PARAMS)

    def validate(self) -> list[str]:
        """Cross-parameter checks: model family, network size, scale source per mode."""
        return validate_pair_params(self.params)

    def engine_num_views(self) -> int | None:
        """DA3 any-view models: a two-view engine (temporal: window_size views); else default."""
        return pair_engine_views(self.params)

    def expected_shapes(self) -> list[tuple[int, int]]:
        """Network shape for expected_width x expected_height, if given."""
        self.pipeline = None
        w, h = self.params['expected_width'], self.params['expected_height']
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
        if self.params['scale_source'] == 'depth':
            self.subscribe_metric_depth(self.metric_depth)

    def metric_depth_for(self, stamp_ns: int, wait: bool = True):
        """The metric depth image of this stamp (scale_source=depth); None if it did not come.

        Waits up to metric_depth_wait_s for it, unless `wait` is False.
        """
        if self.params['scale_source'] != 'depth':
            return None
        return self.metric_depth.image_for(
            stamp_ns, self.params['metric_depth_wait_s'] if wait else 0.0)

    def input_qos(self):
        """Input QoS; stereo keeps >= pair_queue_size messages (see the module docstring)."""
        qos = super().input_qos()
        if self.params['mode'] == 'stereo':
            qos.depth = max(qos.depth, self.params['pair_queue_size'])
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
        extra['mode'] = self.params['mode']
        extra['scale_source_configured'] = self.params['scale_source']
        metric = self.params['scale_source'] in METRIC_SOURCES or (
            self.pipeline is not None and self.pipeline.metric_model)
        units = self.pipeline.units if self.pipeline is not None else 'dust3r-units'
        extra['engine'] = self.pipeline.engine_label if self.pipeline is not None else ''
        extra['pose_source'] = self.pipeline.pose_source if self.pipeline is not None else ''
        extra['depth_output'] = ('depth (32FC1 metres)' if metric else
                                 f'depth_unscaled ({units})'
                                 if self.params['publish_unscaled_depth'] else
                                 'none (no metric scale)')
        if self.mode is not None:
            extra.update(self.mode.diagnostics())
        return extra


def validate_pair_params(p: dict) -> list[str]:
    """Cross-parameter errors of pair node values `p` (model family, network size, scale source).

    The node's configure and tt-depth-batch's parameter file check both call this.
    """
    errors = []
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


def pair_engine_views(p: dict) -> int | None:
    """DA3 any-view models: a two-view engine (temporal: window_size views); else None (default)."""
    if p['model'] not in ANYVIEW_PAIR_MODELS:
        return None
    return p['window_size'] if p['mode'] == 'temporal' else 2


def pair_settings(p: dict) -> PairSettings:
    """The pair pipeline's settings from pair node values `p`."""
    return PairSettings(p['network_size'], p['preprocess_mode'], p['conf_threshold'],
                        p['pnp_reproj_px'], p['pnp_iterations'], p['pnp_min_inliers'],
                        p['pnp_min_inlier_ratio'], p['scale_source'], p['baseline_m'],
                        pose_source=p['pose_source'])


class PairWork(NamedTuple):
    """What a configured pair node works with: its pipeline, publishing rules and mode."""

    pipeline: object
    outputs: PairOutputs
    mode: StereoMode | TemporalMode


def pair_work(node: PairHost, engine, figures: PairFigures, metric_for) -> PairWork:
    """The pipeline, outputs and mode of `node`'s parameters on `engine` (configure).

    `node` is the pair node, or tt-depth-batch's offline host of the same interface
    (ros/pair/host.py `PairHost`; tools/batch/pair_host.py): both run this, so both do the same
    per-pair work.
    """
    pipeline = make_pair_pipeline(engine, pair_settings(node.params))
    figures.reset()
    outputs = PairOutputs(node, figures)
    steps = PairSteps(node, pipeline, figures)
    mode = StereoMode if node.params['mode'] == 'stereo' else TemporalMode
    return PairWork(pipeline, outputs, mode(node, steps, outputs, metric_for))


def params_markdown() -> str:
    """The pair node's parameter table in Markdown (README material)."""
    return _params_markdown(with_defaults(COMMON_PARAMS, PairNode.COMMON_DEFAULTS)
                            + list(PAIR_PARAMS))

