"""DA3 engine builder, every family member: weights -> model -> TorchEngine with its run function.

Outputs of `infer(image)` (uint8 (H, W, 3) at network resolution), float32:

* metric / mono ('da3metric-large', 'da3mono-large'): 'depth' (H, W) raw depth (exp of the logit;
  NOT metres - see geometry/depth/metric_depth.py) and 'sky' (H, W) relu sky score.
* any-view ('da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1'): 'depth' (H, W) relative
  depth, 'conf' (H, W), 'intrinsics' (3, 3) estimated at H x W, 'extrinsics' (3, 4).
* NESTED ('da3nested-giant-large-1.1'): 'depth' (H, W) metres (sky pixels = the sky fill),
  'conf', 'sky' (H, W) metric branch sky score, 'intrinsics', 'extrinsics' (metres),
  'scale_factor' ().

`dtype` names a precision preset (engines/torch/presets.py: 'float32' exact, 'bfloat16' /
'float16' backbone casts with heads, camera decoder and the NESTED alignment fp32 as upstream
runs them (docs/da3.md §8), the CPU presets 'bf16-matmul', 'cpu-fast', 'int8', and 'auto'); the
resolved name is `info.dtype` and is logged. By default the network runs with its
inference fusion switch on (`DA3Model.set_fused`: the same mathematics with LayerScale/residual
folds and a channels_last head). Which kind a name is, its views and licence come from
engines/registry.py; non-commercial checkpoints need the licence opt-in (engines/licence.py).
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Union

import torch
from torch import nn

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.licence import require_license
from tt_depth_ros.engines.torch.engine import TorchEngine
from tt_depth_ros.engines.torch.presets import describe, resolve_preset
from tt_depth_ros.engines.weights import read_state_dict, resolve_weights
from tt_depth_ros.models.da3.checkpoint import load_state_dict
from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
from tt_depth_ros.models.da3.model import DA3Model
from tt_depth_ros.models.da3.nested import NestedDA3, load_nested_state_dict
from tt_depth_ros.models.kind import ModelKind

Net = Union[DA3Model, NestedDA3]
_log = logging.getLogger(__name__)


def _run_single(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(views[0])
    return {'depth': out['depth'][0], 'sky': out['sky'][0]}


def _run_single_batch(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(views[0])                # (B, 3, H, W): one frame per camera
    return {'depth': out['depth'], 'sky': out['sky']}


def _run_anyview(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(torch.cat(views))
    res = {'depth': out['depth'][0], 'conf': out['depth_conf'][0],
           'intrinsics': out['intrinsics'][0], 'extrinsics': out['extrinsics'][0]}
    if 'scale_factor' in out:
        res.update(sky=out['sky'][0], scale_factor=out['scale_factor'])
    return res


def _run_views(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(torch.cat(views))
    res = {'depth': out['depth'], 'conf': out['depth_conf'], 'intrinsics': out['intrinsics'],
           'extrinsics': out['extrinsics'], 'ray': out['ray'], 'ray_conf': out['ray_conf']}
    if 'scale_factor' in out:
        res.update(sky=out['sky'], scale_factor=out['scale_factor'])
    return res


def _run_scene(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(torch.cat(views))
    return {'depth': out['depth'], 'conf': out['depth_conf'], 'intrinsics': out['intrinsics'],
            'extrinsics': out['extrinsics'], 'ref_view': out['ref_view']}


def _da3_spec(model: str) -> registry.ModelSpec:
    spec = registry.model(model)
    if spec.family != 'da3':
        raise ValueError(f'{model!r} is not a DA3 model; known: {registry.names(family="da3")}')
    return spec


def build_model(model: str, *, weights: Optional[str] = None, revision: Optional[str] = None,
                config: Any = None, state_dict: Optional[Mapping[str, Any]] = None,
                accept_license: Optional[bool] = None) -> Net:
    """Build a DA3 network in fp32 on CPU with weights from `state_dict` or a resolved file.

    Args:
        model: A DA3 name of engines/registry.MODELS.
        weights: Explicit weights file (else HF cache / download, engines/weights.py).
        revision: Hub revision for resolution.
        config: Override the registry config (tests; NESTED: an (any-view, metric) pair).
        state_dict: Checkpoint tensors keyed by upstream names; skips file resolution.
        accept_license: Opt-in for CC-BY-NC-4.0 models (None: TT_DEPTH_ACCEPT_NC_LICENSE).

    Raises:
        ValueError: Not a DA3 model.
        LicenseNotAcceptedError: A non-commercial model without the opt-in.
    """
    spec = _da3_spec(model)
    require_license(model, accept_license)
    if state_dict is None:
        path = resolve_weights(model, weights, revision)
        if spec.kind.multi_view and path.suffix != '.safetensors':
            raise ValueError(f'{model}: weights {path} are not a .safetensors file; the any-view '
                             'and NESTED checkpoints are read from safetensors only (never '
                             'pickles)')
        state_dict = read_state_dict(path)
    if spec.kind is ModelKind.NESTED:
        net: Net = NestedDA3(*config) if config is not None else NestedDA3()
        load_nested_state_dict(net, state_dict)
        return net.eval()
    cfg = config if config is not None else (CONFIGS.get(model) or ANYVIEW_CONFIGS[model])
    net = DA3Model(cfg)
    load_state_dict(net, state_dict)
    return net.eval()


def build_torch_engine(model: str, *, device: str = 'cpu', dtype: Any = None,
                       weights: Optional[str] = None, revision: Optional[str] = None,
                       config: Any = None,
                       state_dict: Optional[Mapping[str, Any]] = None,
                       cuda_graphs: Optional[bool] = None, logger: Optional[Any] = None,
                       fast: bool = True, accept_license: Optional[bool] = None,
                       num_views: int = 1,
                       resize_on_device: Optional[bool] = None) -> TorchEngine:
    """DA3 on torch (see module docstring for outputs); args as `factory.build_engine`.

    `fast` switches the model's inference fusion on (exact algebraic folds, channels_last head);
    False runs the plain forward. `num_views` > 1 (any-view / NESTED only): `infer` takes that
    many views of one scene (one forward) and every output gains a leading view axis, in input
    order: 'depth', 'conf' (N, H, W), 'intrinsics' (N, 3, 3), 'extrinsics' (N, 3, 4)
    world-to-camera, 'ray' (N, 8 H/14, 8 W/14, 6) the ray head's direction and origin (NESTED:
    origins in the any-view unit, times 'scale_factor' for metres), 'ray_conf'; NESTED also
    'sky' (N, H, W) and 'scale_factor'. `num_views=registry.ANY_VIEWS` (MultiViewPredictor):
    `infer` takes any number of views of one size, no CUDA graphs (a graph fixes the count), and
    returns 'depth', 'conf', 'intrinsics', 'extrinsics' per view and 'ref_view' () the reference
    view the network chose. `resize_on_device`: TorchEngine's (None: on CUDA, one view).
    """
    spec = _da3_spec(model)
    if num_views != 1 and not spec.kind.multi_view:
        raise ValueError(f'{model!r} is a single-view model; num_views={num_views} needs an '
                         'any-view or NESTED model')
    preset = resolve_preset(dtype, device)
    if not fast and preset.matmul != 'float32':
        raise ValueError(f'dtype={preset.name!r} runs on the fused path; fast=False is for '
                         "'float32' / 'bfloat16' / 'float16'")
    net = build_model(model, weights=weights, revision=revision, config=config,
                      state_dict=state_dict, accept_license=accept_license)
    head = torch.bfloat16 if preset.head_bf16 and spec.kind.has_sky \
        else torch.float32
    net.set_fused(fast, preset.matmul, head)
    net.cast_backbone(getattr(torch, preset.backbone_dtype))   # heads stay fp32 (as upstream)
    (logger or _log).info(f'{model}: {describe(preset, dtype, device)}')
    name = net.cfg.name if isinstance(net, DA3Model) else model
    run = (_run_single if not spec.kind.multi_view else _run_anyview if num_views == 1 else
           _run_scene if num_views == registry.ANY_VIEWS else _run_views)
    return TorchEngine(net, run, model_name=name, num_views=int(num_views), device=device,
                       dtype=preset.name, patch_size=14,
                       cuda_graphs=cuda_graphs, logger=logger,
                       details={**spec.details(), 'fast': fast},
                       resize_on_device=resize_on_device,
                       run_batch=None if spec.kind.multi_view else _run_single_batch)
