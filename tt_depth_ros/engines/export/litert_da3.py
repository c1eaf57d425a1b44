"""Export a DA3 network to LiteRT (.tflite) at one fixed size, check it, and measure its parity.

Steps of `export_da3_litert`: weights (file or state dict, as the torch engine resolves them) ->
the torch-cpu fp32 engine as the reference -> the fp32 network with its export-friendly forward
(`DA3Model.set_export`: size-only tensors constant, q/k/v as three linears with 4-D heads,
LayerScale folded into the projections, kernel == stride ConvTranspose2d as 1x1 conv + 4-D pixel
shuffle, the intrinsics stacked, contiguous head layout) -> one warm-up forward (fills the per-size
constants) -> `litert_torch.convert` -> for `fp16`, litert-torch's own fp16 recipe
(`full_fp16_recipe`: the FULLY_CONNECTED / CONV_2D weights stored as float16, dequantized by the
runtime; the mobile GPU delegate computes in fp16 anyway) on the converted fp32 flatbuffer -> the
static GPU-delegate check (engines/export/tflite_ops.py) -> the ai-edge-litert interpreter (CPU,
XNNPACK) and the torch engine on the same uint8 export input -> PCC and errors per output, each
against its tolerance (graph.TOLERANCES), the operator inventory, the check and the conversion
time into the sidecar (engines/export/sidecar.py); `parity['passed']` needs the depth PCC gate,
every output within its tolerance and the GPU check.

The file takes the normalised image as (1, H, W, 3) float32 NHWC (a mobile bitmap's layout) and
returns the torch engine's outputs with a batch axis of 1, in the sidecar's order. Bilinear
resizes keep align_corners=True (RESIZE_BILINEAR align_corners=True, half_pixel_centers=False):
exact in XNNPACK, and accepted by the GPU delegate's resize parser (tflite_ops.py). NESTED is
refused as for ONNX; DUSt3R is not a DA3 model and is not exported.

litert-torch, ai-edge-litert and their converter run in the project venv with its torch 2.13 CPU
(litert-torch 0.10 takes torch < 2.15; requirements/litert.txt pins them, scripts/bootstrap.sh
installs them); they are imported only here, inside the export.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import torch
from torch import nn

from tt_depth_ros.engines.export.graph import (
    EXPORT_DTYPES,
    EXPORT_SEED,
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
from tt_depth_ros.engines.weights import sha256_file
from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize

PCC_GATES = {'fp32': 0.9995, 'fp16': 0.999}
"""Depth PCC a file must reach against the torch fp32 engine (issue: LiteRT fp32 >= 0.9995)."""
CONVERTER_PACKAGES = {'litert_torch': 'litert-torch', 'ai_edge_litert': 'ai-edge-litert'}
RESIZE_MODE = ('bilinear align_corners=True (TFLite RESIZE_BILINEAR align_corners=True, '
               'half_pixel_centers=False); exact, as upstream')
RUNTIME = 'ai-edge-litert Interpreter, CPU, XNNPACK delegate (applied by default)'
FLATBUFFER_LIMIT_BYTES = 2**31
"""A .tflite file is one flatbuffer, which cannot pass 2 GiB (32-bit offsets)."""


class _NHWCInput(nn.Module):
    """(1, H, W, 3) float32 -> the NCHW graph: the file's input is a mobile bitmap's layout."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner   # not `graph`: torch.fx's GraphModule owns that attribute name

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.inner(x.permute(0, 3, 1, 2))


def require_converters() -> None:
    """ValueError naming the missing package(s) when the LiteRT export cannot run here."""
    import importlib.util

    missing = []
    for module, package in CONVERTER_PACKAGES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ValueError:   # a module set to None in sys.modules
            found = False
        if not found:
            missing.append(package)
    if missing:
        raise ValueError(f'the LiteRT export needs the Python package(s) {", ".join(missing)}: '
                         f'pip install -r requirements/litert.txt (scripts/bootstrap.sh installs '
                         f'them into the project venv)')


def run_tflite(path: str | Path, x: np.ndarray, threads: Optional[int] = None) -> list[np.ndarray]:
    """Run a .tflite file's default signature on (1, H, W, 3) float32; outputs in file order."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(path), num_threads=threads)
    runner = interp.get_signature_runner()
    (name,) = runner.get_input_details()
    out = runner(**{name: np.ascontiguousarray(x, np.float32)})
    # litert-torch names the outputs output_0, output_1, ... in the graph's order
    return [np.asarray(out[k]) for k in sorted(out, key=lambda k: int(k.rsplit('_', 1)[1]))]


def tflite_outputs(path: str | Path, image: np.ndarray, names: list[str],
                   threads: Optional[int] = None) -> dict[str, np.ndarray]:
    """The file's outputs for a uint8 RGB image, as the torch engine names and shapes them."""
    x = normalize(image)[None].transpose(0, 2, 3, 1)          # (1, H, W, 3)
    outs = run_tflite(path, x, threads)
    return {n: o[0] for n, o in zip(names, outs)}


def _versions() -> dict:
    from importlib.metadata import version

    return {'torch': torch.__version__, 'litert-torch': version('litert-torch'),
            'ai-edge-litert': version('ai-edge-litert'),
            'ai-edge-quantizer': version('ai-edge-quantizer'), 'tt_depth_ros': package_version()}


def _to_fp16(model_bytes: bytes) -> bytes:
    """litert-torch's fp16 recipe (weights float16) applied to a converted fp32 flatbuffer."""
    from litert_torch.generative.quantize import quant_recipes
    from litert_torch.quantize import translate_recipe

    recipe = translate_recipe.translate_to_ai_edge_recipe(
        quant_recipes.full_fp16_recipe().generative_recipe)
    return bytes(translate_recipe.quantize_model(model_bytes, recipe))


def check_flatbuffer_fits(model: str) -> None:
    """ValueError when `model`'s fp32 weights alone pass the flatbuffer limit (da3-giant-1.1).

    The conversion writes fp32 first (the fp16 file is made from it), so fp32 is what must fit;
    the check builds the network on the meta device (no memory, no weights).
    """
    from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
    from tt_depth_ros.models.da3.model import DA3Model

    cfg = {**CONFIGS, **ANYVIEW_CONFIGS}.get(model)
    if cfg is None:
        return
    with torch.device('meta'):
        net = DA3Model(cfg)
    nbytes = 4 * sum(t.numel() for t in net.state_dict().values())
    if nbytes >= FLATBUFFER_LIMIT_BYTES * 0.95:
        raise ValueError(f'{model!r} has {nbytes / 2**30:.2f} GiB of fp32 weights: a LiteRT file '
                         f'is one flatbuffer of at most 2 GiB (converted in fp32 first), so it '
                         'cannot be exported to LiteRT; use --format onnx (weights in '
                         '<name>.onnx.data) or a smaller model (da3-large-1.1, da3-base, '
                         'da3-small)')


def export_da3_litert(model: str, size: tuple[int, int], out: str | Path, *,
                      dtype: str = 'fp32', weights: Optional[str] = None,
                      revision: Optional[str] = None,
                      state_dict: Optional[Mapping[str, Any]] = None,
                      accept_license: Optional[bool] = None, also_fp16: Optional[str | Path] = None,
                      logger: Optional[Any] = None) -> dict:
    """Write `out` (.tflite) and its sidecar; return the sidecar dict (with the parity figures).

    Args:
        model: A DA3 name of engines/registry.MODELS (not NESTED).
        size: (H, W), positive multiples of 14 (engines/export/size.parse_size).
        out: Output file, ending in .tflite; the sidecar goes beside it (`<stem>.json`).
        dtype: 'fp32', or 'fp16' (float16 weights; inputs, outputs and CPU arithmetic float32).
        weights: Weights file (else HF cache / pinned download, as the torch engine).
        revision: Hub revision for resolution.
        state_dict: Checkpoint tensors instead of a file (tests); the weight hash is then of them.
        accept_license: Opt-in for CC-BY-NC-4.0 checkpoints (engines/licence.py).
        also_fp16: With dtype 'fp32': also write the fp16 file here (and its sidecar) from the
            same conversion (one conversion for both; tests and the benchmark).
        logger: Anything with `.info(str)`.

    Raises:
        ValueError: A bad argument, a missing converter package or a model this export cannot
            take, with what to do.
    """
    spec = check_model(model, 'LiteRT')
    check_flatbuffer_fits(model)
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f'dtype={dtype!r}; allowed: {EXPORT_DTYPES}')
    out = Path(out)
    if out.suffix != '.tflite':
        raise ValueError(f'--out {out}: the LiteRT file name must end in .tflite')
    if also_fp16 is not None and (dtype != 'fp32' or Path(also_fp16).suffix != '.tflite'):
        raise ValueError('also_fp16 needs dtype fp32 and a .tflite path')
    h, w = check_size(size)
    for path in [out] + ([Path(also_fp16)] if also_fp16 is not None else []):
        check_sidecar_free(path, 'litert')
    require_converters()
    log = logger.info if logger is not None else (lambda _m: None)
    state, weights_info = load_weights(model, weights, revision, state_dict)
    image = export_input(h, w)
    ref = reference_outputs(model, state, image, accept_license)
    net = export_net(model, state, torch.float32, accept_license)
    names = [o['name'] for o in outputs(spec.kind, h, w)]
    graph = _NHWCInput(ExportGraph(net, names)).eval()
    x = torch.from_numpy(normalize(image)[None].transpose(0, 2, 3, 1).copy())
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f'converting {model} {h}x{w} with litert-torch (minutes for the larger models)')
    import litert_torch

    t0, c0 = time.perf_counter(), time.process_time()
    with torch.no_grad():
        graph(x)                          # fills the per-size constants (set_export)
        converted = litert_torch.convert(graph, (x,))
    fp32_bytes = bytes(converted.model_content())
    convert_s, convert_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    files = {dtype: out}
    if also_fp16 is not None:
        files['fp16'] = Path(also_fp16)
    results = {}
    for kind, path in files.items():
        t1 = time.perf_counter()
        path.write_bytes(_to_fp16(fp32_bytes) if kind == 'fp16' else fp32_bytes)
        results[kind] = _check_and_describe(path, kind, spec, h, w, image, names, ref,
                                            weights_info, convert_s + time.perf_counter() - t1,
                                            convert_cpu_s)
        log(f'wrote {path} ({path.stat().st_size / 1e6:.1f} MB) and its sidecar; parity: '
            f'{results[kind]["parity"]}')
    return results[dtype]


def _check_and_describe(path: Path, dtype: str, spec, h: int, w: int, image: np.ndarray,
                        names: list[str], ref: Mapping[str, np.ndarray], weights_info: dict,
                        convert_s: float, convert_cpu_s: float) -> dict:
    """Static check, interpreter parity and the sidecar of one written file."""
    from tt_depth_ros.engines.export.tflite_ops import gpu_delegate_check

    check = gpu_delegate_check(path)
    data = {
        **sidecar_common('litert', spec, dtype, h, w,
                         {'name': 'args_0', 'shape': [1, h, w, 3], 'dtype': 'float32',
                          'layout': 'NHWC, RGB'}, weights_info),
        'exporter': {'kind': 'litert-torch', 'resize_mode': RESIZE_MODE,
                     'weights_dtype': 'float16 (FULLY_CONNECTED / CONV_2D weights, '
                                      'dequantized by the runtime)' if dtype == 'fp16'
                                      else 'float32',
                     'operators': check.operators, 'convert_s': round(convert_s, 1),
                     'convert_cpu_s': round(convert_cpu_s, 1),
                     'size_mb': round(path.stat().st_size / 1e6, 2)},
        'gpu_delegate_check': check.as_dict(),
        'versions': _versions(),
        'file_sha256': sha256_file(path),
    }
    gate = PCC_GATES[dtype]
    try:
        t0 = time.perf_counter()
        ours = tflite_outputs(path, image, names)
        figures = parity(ours, ref, dtype)
        par = {'reference': 'torch-cpu fp32 engine on the same uint8 input',
               'input': f'export_input({h}, {w}): seeded synthetic image (seed {EXPORT_SEED})',
               'runtime': RUNTIME, 'run_s': round(time.perf_counter() - t0, 2),
               'outputs': figures, 'depth_pcc_gate': gate,
               'passed': parity_passed(figures, gate) and check.passed}
        if not check.passed:
            par['why_not_passed'] = 'the static GPU-delegate check failed (gpu_delegate_check)'
    except Exception as e:  # noqa: BLE001 (a kernel the interpreter lacks): recorded
        par = {'error': f'{type(e).__name__}: {e}', 'passed': False}
    data['parity'] = par
    write_sidecar(path, data)
    return data
