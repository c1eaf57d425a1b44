"""DA3 engine builder, every family member: weights -> model -> TorchEngine with its run function.

Outputs of `infer(image)` (uint8 (H, W, 3) at network resolution), float32:

* metric / mono ('da3metric-large', 'da3mono-large'): 'depth' (H, W) raw depth (exp of the logit;
  NOT metres - see geometry/metric_depth.py) and 'sky' (H, W) relu sky score.
* any-view ('da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1'): 'depth' (H, W) relative
  depth, 'conf' (H, W), 'intrinsics' (3, 3) estimated at H x W, 'extrinsics' (3, 4).
* NESTED ('da3nested-giant-large-1.1'): 'depth' (H, W) metres (sky pixels = the sky fill),
  'conf', 'sky' (H, W) metric branch sky score, 'intrinsics', 'extrinsics' (metres),
  'scale_factor' ().

With a reduced-precision dtype only the backbones are cast; heads, camera decoder and the NESTED
alignment stay fp32, as upstream runs them (docs/da3.md §8). By default the network runs with its
inference fusion switch on (`DA3Model.set_fused`: the same mathematics with LayerScale/residual
folds and a channels_last head). Non-commercial checkpoints need the licence opt-in
(engines/da3_family_weights.py).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Union

import torch
from torch import nn

from tt_depth_ros.engines import da3_family_weights as family
from tt_depth_ros.engines.torch.engine import TorchEngine, parse_dtype
from tt_depth_ros.engines.weights import read_state_dict, resolve_weights
from tt_depth_ros.models.da3.checkpoint import load_state_dict
from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
from tt_depth_ros.models.da3.model import DA3Model
from tt_depth_ros.models.da3.nested import NestedDA3, load_nested_state_dict

family.register()
NESTED = 'da3nested-giant-large-1.1'
MODELS = tuple(CONFIGS) + tuple(ANYVIEW_CONFIGS) + (NESTED,)
TORCH_ONLY = tuple(ANYVIEW_CONFIGS) + (NESTED,)
"""Models without a ttnn implementation."""
Net = Union[DA3Model, NestedDA3]


def model_kind(model: str) -> str:
    """'metric', 'mono', 'anyview' or 'nested' for a family model name."""
    if model == NESTED:
        return 'nested'
    cfg = CONFIGS.get(model) or ANYVIEW_CONFIGS.get(model)
    if cfg is None:
        raise ValueError(f'unknown DA3 model {model!r}; known: {MODELS}')
    return cfg.kind


def is_metric(model: str) -> bool:
    """Whether the model's depth output is in metres."""
    return model_kind(model) in ('metric', 'nested')


def _run_single(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(views[0])
    return {'depth': out['depth'][0], 'sky': out['sky'][0]}


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


def build_model(model: str, *, weights: Optional[str] = None, revision: Optional[str] = None,
                config: Any = None, state_dict: Optional[Mapping[str, Any]] = None,
                accept_license: Optional[bool] = None) -> Net:
    """Build a DA3 network in fp32 on CPU with weights from `state_dict` or a resolved file.

    Args:
        model: A name of MODELS.
        weights: Explicit weights file (else HF cache / download, engines/weights.py).
        revision: Hub revision for resolution.
        config: Override the registry config (tests; NESTED: an (any-view, metric) pair).
        state_dict: Checkpoint tensors keyed by upstream names; skips file resolution.
        accept_license: Opt-in for CC-BY-NC-4.0 models (None: TT_DEPTH_ACCEPT_NC_LICENSE).

    Raises:
        LicenseNotAcceptedError: A non-commercial model without the opt-in.
    """
    kind = model_kind(model)
    family.require_license(model, accept_license)
    if state_dict is None:
        path = resolve_weights(model, weights, revision)
        if model in TORCH_ONLY and path.suffix != '.safetensors':
            raise ValueError(f'{model}: weights {path} are not a .safetensors file; the any-view '
                             'and NESTED checkpoints are read from safetensors only (never '
                             'pickles)')
        state_dict = read_state_dict(path)
    if kind == 'nested':
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
                       num_views: int = 1) -> TorchEngine:
    """DA3 on torch (see module docstring for outputs); args as `factory.build_engine`.

    `fast` switches the model's inference fusion on (exact algebraic folds, channels_last head);
    False runs the plain forward. `num_views` > 1 (any-view / NESTED only): `infer` takes that
    many views of one scene (one forward) and every output gains a leading view axis, in input
    order: 'depth', 'conf' (N, H, W), 'intrinsics' (N, 3, 3), 'extrinsics' (N, 3, 4)
    world-to-camera, 'ray' (N, 8 H/14, 8 W/14, 6) the ray head's direction and origin (NESTED:
    origins in the any-view unit, times 'scale_factor' for metres), 'ray_conf'; NESTED also
    'sky' (N, H, W) and 'scale_factor'.
    """
    tdtype = parse_dtype(dtype, device)
    net = build_model(model, weights=weights, revision=revision, config=config,
                      state_dict=state_dict, accept_license=accept_license)
    net.set_fused(fast).cast_backbone(tdtype)  # heads stay fp32 (as upstream runs them)
    kind = model_kind(model)
    name = net.cfg.name if isinstance(net, DA3Model) else NESTED
    if num_views != 1 and kind in ('metric', 'mono'):
        raise ValueError(f'{model!r} is a single-view model; num_views={num_views} needs an '
                         'any-view or NESTED model')
    run = (_run_single if kind in ('metric', 'mono') else
           _run_anyview if num_views == 1 else _run_views)
    return TorchEngine(net, run, model_name=name, num_views=int(num_views), device=device,
                       dtype=str(tdtype).replace('torch.', ''), patch_size=14,
                       cuda_graphs=cuda_graphs, logger=logger,
                       details={'is_metric': is_metric(model), 'kind': kind, 'fast': fast})
