"""The checkpoints of the model configs the golden fixtures describe, with rule-v1 weights.

`key_shapes(config)` lists a test config's checkpoint keys and shapes (the files under test/data;
the full-size DA3 from our own model on the meta device, with the HF checkpoint's `model.`
prefix); `torch_state_dict(config)` fills them with rule-v1 (devtools/rule_weights.py, cached per
test run). Tests, the dry run and the benchmarks build their engines from these.
"""
from __future__ import annotations

import json
from pathlib import Path

from devtools.rule_weights import rule_v1_state_dict

FIXTURES = Path(__file__).resolve().parents[1] / 'test' / 'data'
CONFIGS = ('da3-tiny', 'da3-large', 'da3-anyview-tiny', 'dust3r-tiny', 'dust3r-large')


def key_shapes(config: str) -> dict[str, tuple[int, ...]]:
    """Checkpoint key -> shape of a test config (CONFIGS), in checkpoint order."""
    if config == 'da3-tiny':
        keys = json.loads((FIXTURES / 'da3' / 'tiny_config.json').read_text())['keys'].items()
    elif config == 'da3-large':
        from tt_depth_ros.models.da3.config import LARGE
        return da3_key_shapes(LARGE)
    elif config == 'da3-anyview-tiny':
        keys = json.loads((FIXTURES / 'da3_anyview' / 'tiny_anyview_config.json').read_text()
                          )['keys'].items()
    elif config == 'dust3r-tiny':
        keys = json.loads((FIXTURES / 'dust3r' / 'tiny_config.json').read_text()
                          )['state_dict_keys']
    elif config == 'dust3r-large':
        keys = [(k['key'], k['shape']) for k in json.loads(
            (FIXTURES / 'dust3r' / 'full_rule_v1_keys.json').read_text())['keys']]
    else:
        raise ValueError(f'unknown test config {config!r}; one of {", ".join(CONFIGS)}')
    return {k: tuple(v) for k, v in keys}


def da3_key_shapes(cfg) -> dict[str, tuple[int, ...]]:
    """HF key -> shape of DA3Model(cfg), built on the meta device (no memory)."""
    import torch

    from tt_depth_ros.models.da3.model import DA3Model

    with torch.device('meta'):
        model = DA3Model(cfg)
    return {'model.' + k: tuple(v.shape) for k, v in model.state_dict().items()}


def torch_state_dict(config: str) -> dict:
    """The rule-v1 checkpoint of a test config (CONFIGS) as torch tensors (what engines load)."""
    import torch
    return {k: torch.from_numpy(v) for k, v in rule_v1_state_dict(key_shapes(config)).items()}
