"""Parameters every perception node declares (model, backend, QoS, CameraInfo, limits, autostart).

One table, declared by the lifecycle base (ros/runtime/lifecycle_node.py) before the node's own;
`config/depth.yaml` and `config/pair.yaml` mirror the defaults (tests keep them in step).
"""
from __future__ import annotations

import dataclasses

from tt_depth_ros.engines.torch.presets import CHOICES as TORCH_DTYPES
from tt_depth_ros.engines.ttnn.precision import CHOICES as TTNN_PRECISIONS
from tt_depth_ros.ros.runtime.diagnostics import DROP_WINDOW_S
from tt_depth_ros.ros.runtime.inputs.camera_info_sync import CAMERA_INFO_SYNC_PARAMS
from tt_depth_ros.ros.runtime.inputs.rectify_input import RECTIFY_PARAMS
from tt_depth_ros.ros.runtime.params import ParamSpec

COMMON_PARAMS = (
    ParamSpec('model', 'da3metric-large', 'Network to run (engines.factory.build_engine name).'),
    ParamSpec('weights_path', '', 'Explicit weights file; empty = HF cache, then pinned download.'),
    ParamSpec('revision', '', 'Hugging Face revision for the download; empty = pinned default.'),
    ParamSpec('backend', 'auto', 'Inference backend; auto = ttnn, else torch-cuda, else torch-cpu; '
              'onnxruntime (never auto) runs an exported DA3 .onnx given as weights_path.',
              choices=('auto', 'ttnn', 'torch-cuda', 'torch-cpu', 'onnxruntime')),
    ParamSpec('device_id', 0, 'Accelerator index (one process holds one device).',
              int_range=(0, 63)),
    ParamSpec('torch_dtype', 'auto', 'torch-cpu / torch-cuda precision preset '
              '(engines/torch/presets.py; docs/cpu-performance.md "CPU presets"): auto = '
              'cpu-fast on CPUs with native bf16 (AVX-512 BF16 / AMX), else float32; float32 '
              'is exact. The preset '
              "that runs is logged and in diagnostics ('precision'). ttnn takes "
              "ttnn_precision; onnxruntime runs its file as exported.", choices=TORCH_DTYPES),
    ParamSpec('ttnn_precision', 'auto', 'ttnn precision preset (engines/ttnn/precision.py; '
              'docs/ttnn-precision.md "Presets"): auto = the model\'s default (DA3 '
              'fast-hifi3+mask_free_sdpa+block_sharded, depth PCC >= 0.9999; DUSt3R '
              'fast+fused_residual+mask_free_sdpa+rope_kernel+block_sharded); '
              'fast and the measured ports\' '
              'levers (DA3 fast-hifi2, fast-hifi2-bf16-head, fast-all-hifi2; DUSt3R '
              'fast-all-hifi2, fast-lofi-mlp) trade accuracy for speed. In diagnostics as '
              '\'precision\'. The other backends ignore it.', choices=TTNN_PRECISIONS),
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
    ParamSpec('input_depth', 1, 'QoS history depth of inputs (CameraInfo keeps at least 10).',
              int_range=(1, 100)),
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
    """`specs` with the defaults a node overrides (e.g. the pair node's default model)."""
    return [dataclasses.replace(s, default=defaults[s.name]) if s.name in defaults else s
            for s in specs]
