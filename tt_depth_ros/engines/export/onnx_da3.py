"""Export a DA3 network to ONNX at one fixed size, check it, and measure its parity at export.

Steps of `export_da3_onnx`: weights (file or state dict, as the torch engine resolves them) ->
the torch-cpu fp32 engine as the reference -> the same network with its export-friendly forward
(`DA3Model.set_export`: size-only tensors become constants, no index-assign) at fp32 or fp16 ->
one warm-up forward at the export size (fills the per-size constants) -> `torch.onnx.export`
(opset >= 17; the TorchScript exporter by default, the dynamo exporter on request) -> the ONNX
checker -> the onnxruntime engine (CPU EP) and the torch engine on the same uint8 export input ->
PCC and errors per output, each against its tolerance (graph.TOLERANCES), into the sidecar
(engines/export/sidecar.py); `parity['passed']` needs the depth PCC gate and every output within
its tolerance.

The graph takes the normalised image (1, 3, H, W) float32 and returns the torch engine's outputs
with a batch axis of 1 (fp16 files cast inside, so their inputs and outputs stay float32). Bilinear
resizes keep `align_corners=True` (ONNX Resize `align_corners` mode, exact in onnxruntime). A NESTED
graph returns its two branches' outputs; the metric alignment (data-dependent masks and
quantiles) runs on the host in the onnxruntime engine. A model past protobuf's 2 GB limit keeps
its tensors in one `<name>.onnx.data` beside the file.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional

import torch

from tt_depth_ros.engines.export.graph import (
    EXPORT_DTYPES,
    EXPORT_KINDS,
    EXPORT_SEED,
    ONNX_KINDS,
    ExportGraph,
    check_model,
    check_size,
    export_input,
    export_net,
    load_weights,
    outputs,
    package_version,
    parity,
    parity_passed,
    reference_outputs,
    sidecar_common,
)
from tt_depth_ros.engines.export.sidecar import check_sidecar_free, write_sidecar
from tt_depth_ros.engines.onnxruntime.engine import DEFAULT_PROVIDER, OnnxRuntimeEngine
from tt_depth_ros.engines.weights import sha256_file
from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize
from tt_depth_ros.models.kind import ModelKind

__all__ = ['EXPORT_DTYPES', 'EXPORT_KINDS', 'PCC_GATE', 'export_da3_onnx', 'export_input',
           'parity']
MIN_OPSET = 17
DEFAULT_OPSET = 18
EXPORTERS = ('torchscript', 'dynamo')
PCC_GATE = 0.9999
"""Depth PCC an fp32 file must reach against the torch fp32 engine (the edge-export ONNX gate)."""
INPUT_NAME = 'image'


def _require_converters(exporter: str) -> None:
    """ValueError naming the missing package when the export cannot run here."""
    import importlib.util

    need = ['onnx', 'onnxruntime'] + (['onnxscript'] if exporter == 'dynamo' else [])
    missing = []
    for name in need:
        try:
            found = importlib.util.find_spec(name) is not None
        except ValueError:   # a module set to None in sys.modules
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise ValueError(f'the ONNX export needs the Python package(s) {", ".join(missing)}: '
                         f'pip install {" ".join(missing)} (requirements/common.txt pins them; '
                         'scripts/bootstrap.sh installs them)')


def _versions() -> dict:
    import onnx
    import onnxruntime

    return {'torch': torch.__version__, 'onnx': onnx.__version__,
            'onnxruntime': onnxruntime.__version__, 'tt_depth_ros': package_version()}


def external_data_path(out: Path) -> Path:
    """Where a large model's weights go beside `out`: one `<name>.data` file."""
    return out.with_name(out.name + '.data')


def _place(onnx, raw: Path, out: Path):
    """Move the exporter's file to `out`; its weights in one `<name>.data` file if it made many.

    torch.onnx writes a model whose protobuf would pass 2 GB with one external-data file per
    tensor next to it (hundreds for DA3METRIC-LARGE); onnxruntime reads the consolidated form
    from the model's folder just the same. Returns the loaded model (weights in memory).
    """
    proto = onnx.load(str(raw))     # external tensors are read into memory here
    for stale in (out, external_data_path(out)):
        stale.unlink(missing_ok=True)
    if any(p != raw for p in raw.parent.iterdir()):
        onnx.save_model(proto, str(out), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=external_data_path(out).name,
                        size_threshold=1024, convert_attribute=True)   # Constant nodes too
        external_data_path(out).chmod(out.stat().st_mode & 0o777)   # onnx writes it 0600
    else:
        shutil.move(str(raw), str(out))
    return proto


def export_da3_onnx(model: str, size: tuple[int, int], out: str | Path, *, dtype: str = 'fp32',
                    weights: Optional[str] = None, revision: Optional[str] = None,
                    state_dict: Optional[Mapping[str, Any]] = None, opset: int = DEFAULT_OPSET,
                    exporter: str = 'torchscript', accept_license: Optional[bool] = None,
                    logger: Optional[Any] = None, config: Any = None) -> dict:
    """Write `out` (.onnx) and its sidecar; return the sidecar dict (with the parity figures).

    Args:
        model: A DA3 name of engines/registry.MODELS. NESTED: the graph is its two branches;
            the onnxruntime engine runs the metric alignment on the host (the torch code).
        size: (H, W), positive multiples of 14 (engines/export/size.parse_size).
        out: Output file, ending in .onnx; the sidecar goes beside it (`<stem>.json`).
        dtype: 'fp32' or 'fp16' (the backbone's weights and activations, as the torch engine's
            reduced precision; heads stay fp32; inputs / outputs are float32).
        weights: Weights file (else HF cache / pinned download, as the torch engine).
        revision: Hub revision for resolution.
        state_dict: Checkpoint tensors instead of a file (tests); the weight hash is then of them.
        opset: ONNX opset, >= 17.
        exporter: 'torchscript' (torch.onnx.export dynamo=False) or 'dynamo'.
        accept_license: Opt-in for CC-BY-NC-4.0 checkpoints (engines/licence.py).
        logger: Anything with `.info(str)`.
        config: Model config override of the torch builders (tests: tiny dimensions).

    Raises:
        ValueError: A bad argument or a model this export cannot take, with what to do.
    """
    spec = check_model(model, 'ONNX', ONNX_KINDS)
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f'dtype={dtype!r}; allowed: {EXPORT_DTYPES}')
    if exporter not in EXPORTERS:
        raise ValueError(f'exporter={exporter!r}; allowed: {EXPORTERS}')
    if int(opset) < MIN_OPSET:
        raise ValueError(f'opset {opset} < {MIN_OPSET}: export needs opset {MIN_OPSET} or later')
    _require_converters(exporter)
    out = Path(out)
    if out.suffix != '.onnx':
        raise ValueError(f'--out {out}: the ONNX file name must end in .onnx')
    h, w = check_size(size)
    check_sidecar_free(out, 'onnx')
    log = logger.info if logger is not None else (lambda _m: None)
    state, weights_info = load_weights(model, weights, revision, state_dict)
    image = export_input(h, w)
    ref = reference_outputs(model, state, image, accept_license, config)
    net = export_net(model, state, torch.float16 if dtype == 'fp16' else torch.float32,
                     accept_license, config)
    names = [o['name'] for o in outputs(spec.kind, h, w)]
    graph = ExportGraph(net, names).eval()
    x = torch.from_numpy(normalize(image)[None])
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f'exporting {model} {h}x{w} {dtype} to {out} (opset {opset}, {exporter})')
    import warnings

    import onnx
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f'.{out.stem}-export-') as tmp:
        raw = Path(tmp) / out.name
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter('ignore')   # tracer notes on the fixed-size python ints
            graph(x)                          # fills the per-size constants (set_export)
            kw = dict(input_names=[INPUT_NAME], output_names=names, opset_version=int(opset))
            if exporter == 'dynamo':
                torch.onnx.export(graph, (x,), str(raw), dynamo=True, external_data=False,
                                  **kw)
            else:
                torch.onnx.export(graph, (x,), str(raw), dynamo=False,
                                  do_constant_folding=True, **kw)
        proto = _place(onnx, raw, out)
    onnx.checker.check_model(str(out), full_check=True)   # by path: > 2 GB models too
    ops: dict[str, int] = {}
    for node in proto.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    data = {
        **sidecar_common('onnx', spec, dtype, h, w,
                         {'name': INPUT_NAME, 'shape': [1, 3, h, w], 'dtype': 'float32',
                          'layout': 'NCHW, RGB'}, weights_info),
        'exporter': {'kind': exporter, 'opset': int(opset),
                     'resize_mode': 'bilinear align_corners=True (ONNX Resize '
                                    'coordinate_transformation_mode=align_corners); exact',
                     'operators': dict(sorted(ops.items()))},
        'versions': _versions(),
    }
    if spec.kind is ModelKind.NESTED:
        data['host_postprocess'] = (
            'models/da3/nested_align.align_to_metric on the outputs (the onnxruntime engine '
            'runs it): one least-squares scale from the confident non-sky pixels, metric depth '
            'focal-scaled with the estimated intrinsics, sky filled; masks and quantiles of '
            'data-dependent size, so not in the fixed-shape graph')
    data['file_sha256'] = sha256_file(out)
    if external_data_path(out).is_file():
        data['external_data'] = {'file': external_data_path(out).name,
                                 'sha256': sha256_file(external_data_path(out))}
    write_sidecar(out, data)
    try:
        engine = OnnxRuntimeEngine(out, provider=DEFAULT_PROVIDER, model=model)
        ours = engine.infer(image)
        engine.close()
        figures = parity(ours, ref, dtype)
        par = {'reference': 'torch-cpu fp32 engine on the same uint8 input',
               'input': f'export_input({h}, {w}): seeded synthetic image (seed {EXPORT_SEED})',
               'provider': DEFAULT_PROVIDER, 'outputs': figures, 'depth_pcc_gate': PCC_GATE,
               'passed': parity_passed(figures, PCC_GATE)}
    except Exception as e:  # noqa: BLE001 (e.g. an fp16 kernel the CPU EP lacks): recorded
        par = {'error': f'{type(e).__name__}: {e}', 'passed': False}
    data = {**data, 'parity': par}
    write_sidecar(out, data)
    log(f'wrote {out} and its sidecar; parity: {par}')
    return data
