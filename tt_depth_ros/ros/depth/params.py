"""Parameters of the depth node (ros/depth/node.py): one table, its values type, what they imply.

The common ones (model, backend, QoS, camera_info_mode, autostart, ...) come first
(ros/runtime/common_params.py), then the depth node's own, the compressedDepth ones and those of
the DA3 kinds beyond the metric model. `DepthParams` is the frozen values type generated from
the whole table; `config/depth.yaml` mirrors the defaults (a test keeps them in step). The node's
configure and tt-depth-batch's parameter-file check both call the functions here.
"""
from __future__ import annotations

from tt_depth_ros.geometry.depth.metric_depth import SKY_MODES
from tt_depth_ros.models.da3.config import SKY_THRESHOLD
from tt_depth_ros.pipelines.depth import FrameOptions
from tt_depth_ros.ros.depth.cameras_param import parse_cameras
from tt_depth_ros.ros.depth.compressed_params import COMPRESSED_DEPTH_PARAMS
from tt_depth_ros.ros.depth.family_params import FAMILY_DEPTH_PARAMS
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS
from tt_depth_ros.ros.runtime.params import ParamSpec, params_type
from tt_depth_ros.ros.runtime.params import params_markdown as _params_markdown

DEPTH_PARAMS = (
    ParamSpec('cameras', (), "Cameras this node serves from its one engine "
              "(ros/depth/cameras_param.py): [] = one camera on 'image' / 'camera_info' with "
              "outputs beside them; else one entry per camera, a namespace ('/front': "
              "/front/image, /front/camera_info, outputs /front/depth ...) or "
              "'image=/T,camera_info=/T[,ns=/NS][,size=WxH][,priority=N][,max_rate_hz=F]"
              "[,transport=raw|compressed]'."),
    ParamSpec('batch_frames', False, 'Several cameras: the same-size frames the cameras have '
              'waiting go through one forward on an engine that batches (torch, single-view '
              'DA3). Equal to one-at-a-time within float rounding, not byte for byte; false '
              '= one frame per forward.'),
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
    ParamSpec('sky_threshold', SKY_THRESHOLD, 'Sky score at or above which a pixel is sky '
              '(upstream 0.3).',
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

DEPTH_NODE_PARAMS = COMMON_PARAMS + DEPTH_PARAMS
"""The depth node's whole table: the common parameters, then its own."""
DepthParams = params_type('DepthParams', DEPTH_NODE_PARAMS, __name__)


def validate_depth_params(p: DepthParams) -> list[str]:
    """Cross-parameter errors of depth node values `p` (network and expected sizes both-or-neither).

    The node's configure and tt-depth-batch's parameter file check both call this.
    """
    nh, nw = p.network_height, p.network_width
    errors = []
    if (nh == 0) != (nw == 0):
        errors.append('network_height and network_width must both be 0 or both be set')
    elif nh and (nh % 14 or nw % 14):
        errors.append(f'network size {nh}x{nw} must be multiples of 14')
    if bool(p.expected_width) != bool(p.expected_height):
        errors.append('expected_width and expected_height must both be 0 or both be set')
    try:
        parse_cameras(p.cameras)
    except ValueError as exc:
        errors.append(str(exc))
    return errors


def depth_frame_options(p: DepthParams, is_metric: bool) -> FrameOptions:
    """The DA3 frame path's options from depth node values `p` (the node and tt-depth-batch)."""
    fixed = (p.network_height, p.network_width)
    return FrameOptions(process_res=p.process_res, fixed_size=fixed if fixed[0] else None,
                        sky_mode=p.sky_mode, sky_threshold=p.sky_threshold,
                        max_depth_m=(p.max_depth_m or None) if is_metric else None,
                        output=p.output_resolution, nested_focal_rescale=True)


def params_markdown() -> str:
    """The depth node's parameter table in Markdown (README material)."""
    return _params_markdown(DEPTH_NODE_PARAMS)

