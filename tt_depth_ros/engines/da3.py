"""DA3 engine builder: weights -> DA3Model -> TorchEngine with DA3's run function.

Outputs of `infer(image)` (uint8 (H, W, 3) at network resolution): 'depth' (H, W) float32 raw depth
(exp of the logit; NOT metres - see geometry/metric_depth.py) and 'sky' (H, W) float32 relu sky.
With a reduced-precision dtype only the backbone is cast; the DPT head stays fp32, as upstream runs
it (spec/da3.md §8). By default the network runs with its inference fusion switch on
(`DA3Model.set_fused`: the same mathematics with LayerScale/residual folds and a channels_last
head).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import torch
from torch import nn

from tt_depth_ros.engines.torch_engine import TorchEngine, parse_dtype
from tt_depth_ros.engines.weights import read_state_dict, resolve_weights
from tt_depth_ros.models.da3.checkpoint import load_state_dict
from tt_depth_ros.models.da3.config import CONFIGS, DA3Config
from tt_depth_ros.models.da3.model import DA3Model

MODELS = tuple(CONFIGS)


def _run(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(views[0])
    return {'depth': out['depth'][0], 'sky': out['sky'][0]}


def build_model(model: str, *, weights: Optional[str] = None, revision: Optional[str] = None,
                config: Optional[DA3Config] = None,
                state_dict: Optional[Mapping[str, Any]] = None) -> DA3Model:
    """Build a DA3Model in fp32 on CPU with weights from `state_dict` or a resolved file.

    Args:
        model: 'da3metric-large', 'da3mono-large' or 'da3metric-tiny'.
        weights: Explicit weights path (else HF cache / download, engines/weights.py).
        revision: Hub revision for resolution.
        config: Override the registry config (tests).
        state_dict: Checkpoint tensors keyed by upstream names; skips file resolution.
    """
    cfg = config if config is not None else CONFIGS.get(model)
    if cfg is None:
        raise ValueError(f'unknown DA3 model {model!r}; known: {MODELS}')
    if state_dict is None:
        state_dict = read_state_dict(resolve_weights(model, weights, revision))
    net = DA3Model(cfg)
    load_state_dict(net, state_dict)
    return net.eval()


def build_torch_engine(model: str, *, device: str = 'cpu', dtype: Any = None,
                       weights: Optional[str] = None, revision: Optional[str] = None,
                       config: Optional[DA3Config] = None,
                       state_dict: Optional[Mapping[str, Any]] = None,
                       cuda_graphs: Optional[bool] = None, logger: Optional[Any] = None,
                       fast: bool = True) -> TorchEngine:
    """DA3 on torch (see module docstring for outputs); args as `factory.build_engine`.

    `fast` switches the model's inference fusion on (exact algebraic folds, channels_last head);
    False runs the plain forward.
    """
    tdtype = parse_dtype(dtype, device)
    net = build_model(model, weights=weights, revision=revision, config=config,
                      state_dict=state_dict)
    cfg = net.cfg
    net.set_fused(fast).cast_backbone(tdtype)  # head stays fp32 (as upstream runs it)
    name = str(tdtype).replace('torch.', '')
    return TorchEngine(net, _run, model_name=cfg.name, num_views=1, device=device,
                       dtype=name, patch_size=cfg.patch_size, cuda_graphs=cuda_graphs,
                       logger=logger, details={'is_metric': cfg.is_metric, 'fast': fast})
