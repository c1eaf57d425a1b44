"""A rule-v1 checkpoint file: real key layout, synthetic values, for runs without real weights.

The benchmark, the demo and the tests that start a real node write one when no real weights can
be had: the values follow the golden "rule-v1" rule (models/weight_rule.py), the keys and shapes
are the model's own (as published on the hub), so the loading code path is the real one.
"""
from __future__ import annotations

from pathlib import Path


def _key_shapes(model: str) -> dict[str, tuple[int, ...]]:
    """Checkpoint key -> shape of a DA3 ('model.' prefix, as on the hub) or DUSt3R model.

    Built from the module's own state_dict() (no key list file): for any-view models the tied
    aux LayerNorm aliases are left out, as in the published files (models/da3/checkpoint.py).
    """
    import torch

    from tt_depth_ros.models.da3.checkpoint import AUX_LN_ALIASES
    from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS
    from tt_depth_ros.models.da3.config import CONFIGS as DA3_CONFIGS
    from tt_depth_ros.models.dust3r.config import CONFIGS as DUST3R_CONFIGS
    da3 = {**DA3_CONFIGS, **ANYVIEW_CONFIGS}
    if model in da3:
        from tt_depth_ros.models.da3.model import DA3Model
        with torch.device('meta'):
            net = DA3Model(da3[model])
        return {'model.' + k: tuple(v.shape) for k, v in net.state_dict().items()
                if not k.startswith(AUX_LN_ALIASES)}
    if model in DUST3R_CONFIGS:
        from tt_depth_ros.models.dust3r.model import Dust3r
        with torch.device('meta'):
            net = Dust3r(DUST3R_CONFIGS[model])
        return {k: tuple(v.shape) for k, v in net.state_dict().items()}
    raise ValueError(f'rule-v1 checkpoints are made for {sorted(da3)} and '
                     f'{sorted(DUST3R_CONFIGS)}, got {model!r}')


def write_rule_v1_checkpoint(model: str, path: str | Path) -> Path:
    """Write a rule-v1 safetensors checkpoint with the real key layout of `model`.

    Any-view DA3 models get rule X1 as well (a non-degenerate camera decoder FOV).

    Args:
        model: a DA3 or DUSt3R registry name ('da3metric-tiny', 'da3-anyview-tiny', ...).
        path: output .safetensors file.
    """
    import numpy as np
    from safetensors.numpy import save_file

    from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS
    from tt_depth_ros.models.weight_rule import rule_v1_state_dict

    shapes = _key_shapes(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = rule_v1_state_dict(shapes, x1=model in ANYVIEW_CONFIGS)
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path))
    return path
