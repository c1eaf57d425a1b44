"""DUSt3R engine builder: weights -> Dust3r -> TorchEngine with DUSt3R's run function.

`infer(img1, img2)` takes two uint8 (H, W, 3) RGB views at the same network size (multiples of 16,
from geometry/preprocess/dust3r_preprocess.py) and returns float32 maps at network resolution, all
in camera 1's frame (OpenCV optical axes, arbitrary scale): 'pts3d_1', 'pts3d_2' (H, W, 3) and
'conf_1', 'conf_2' (H, W) (>= 1). Normalisation to [-1, 1] ((x/255 - 0.5) / 0.5) is done by the
engine. `dtype` names a precision preset (engines/torch/presets.py): with 'bfloat16' / 'float16'
encoder and decoders are cast, the DPT heads and the output activations stay fp32, as upstream
runs them (docs/dust3r.md §3.7); 'bf16-matmul' / 'cpu-fast' (the same for DUSt3R) and 'int8' set
the block matmul precision only; 'auto' resolves per device. `info.dtype` is the resolved name.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Optional

import torch
from torch import nn

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.torch.engine import TorchEngine
from tt_depth_ros.engines.torch.presets import describe, resolve_preset
from tt_depth_ros.engines.weights import resolve_weights
from tt_depth_ros.models.dust3r.checkpoint import load_into, read_checkpoint
from tt_depth_ros.models.dust3r.config import CONFIGS, Dust3rConfig
from tt_depth_ros.models.dust3r.model import Dust3r

_log = logging.getLogger(__name__)
NORM_MEAN = (0.5, 0.5, 0.5)   # (x/255 - 0.5) / 0.5 -> [-1, 1] (spec §5 step 4)
NORM_STD = (0.5, 0.5, 0.5)


def _run(model: nn.Module, views: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(views[0], views[1])
    return {'pts3d_1': out['pts3d_1'][0], 'conf_1': out['conf_1'][0],
            'pts3d_2': out['pts3d_2'][0], 'conf_2': out['conf_2'][0]}


def build_model(model: str, *, weights: Optional[str] = None, revision: Optional[str] = None,
                config: Optional[Dust3rConfig] = None,
                state_dict: Optional[Mapping[str, Any]] = None) -> Dust3r:
    """Build a fp32 CPU Dust3r with weights from `state_dict` or a resolved file.

    The module is created on the meta device and adopts the checkpoint tensors (strict), so the
    2.3 GB model is never held twice.

    Args:
        model: 'dust3r-vitl-512-dpt' or 'dust3r-tiny'.
        weights: explicit weights file (.safetensors preferred, .pth read with weights_only=True).
        revision: hub revision for resolution (default: the pinned one).
        config: override the registry config (tests).
        state_dict: checkpoint tensors keyed by upstream names; skips file resolution.

    Raises:
        ValueError: unknown model; CheckpointError (a ValueError) for a corrupt or mismatching
            checkpoint; WeightsUnavailableError when no weights can be found.
    """
    cfg = config if config is not None else CONFIGS.get(model)
    if cfg is None:
        raise ValueError(f'unknown DUSt3R model {model!r}; '
                         f'known: {registry.names(family="dust3r")}')
    if state_dict is None:
        state_dict = read_checkpoint(resolve_weights(model, weights, revision))
    with torch.device('meta'):
        net = Dust3r(cfg)
    load_into(net, state_dict, assign=True)
    return net.float().eval()


def build_torch_engine(model: str, *, device: str = 'cpu', dtype: Any = None,
                       weights: Optional[str] = None, revision: Optional[str] = None,
                       config: Optional[Dust3rConfig] = None,
                       state_dict: Optional[Mapping[str, Any]] = None,
                       cuda_graphs: Optional[bool] = None,
                       logger: Optional[Any] = None) -> TorchEngine:
    """DUSt3R on torch (outputs in the module docstring); args as `factory.build_engine`."""
    preset = resolve_preset(dtype, device)
    net = build_model(model, weights=weights, revision=revision, config=config,
                      state_dict=state_dict)
    if preset.backbone_dtype != 'float32':
        for name, child in net.named_children():
            if not name.startswith('downstream_head'):
                child.to(getattr(torch, preset.backbone_dtype))
    net.set_precision(preset.matmul)
    (logger or _log).info(f'{model}: {describe(preset, dtype, device)}')
    return TorchEngine(net, _run, model_name=net.cfg.name, num_views=2, device=device,
                       dtype=preset.name, patch_size=net.cfg.patch_size,
                       cuda_graphs=cuda_graphs, logger=logger,
                       details={**registry.model(model).details(), 'scale_free': True},
                       mean=NORM_MEAN, std=NORM_STD)
