"""Export a DA3 network to ONNX at one fixed size, check it, and measure its parity at export.

Steps of `export_da3_onnx`: weights (file or state dict, as the torch engine resolves them) ->
the torch-cpu fp32 engine as the reference -> the same network with its export-friendly forward
(`DA3Model.set_export`: size-only tensors become constants, no index-assign) at fp32 or fp16 ->
one warm-up forward at the export size (fills the per-size constants) -> `torch.onnx.export`
(opset >= 17; the TorchScript exporter by default, the dynamo exporter on request) -> the ONNX
checker -> the onnxruntime engine (CPU EP) and the torch engine on the same uint8 export input ->
PCC and errors per output into the sidecar (engines/export/sidecar.py).

The graph takes the normalised image (1, 3, H, W) float32 and returns the torch engine's outputs
with a batch axis of 1 (fp16 files cast inside, so their inputs and outputs stay float32). Bilinear
resizes keep `align_corners=True` (ONNX Resize `align_corners` mode, exact in onnxruntime). NESTED
is refused: its metric alignment step is not part of this export.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import torch
from torch import nn

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.export.sidecar import METRIC_SCALE, write_sidecar
from tt_depth_ros.engines.onnxruntime.engine import DEFAULT_PROVIDER, OnnxRuntimeEngine
from tt_depth_ros.engines.torch.da3 import build_model, build_torch_engine
from tt_depth_ros.engines.weights import read_state_dict, resolve_weights, sha256_file
from tt_depth_ros.geometry.preprocess.da3_preprocess import IMAGENET_MEAN, IMAGENET_STD, normalize

MIN_OPSET = 17
DEFAULT_OPSET = 18
DTYPES = ('fp32', 'fp16')
EXPORTERS = ('torchscript', 'dynamo')
PCC_GATE = 0.9999
"""Depth PCC an fp32 file must reach against the torch fp32 engine (the edge-export ONNX gate)."""
INPUT_NAME = 'image'
EXPORT_KINDS = ('metric', 'mono', 'anyview')
"""DA3 kinds the ONNX export takes (NESTED is refused, module docstring)."""
EXPORT_SEED = 0


def _outputs(kind: str, h: int, w: int) -> list[dict]:
    """Output names, shapes and units of an exported file of `kind`."""
    if kind in ('metric', 'mono'):
        depth = ('raw depth (exp of the logit), NOT metres: apply metric_scale'
                 if kind == 'metric' else 'relative depth (no unit, scale unknown)')
        return [{'name': 'depth', 'shape': [1, h, w], 'units': 'raw' if kind == 'metric'
                 else 'relative', 'meaning': depth},
                {'name': 'sky', 'shape': [1, h, w], 'units': 'score',
                 'meaning': 'relu sky score; sky where >= 0.3 (upstream threshold)'}]
    return [{'name': 'depth', 'shape': [1, h, w], 'units': 'relative',
             'meaning': 'relative depth (no unit, scale unknown)'},
            {'name': 'conf', 'shape': [1, h, w], 'units': 'score',
             'meaning': 'depth confidence (exp + 1)'},
            {'name': 'intrinsics', 'shape': [1, 3, 3], 'units': 'pixels',
             'meaning': 'estimated pinhole K at the network input size H x W'},
            {'name': 'extrinsics', 'shape': [1, 3, 4], 'units': 'relative',
             'meaning': 'estimated world-to-camera [R | t] (t in the relative depth unit)'}]


class _ExportGraph(nn.Module):
    """What torch.onnx traces: normalised float32 image -> the engine's outputs, batch 1."""

    def __init__(self, net: nn.Module, names: list[str]) -> None:
        super().__init__()
        self.net = net
        self.names = names

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.net(x)   # casts to the backbone dtype itself
        pick = {'depth': out['depth'], 'sky': out.get('sky'), 'conf': out.get('depth_conf'),
                'intrinsics': out.get('intrinsics'), 'extrinsics': out.get('extrinsics')}
        return tuple(pick[n].to(torch.float32) for n in self.names)


def export_input(h: int, w: int) -> np.ndarray:
    """The deterministic uint8 RGB image (seeded) that the export traces and measures parity on."""
    rng = np.random.RandomState(EXPORT_SEED)
    coarse = rng.randint(0, 256, size=(h // 14 + 1, w // 14 + 1, 3)).astype(np.float32)
    smooth = np.kron(coarse, np.ones((14, 14, 1), np.float32))[:h, :w]
    noise = rng.randint(-24, 25, size=(h, w, 3))
    return np.clip(smooth + noise, 0, 255).astype(np.uint8)


def pcc(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two arrays (1.0 for identical constant arrays)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if np.array_equal(a, b):
        return 1.0
    return float(np.corrcoef(a, b)[0, 1])


def parity(ours: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict:
    """Per output: PCC, max |diff| and max |diff| / max |ref| against the reference maps."""
    out = {}
    for name, r in ref.items():
        o = ours[name]
        diff = float(np.max(np.abs(o.astype(np.float64) - r)))
        scale = float(np.max(np.abs(r))) or 1.0
        out[name] = {'pcc': round(pcc(o, r), 9), 'max_abs': diff, 'max_rel': diff / scale}
    return out


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

    try:
        from importlib.metadata import version
        pkg = version('tt_depth_ros')
    except Exception:  # noqa: BLE001 (not installed as a distribution: source tree)
        pkg = 'source tree'
    return {'torch': torch.__version__, 'onnx': onnx.__version__,
            'onnxruntime': onnxruntime.__version__, 'tt_depth_ros': pkg}


def export_da3_onnx(model: str, size: tuple[int, int], out: str | Path, *, dtype: str = 'fp32',
                    weights: Optional[str] = None, revision: Optional[str] = None,
                    state_dict: Optional[Mapping[str, Any]] = None, opset: int = DEFAULT_OPSET,
                    exporter: str = 'torchscript', accept_license: Optional[bool] = None,
                    logger: Optional[Any] = None) -> dict:
    """Write `out` (.onnx) and its sidecar; return the sidecar dict (with the parity figures).

    Args:
        model: A DA3 name of engines/registry.MODELS (not NESTED).
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

    Raises:
        ValueError: A bad argument or a model this export cannot take, with what to do.
    """
    spec = registry.model(model)
    if spec.family != 'da3':
        raise ValueError(f'{model!r} is not a DA3 model; the ONNX export takes '
                         f'{", ".join(registry.names(family="da3", kinds=EXPORT_KINDS))}')
    if spec.kind not in EXPORT_KINDS:
        raise ValueError(f'{model!r} ({spec.kind}) cannot be exported: its metric alignment '
                         'step (NESTED) is not part of the export; export the any-view or '
                         'metric model instead')
    if dtype not in DTYPES:
        raise ValueError(f'dtype={dtype!r}; allowed: {DTYPES}')
    if exporter not in EXPORTERS:
        raise ValueError(f'exporter={exporter!r}; allowed: {EXPORTERS}')
    if int(opset) < MIN_OPSET:
        raise ValueError(f'opset {opset} < {MIN_OPSET}: export needs opset {MIN_OPSET} or later')
    _require_converters(exporter)
    out = Path(out)
    if out.suffix != '.onnx':
        raise ValueError(f'--out {out}: the ONNX file name must end in .onnx')
    h, w = (int(v) for v in size)
    if h < 14 or w < 14 or h % 14 or w % 14:
        raise ValueError(f'size {h}x{w}: both sides must be positive multiples of 14')
    log = logger.info if logger is not None else (lambda _m: None)
    if state_dict is None:
        path = resolve_weights(model, weights, revision)
        weights_info = {'file': path.name, 'sha256': sha256_file(path)}
        state_dict = read_state_dict(path)
    else:
        digest = hashlib.sha256()
        for k in sorted(state_dict):
            digest.update(k.encode())
            digest.update(np.ascontiguousarray(np.asarray(state_dict[k])).tobytes())
        weights_info = {'file': None, 'sha256': digest.hexdigest(),
                        'note': 'state dict given in memory: SHA-256 over sorted key names and '
                                'raw tensor bytes'}
    state = {k: torch.as_tensor(np.asarray(v)) if not isinstance(v, torch.Tensor) else v
             for k, v in state_dict.items()}
    image = export_input(h, w)
    ref_engine = build_torch_engine(model, state_dict=state, accept_license=accept_license)
    ref = ref_engine.infer(image)
    ref_engine.close()
    net = build_model(model, state_dict=state, accept_license=accept_license)
    # fp16: the backbone only; heads and camera decoder stay fp32, as the torch engine runs them
    net.set_fused(True).cast_backbone(torch.float16 if dtype == 'fp16' else torch.float32)
    net.set_export(True)
    outputs = _outputs(spec.kind, h, w)
    names = [o['name'] for o in outputs]
    graph = _ExportGraph(net, names).eval()
    x = torch.from_numpy(normalize(image)[None])
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f'exporting {model} {h}x{w} {dtype} to {out} (opset {opset}, {exporter})')
    import warnings

    import onnx
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter('ignore')   # tracer notes on the fixed-size python ints
        graph(x)                          # fills the per-size constants (set_export)
        kw = dict(input_names=[INPUT_NAME], output_names=names, opset_version=int(opset))
        if exporter == 'dynamo':
            torch.onnx.export(graph, (x,), str(out), dynamo=True, external_data=False, **kw)
        else:
            torch.onnx.export(graph, (x,), str(out), dynamo=False, do_constant_folding=True,
                              **kw)
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    ops: dict[str, int] = {}
    for node in proto.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    data = {
        'format': 'onnx', 'model': model, 'family': spec.family, 'kind': spec.kind,
        'is_metric': spec.is_metric, 'dtype': dtype, 'size_hw': [h, w],
        'input': {'name': INPUT_NAME, 'shape': [1, 3, h, w], 'dtype': 'float32',
                  'layout': 'NCHW, RGB'},
        'preprocessing': {
            'resize': 'the DA3 frame path resize to exactly H x W '
                      '(geometry/preprocess/da3_preprocess.py: upstream upper-bound resize for the '
                      'camera, or a fixed size)',
            'scale': 1.0 / 255.0, 'mean': list(IMAGENET_MEAN), 'std': list(IMAGENET_STD),
            'formula': '(rgb_uint8 / 255 - mean) / std per channel, float32'},
        'outputs': outputs,
        'metric_scale': METRIC_SCALE if spec.kind == 'metric' else None,
        'weights': weights_info,
        'exporter': {'kind': exporter, 'opset': int(opset),
                     'resize_mode': 'bilinear align_corners=True (ONNX Resize '
                                    'coordinate_transformation_mode=align_corners); exact',
                     'operators': dict(sorted(ops.items()))},
        'versions': _versions(),
    }
    write_sidecar(out, {**data, 'file_sha256': sha256_file(out)})
    try:
        engine = OnnxRuntimeEngine(out, provider=DEFAULT_PROVIDER, model=model)
        ours = engine.infer(image)
        engine.close()
        figures = parity(ours, ref)
        passed = figures['depth']['pcc'] >= PCC_GATE
        par = {'reference': 'torch-cpu fp32 engine on the same uint8 input',
               'input': f'export_input({h}, {w}): seeded synthetic image (seed {EXPORT_SEED})',
               'provider': DEFAULT_PROVIDER, 'outputs': figures, 'depth_pcc_gate': PCC_GATE,
               'passed': bool(passed)}
    except Exception as e:  # noqa: BLE001 (e.g. an fp16 kernel the CPU EP lacks): recorded
        par = {'error': f'{type(e).__name__}: {e}', 'passed': False}
    data = {**data, 'file_sha256': sha256_file(out), 'parity': par}
    write_sidecar(out, data)
    log(f'wrote {out} and its sidecar; parity: {par}')
    return data
