"""Parameters of the pair node (ros/pair/node.py): one table, its values type, what they imply.

The common ones (model, backend, QoS, camera_info_mode, autostart, ...) come first
(ros/runtime/common_params.py, with DUSt3R as the default model), then the pair node's own.
`PairParams` is the frozen values type generated from the whole table; `config/pair.yaml`
mirrors the defaults (a test keeps them in step). The node's configure and tt-depth-batch's
parameter-file check both call the functions here.
"""
from __future__ import annotations

from tt_depth_ros.engines import registry
from tt_depth_ros.geometry.pointmap.scale import SOURCES
from tt_depth_ros.geometry.pose.keyframes import KeyframePolicy
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.pair_anyview import ANYVIEW_PAIR_MODELS
from tt_depth_ros.pipelines.pair_dust3r import PairSettings
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS, with_defaults
from tt_depth_ros.ros.runtime.params import ParamSpec, params_type
from tt_depth_ros.ros.runtime.params import params_markdown as _params_markdown

DUST3R_MODELS = registry.names(family='dust3r')

PAIR_PARAMS = (
    ParamSpec('mode', 'stereo', "'stereo' (two cameras, paired by stamp) or 'temporal' (one "
              'camera against keyframes).', choices=('stereo', 'temporal')),
    ParamSpec('network_size', 512, 'Long side of the DUSt3R input (multiple of 16; 512 for the '
              'released checkpoint); DA3 any-view models: process_res (snapped to 14s).',
              int_range=(64, 2048)),
    ParamSpec('preprocess_mode', 'crop', "'crop' (upstream centre crop) or 'pad' (letterbox).",
              choices=('crop', 'pad')),
    ParamSpec('expected_width', 0, 'Camera width to prepare the engine for at configure; 0 = '
              'first frame.', int_range=(0, 16384)),
    ParamSpec('expected_height', 0, 'Camera height to prepare at configure; 0 = first frame.',
              int_range=(0, 16384)),
    ParamSpec('pair_tolerance_s', 0.01, 'Stereo: largest stamp difference of one pair, seconds.',
              float_range=(0.0, 10.0)),
    ParamSpec('pair_queue_size', 5, 'Stereo: frames kept per camera while waiting for a partner.',
              int_range=(1, 100)),
    ParamSpec('conf_threshold', 3.0, 'Confidence above which a pixel is used (DUSt3R upstream 3; '
              'DA3 confidence is >= 1 too).',
              float_range=(1.0, 1e6), runtime=True),
    ParamSpec('pnp_reproj_px', 5.0, 'RANSAC inlier threshold, network pixels (upstream 5).',
              float_range=(0.1, 100.0)),
    ParamSpec('pnp_iterations', 100, 'RANSAC iterations (upstream 100).', int_range=(1, 100000)),
    ParamSpec('pnp_min_inliers', 50, 'Fewer PnP inliers: no pose, no TF for that pair.',
              int_range=(4, 1 << 24)),
    ParamSpec('pnp_min_inlier_ratio', 0.1, 'Smaller inlier fraction: no pose, no TF.',
              float_range=(0.0, 1.0)),
    ParamSpec('pose_source', 'auto', "Camera-2 pose: 'auto' = DUSt3R: PnP on its pointmap, DA3 "
              "any-view: the camera decoder; 'camera_decoder' (DA3 any-view only); 'pnp' = "
              'DA3 any-view: PnP-RANSAC on the ray head\'s points with the CameraInfo K (the '
              'pnp_* parameters apply).', choices=('auto', 'camera_decoder', 'pnp')),
    ParamSpec('scale_source', 'none', "'none' (DUSt3R units), 'baseline' (stereo: "
              "baseline_m / |t|) or 'depth' (median ratio to metric_depth of the reference view).",
              choices=SOURCES),
    ParamSpec('baseline_m', 0.0, 'Stereo baseline in metres (scale_source=baseline).',
              float_range=(0.0, 1e3)),
    ParamSpec('metric_depth_wait_s', 0.5, "scale_source=depth: how long the worker waits for the "
              'metric depth image with the reference stamp.', float_range=(0.0, 10.0)),
    ParamSpec('publish_unscaled_depth', False, 'Without a metric scale, publish DUSt3R-unit depth '
              "on 'depth_unscaled' (never on 'depth').", runtime=True),
    ParamSpec('output_resolution', 'camera', "'camera': depth, depth2 and confidence at the "
              'camera image size (NaN where the network crop saw nothing; CameraInfo of the '
              "camera); 'network': the network grid (CameraInfo mapped to it).",
              choices=('camera', 'network'), runtime=True),
    ParamSpec('publish_depth2', False, "Stereo: also publish camera 2's depth on 'depth2'.",
              runtime=True),
    ParamSpec('publish_confidence', False, "Publish the DUSt3R confidence (32FC1, >= 1) on "
              "'confidence'.", runtime=True),
    ParamSpec('publish_tf', 'auto', "/tf (tf2 QoS): 'auto' = only poses in metres (a metric "
              "scale_source; REP 103), 'always' = also unscaled poses, to the child frame "
              "'<child>_unscaled', 'never'.", choices=('auto', 'always', 'never'),
              runtime=True),
    ParamSpec('tf_parent_frame', '', "TF/pose parent; '' = camera 1's frame_id (stereo) or "
              "'dust3r_odom' (temporal).", runtime=True),
    ParamSpec('tf_child_frame', '', "TF child; '' = <camera frame_id>_dust3r (a new frame, so "
              'no existing frame gets a second parent).', runtime=True),
    ParamSpec('robot_base_frame', '', "Temporal: publish odom_frame -> this frame (e.g. "
              "'base_link', REP 105) from the camera mounting on /tf_static and /tf instead of "
              "the camera trajectory; needs scale_source='depth' (metres). '' = off."),
    ParamSpec('odom_frame', 'odom', 'Temporal with robot_base_frame: the odom frame name '
              '(fixed at the base pose of the first keyframe).'),
    ParamSpec('publish_extrinsic_static', False, 'Stereo: also publish the measured camera-2 '
              'pose (metres only) on /tf_static, same frame names as the TF, whenever it moves '
              'by more than 1 mm or 0.05 deg.', runtime=True),
    ParamSpec('publish_path', False, "Temporal: publish the trajectory on 'path'.", runtime=True),
    ParamSpec('path_max_poses', 1000, 'Longest published path (oldest poses dropped).',
              int_range=(1, 1000000), runtime=True),
    ParamSpec('keyframe_every_n', 10, 'Temporal: new keyframe after this many frames (0 = off).',
              int_range=(0, 1000000)),
    ParamSpec('keyframe_max_rotation_deg', 15.0, 'Temporal: new keyframe beyond this rotation.',
              float_range=(0.0, 180.0)),
    ParamSpec('window_size', 2, 'Temporal, DA3 any-view models: views per forward = the frame, '
              'the current keyframe and up to window_size - 2 earlier keyframes (2 = pairs).',
              int_range=(2, 16)),
    ParamSpec('keyframe_max_translation', 0.0, 'Temporal: new keyframe beyond this translation '
              '(trajectory units; 0 = off).', float_range=(0.0, 1e6)),
)

PAIR_NODE_PARAMS = tuple(with_defaults(COMMON_PARAMS, {'model': 'dust3r-vitl-512-dpt'})) \
    + PAIR_PARAMS
"""The pair node's whole table: the common parameters (its own default model), then its own."""
PairParams = params_type('PairParams', PAIR_NODE_PARAMS, __name__)


def declared_kind(p: PairParams) -> ModelKind | None:
    """The kind of model `p` selects: the registry's; None when it is known only once built.

    An engine plugin supplies its own engine, whose kind is what it reports (the node runs
    `check_pair_kind` on it after the build); an unknown name fails in the engine build.
    """
    if p.engine_plugin:
        return None
    if p.model not in registry.MODELS:
        return None     # the engine build names the unknown model
    return registry.model(p.model).kind


def check_pair_kind(p: PairParams, kind: ModelKind) -> list[str]:
    """Errors of pair node values `p` with a model of `kind` (the registry's or the engine's)."""
    errors = []
    if kind is not ModelKind.POINTMAP and not kind.multi_view:
        errors.append(f"model={p.model!r} ({kind.value}) is not a pair model; use one of "
                      f'{list(DUST3R_MODELS + ANYVIEW_PAIR_MODELS)} '
                      '(e.g. -p model:=dust3r-vitl-512-dpt)')
        return errors
    if p.network_size % 16 and kind is ModelKind.POINTMAP:
        errors.append(f"network_size={p.network_size} must be a multiple of 16")
    if p.window_size > 2 and not kind.multi_view:
        errors.append(f"window_size={p.window_size} needs a DA3 any-view model "
                      f'({list(ANYVIEW_PAIR_MODELS)})')
    if p.pose_source == 'camera_decoder' and not kind.multi_view:
        errors.append("pose_source='camera_decoder' needs a DA3 any-view engine (model one of "
                      f'{list(ANYVIEW_PAIR_MODELS)}); DUSt3R has no camera decoder, its '
                      "pose is always PnP ('auto' or 'pnp')")
    return errors


def validate_pair_params(p: PairParams) -> list[str]:
    """Cross-parameter errors of pair node values `p` (mode, scale source, sizes, model kind).

    The node's configure and tt-depth-batch's parameter file check both call this; a model from
    an engine plugin is checked on the built engine's kind (`check_pair_kind`).
    """
    kind = declared_kind(p)
    errors = [] if kind is None else check_pair_kind(p, kind)
    if p.scale_source == 'baseline':
        if p.mode != 'stereo':
            errors.append("scale_source='baseline' needs mode='stereo' (a fixed rig)")
        if p.baseline_m <= 0:
            errors.append("scale_source='baseline' needs baseline_m > 0 (metres)")
    if p.robot_base_frame and (p.mode != 'temporal' or p.scale_source != 'depth'):
        errors.append("robot_base_frame needs mode='temporal' and scale_source='depth' "
                      '(the camera mounting is in metres, the trajectory must be too)')
    if p.window_size > 2 and p.mode != 'temporal':
        errors.append(f"window_size={p.window_size} needs mode='temporal'")
    if bool(p.expected_width) != bool(p.expected_height):
        errors.append('expected_width and expected_height must both be 0 or both be set')
    try:
        KeyframePolicy(p.keyframe_every_n, p.keyframe_max_rotation_deg,
                       p.keyframe_max_translation)
    except ValueError as exc:
        errors.append(str(exc))
    return errors


def pair_engine_views(p: PairParams) -> int | None:
    """DA3 any-view models: a two-view engine (temporal: window_size views); else None (default)."""
    if p.model not in ANYVIEW_PAIR_MODELS:
        return None
    return p.window_size if p.mode == 'temporal' else 2


def pair_settings(p: PairParams) -> PairSettings:
    """The pair pipeline's settings from pair node values `p`."""
    return PairSettings(p.network_size, p.preprocess_mode, p.conf_threshold,
                        p.pnp_reproj_px, p.pnp_iterations, p.pnp_min_inliers,
                        p.pnp_min_inlier_ratio, p.scale_source, p.baseline_m,
                        pose_source=p.pose_source)


def params_markdown() -> str:
    """The pair node's parameter table in Markdown (README material)."""
    return _params_markdown(PAIR_NODE_PARAMS)

