"""What every DA3 export shares, once: graph, outputs, input, weights, sidecar part, parity.

The traced graph, its outputs and units, the seeded export input, the weights and their hash, the
sidecar's common part and the parity figures against the torch-cpu fp32 engine. onnx_da3.py and
litert_da3.py differ only in the converter and the runtime that checks the file. Imports torch.
"""
from __future__ import annotations

import hashlib
from typing import Any, Mapping, NamedTuple, Optional

import numpy as np
import torch
from torch import nn

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.export.sidecar import METRIC_SCALE
from tt_depth_ros.engines.parity import REL_FLOOR, compare_maps
from tt_depth_ros.engines.torch.da3 import build_model, build_torch_engine
from tt_depth_ros.engines.weights import read_state_dict, resolve_weights, sha256_file
from tt_depth_ros.geometry.preprocess.da3_preprocess import IMAGENET_MEAN, IMAGENET_STD
from tt_depth_ros.models.da3.nested import NestedDA3
from tt_depth_ros.models.kind import ModelKind

EXPORT_DTYPES = ('fp32', 'fp16')
EXPORT_KINDS = (ModelKind.METRIC, ModelKind.MONO, ModelKind.ANYVIEW)
"""DA3 kinds every export takes."""
ONNX_KINDS = EXPORT_KINDS + (ModelKind.NESTED,)
"""ONNX also takes NESTED: its two branches are the graph, the alignment runs on the host."""
EXPORT_SEED = 0


def check_model(model: str, fmt: str,
                kinds: tuple[ModelKind, ...] = EXPORT_KINDS) -> registry.ModelSpec:
    """The registry entry of `model`; ValueError when the `fmt` export of `kinds` cannot take it."""
    spec = registry.model(model)
    takes = ', '.join(registry.names(family='da3', kinds=kinds))
    if spec.family != 'da3':
        raise ValueError(f'{model!r} is not a DA3 model; the {fmt} export takes {takes} '
                         '(DUSt3R pairs are not exported: use the torch or ttnn backends)')
    if spec.kind not in kinds:
        raise ValueError(f'{model!r} ({spec.kind}) cannot be exported to {fmt}: NESTED is its '
                         'two networks (6.3 GiB of fp32 weights, more than one 2 GiB LiteRT '
                         'flatbuffer holds) plus a data-dependent alignment; export it with '
                         '--format onnx, or export its any-view or metric model')
    return spec


def check_size(size: tuple[int, int]) -> tuple[int, int]:
    """(H, W) as ints; ValueError unless both are positive multiples of 14."""
    h, w = (int(v) for v in size)
    if h < 14 or w < 14 or h % 14 or w % 14:
        raise ValueError(f'size {h}x{w}: both sides must be positive multiples of 14')
    return h, w


def _out(name: str, shape: list[int], units: str, meaning: str) -> dict:
    return {'name': name, 'shape': shape, 'units': units, 'meaning': meaning}


def outputs(kind: ModelKind, h: int, w: int) -> list[dict]:
    """Output names, shapes and units of an exported file of `kind`."""
    hw = [1, h, w]
    k = _out('intrinsics', [1, 3, 3], 'pixels',
             'estimated pinhole K at the network input size H x W')
    if kind is ModelKind.NESTED:
        return [_out('depth_anyview', hw, 'relative',
                     'any-view branch depth (before the metric alignment)'),
                _out('conf_anyview', hw, 'score', 'any-view branch depth confidence (exp + 1)'),
                k,
                _out('extrinsics_anyview', [1, 3, 4], 'relative',
                     'estimated world-to-camera [R | t] before the alignment'),
                _out('metric_depth_raw', hw, 'raw',
                     'metric branch raw depth (exp of the logit, before focal scaling)'),
                _out('sky', hw, 'score', 'metric branch relu sky score; sky where >= 0.3')]
    if kind in (ModelKind.METRIC, ModelKind.MONO):
        depth = (_out('depth', hw, 'raw',
                      'raw depth (exp of the logit), NOT metres: apply metric_scale')
                 if kind is ModelKind.METRIC else
                 _out('depth', hw, 'relative', 'relative depth (no unit, scale unknown)'))
        return [depth, _out('sky', hw, 'score',
                            'relu sky score; sky where >= 0.3 (upstream threshold)')]
    return [_out('depth', hw, 'relative', 'relative depth (no unit, scale unknown)'),
            _out('conf', hw, 'score', 'depth confidence (exp + 1)'), k,
            _out('extrinsics', [1, 3, 4], 'relative',
                 'estimated world-to-camera [R | t] (t in the relative depth unit)')]


class ExportGraph(nn.Module):
    """What a converter traces: normalised float32 image -> the engine's outputs, batch 1."""

    def __init__(self, net: nn.Module, names: list[str]) -> None:
        super().__init__()
        self.net = net
        self.names = names

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if isinstance(self.net, NestedDA3):   # the two branches; the alignment is host work
            av, mt = self.net.branches(x)
            pick = {'depth_anyview': av['depth'], 'conf_anyview': av['depth_conf'],
                    'intrinsics': av['intrinsics'], 'extrinsics_anyview': av['extrinsics'],
                    'metric_depth_raw': mt['depth'], 'sky': mt['sky']}
        else:
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


CAMERA_OUTPUTS = ('intrinsics', 'extrinsics', 'extrinsics_anyview')
"""Outputs that are camera matrices (3x3 K, 3x4 [R | t]) rather than maps."""
SPARSE_OUTPUTS = ('sky',)
"""Maps that are 0 on most pixels (the relu sky score): no relative error per pixel there."""
TOLERANCES = {
    'fp32': {'map_max_rel': 1e-4, 'map_median_rel': 1e-5, 'camera_max_rel': 1e-4,
             'scalar_rel': 1e-4},
    'fp16': {'map_max_rel': 1e-2, 'map_median_rel': 2e-3, 'camera_max_rel': 5e-3,
             'scalar_rel': 1e-2},
}
"""What every output of an exported file must meet against the torch fp32 engine, by dtype.

`*_max_rel` bounds max |export - torch| / max |torch| (an allclose with rtol 0 and atol that
fraction of the output's largest magnitude), `map_median_rel` the median per-pixel |export -
torch| / |torch| of the dense maps but the sparse sky score, `scalar_rel` a scalar's relative
error (NESTED's scale factor). Both see scale and offset, which PCC does not: a depth x 1.05 is
5e-2 off, a confidence without its exp + 1 activation far more. fp32 files differ from the torch
engine by float reordering alone (~1e-5 of the range); fp16 files by the backbone's (ONNX) or the
weights' (LiteRT) half precision (~2e-3)."""


def _tolerance(name: str, dtype: str) -> dict:
    t = TOLERANCES[dtype]
    if name in CAMERA_OUTPUTS:
        return {'max_rel': t['camera_max_rel']}
    if name in SPARSE_OUTPUTS:
        return {'max_rel': t['map_max_rel']}
    return {'max_rel': t['map_max_rel'], 'median_rel': t['map_median_rel']}


def parity(ours: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray], dtype: str) -> dict:
    """Per output: the agreement figures (parity.compare_maps), its tolerance and `passed`.

    Args:
        ours: The exported file's outputs, by name.
        ref: The torch-cpu fp32 engine's outputs for the same input (every one is checked).
        dtype: The file's dtype ('fp32', 'fp16'): which TOLERANCES apply.
    """
    out = {}
    for name, r in ref.items():
        o = np.asarray(ours[name])
        r = np.asarray(r)
        if o.shape != r.shape:
            out[name] = {'error': f'shape {list(o.shape)} != torch {list(r.shape)}',
                         'passed': False}
            continue
        if r.size == 1:       # a scalar (NESTED's scale factor): no PCC, one relative error
            diff = float(abs(float(o.reshape(())) - float(r.reshape(()))))
            rel = diff / max(abs(float(r.reshape(()))), REL_FLOOR)
            tol = {'rel': TOLERANCES[dtype]['scalar_rel']}
            out[name] = {'pcc': None, 'max_abs': diff, 'max_rel': rel, 'tolerance': tol,
                         'passed': bool(np.isfinite(rel) and rel <= tol['rel'])}
            continue
        a = compare_maps(r, o)
        tol = _tolerance(name, dtype)
        ok = (a.finite_mismatch == 0 and a.max_rel <= tol['max_rel']
              and a.median_rel <= tol.get('median_rel', np.inf))
        out[name] = {'pcc': round(a.pcc, 9), 'median_rel': a.median_rel, 'p99_rel': a.p99_rel,
                     'max_abs': a.max_abs, 'max_rel': a.max_rel,
                     'finite_mismatch': a.finite_mismatch, 'tolerance': tol, 'passed': bool(ok)}
    return out


def parity_passed(figures: dict, depth_pcc_gate: float) -> bool:
    """The depth PCC gate and every output within its tolerance (`parity`)."""
    depth = figures.get('depth', {})
    return bool(depth.get('pcc') is not None and depth['pcc'] >= depth_pcc_gate
                and all(f['passed'] for f in figures.values()))


class Weights(NamedTuple):
    """Checkpoint tensors (torch) and what the sidecar says about them."""

    state: dict
    info: dict


def load_weights(model: str, weights: Optional[str], revision: Optional[str],
                 state_dict: Optional[Mapping[str, Any]]) -> Weights:
    """Resolve (file, HF cache, pinned download) or take `state_dict`; hash them either way."""
    if state_dict is None:
        path = resolve_weights(model, weights, revision)
        info = {'file': path.name, 'sha256': sha256_file(path)}
        state_dict = read_state_dict(path)
    else:
        digest = hashlib.sha256()
        for k in sorted(state_dict):
            digest.update(k.encode())
            digest.update(np.ascontiguousarray(np.asarray(state_dict[k])).tobytes())
        info = {'file': None, 'sha256': digest.hexdigest(),
                'note': 'state dict given in memory: SHA-256 over sorted key names and '
                        'raw tensor bytes'}
    state = {k: torch.as_tensor(np.asarray(v)) if not isinstance(v, torch.Tensor) else v
             for k, v in state_dict.items()}
    return Weights(state, info)


def reference_outputs(model: str, state: Mapping[str, Any], image: np.ndarray,
                      accept_license: Optional[bool], config: Any = None) -> dict[str, np.ndarray]:
    """The torch-cpu fp32 engine's outputs for `image`: what every export is measured against."""
    engine = build_torch_engine(model, state_dict=state, accept_license=accept_license,
                                config=config)
    try:
        return engine.infer(image)
    finally:
        engine.close()


def export_net(model: str, state: Mapping[str, Any], backbone_dtype: torch.dtype,
               accept_license: Optional[bool], config: Any = None) -> nn.Module:
    """The network with its fused arithmetic and export-friendly forward (DA3Model.set_export)."""
    net = build_model(model, state_dict=state, accept_license=accept_license, config=config)
    # the backbone only; heads and camera decoder stay fp32, as the torch engine runs them
    net.set_fused(True).cast_backbone(backbone_dtype)
    return net.set_export(True).eval()


def sidecar_common(fmt: str, spec: registry.ModelSpec, dtype: str, h: int, w: int,
                   input_info: dict, weights_info: dict) -> dict:
    """The sidecar keys every format writes (engines/export/sidecar.py lists them)."""
    return {
        'format': fmt, 'model': spec.name, 'family': spec.family, 'kind': spec.kind,
        'is_metric': spec.kind.is_metric, 'dtype': dtype, 'size_hw': [h, w], 'input': input_info,
        'preprocessing': {
            'resize': 'the DA3 frame path resize to exactly H x W '
                      '(geometry/preprocess/da3_preprocess.py: upstream upper-bound resize for the '
                      'camera, or a fixed size)',
            'scale': 1.0 / 255.0, 'mean': list(IMAGENET_MEAN), 'std': list(IMAGENET_STD),
            'formula': '(rgb_uint8 / 255 - mean) / std per channel, float32'},
        'outputs': outputs(spec.kind, h, w),
        'metric_scale': METRIC_SCALE if spec.kind is ModelKind.METRIC else None,
        'weights': weights_info,
    }


def package_version() -> str:
    """This package's distribution version, or 'source tree'."""
    try:
        from importlib.metadata import version
        return version('tt_depth_ros')
    except Exception:  # noqa: BLE001 (not installed as a distribution: source tree)
        return 'source tree'
