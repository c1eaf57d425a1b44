"""The real NESTED engine on tiny branches (any-view tiny + metric tiny, rule-v1 (+ X1) weights).

Selected only through `engine_plugin: 'support.fake_engines.tiny_nested:tiny_nested_engine'` (no
tiny NESTED name exists in the model registry: the real one is giant + large). The checkpoint keys
are the real NESTED layout (`model.da3.*`, `model.da3_metric.*`), loaded strictly.
"""
from __future__ import annotations


def tiny_nested_state() -> dict:
    """NESTED-layout rule-v1 state dict of the tiny branches."""
    from support.da3_fixtures import anyview_state_dict, tiny_state_dict

    sd = {'model.da3.' + k[len('model.'):]: v for k, v in anyview_state_dict().items()}
    sd.update({'model.da3_metric.' + k[len('model.'):]: v for k, v in tiny_state_dict().items()})
    return sd


def tiny_nested_engine(backend: str = 'torch-cpu'):
    """build_torch_engine for NESTED with the tiny configs (licence accepted: test weights)."""
    from tt_depth_ros.engines.torch.da3 import build_torch_engine
    from tt_depth_ros.models.da3.config import ANYVIEW_TINY, TINY

    assert backend == 'torch-cpu'
    return build_torch_engine('da3nested-giant-large-1.1', config=(ANYVIEW_TINY, TINY),
                              state_dict=tiny_nested_state(),
                              accept_license=True)
