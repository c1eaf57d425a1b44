"""The JSON sidecar of an exported file: what it is, how to feed it, what its outputs mean.

Written by the exporter as `<file stem>.json` beside the model file (`model.onnx` ->
`model.json`) and read by the onnxruntime engine, which takes model, kind, size and the
preprocessing from it instead of guessing them from the graph. Keys (version 1):

* `format` ('onnx' | 'litert'), `model`, `family`, `kind`, `is_metric`, `dtype` ('fp32' | 'fp16').
* `input`: name, shape ([1, 3, H, W] NCHW for ONNX, [1, H, W, 3] NHWC for LiteRT), dtype float32,
  layout; `size_hw` [H, W].
* `preprocessing`: resize rule, scale 1/255, ImageNet mean/std, the formula.
* `outputs`: [{name, shape, units, meaning}]; `metric_scale`: the focal/300 rule (metric models).
* `weights`: file name and SHA-256; `file_sha256` of the exported file itself.
* `exporter`: exporter kind, resize mode, operator inventory (op type -> count); ONNX: opset;
  LiteRT: weights dtype, conversion time, size in MB. `versions`: torch, the converter and runtime
  packages, this package.
* `gpu_delegate_check` (LiteRT): the static mobile-GPU check (engines/export/tflite_ops.py).
* `parity`: figures measured at export against the torch-cpu fp32 engine on the same input.
"""
from __future__ import annotations

import json
from pathlib import Path

SIDECAR_VERSION = 1
REQUIRED = ('format', 'model', 'kind', 'size_hw', 'input', 'outputs', 'preprocessing', 'dtype')
METRIC_SCALE = ('metres = depth * ((fx + fy) / 2) / 300, with fx, fy the focal lengths in pixels '
                'of the camera intrinsics scaled to the network input size (H x W)')


def sidecar_path(model_file: str | Path) -> Path:
    """`model.onnx` -> `model.json` (same folder, same stem)."""
    return Path(model_file).with_suffix('.json')


FORMAT_SUFFIX = {'onnx': '.onnx', 'litert': '.tflite'}


def check_sidecar_free(model_file: str | Path, fmt: str) -> None:
    """ValueError when `<stem>.json` already describes another format's file beside it.

    `model.onnx` and `model.tflite` would share `model.json`: the second export would overwrite
    the first file's sidecar, so it is refused before any work, naming the file to pick instead.
    """
    path = sidecar_path(model_file)
    if not path.is_file():
        return
    try:
        other = json.loads(path.read_text()).get('format')
    except (json.JSONDecodeError, AttributeError):
        return
    twin = Path(model_file).with_suffix(FORMAT_SUFFIX.get(other, '.none'))
    if other != fmt and twin.is_file():
        raise ValueError(f'{path} is the sidecar of {twin} ({other}); a {fmt} export to '
                         f'{model_file} would overwrite it: give --out another name, e.g. '
                         f'{Path(model_file).with_name(Path(model_file).stem + "_" + fmt)}'
                         f'{Path(model_file).suffix}')


def write_sidecar(model_file: str | Path, data: dict) -> Path:
    """Write `data` (plus the sidecar version) beside `model_file`; returns the path."""
    path = sidecar_path(model_file)
    path.write_text(json.dumps({'sidecar_version': SIDECAR_VERSION, **data}, indent=2) + '\n')
    return path


def read_sidecar(model_file: str | Path) -> dict:
    """The sidecar of `model_file`; ValueError saying what is missing and how to make it."""
    path = sidecar_path(model_file)
    if not path.is_file():
        raise ValueError(f'{model_file}: no sidecar {path} beside it. The onnxruntime backend '
                         'reads model, size and preprocessing from the JSON that `tt-depth '
                         'export` writes next to the .onnx file; export again or copy it along.')
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f'{path}: not valid JSON ({e})') from e
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f'{path}: sidecar lacks {missing}; export the file again with '
                         '`tt-depth export`')
    if data.get('sidecar_version') != SIDECAR_VERSION:
        raise ValueError(f'{path}: sidecar version {data.get("sidecar_version")!r}, this build '
                         f'reads version {SIDECAR_VERSION}; export the file again')
    return data
