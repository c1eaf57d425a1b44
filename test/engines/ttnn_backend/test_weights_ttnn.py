"""The ttnn backend resolves and reads DUSt3R weights exactly as the torch path does.

One registry (engines/registry.MODELS) holds every published-weights pin without import side
effects, so `build_engine('dust3r-vitl-512-dpt', backend='ttnn')` reaches the pinned hub
revision although the ttnn build never imports engines/torch/dust3r.py; a `.pth` training checkpoint
(with its argparse.Namespace `args`) loads through the same weights_only reader.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from devtools.rule_weights import rule_v1_state_dict
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.engines.weights import WeightsUnavailableError

DATA = Path(__file__).resolve().parents[2] / 'data' / 'dust3r'


def test_registry_has_every_pin_without_importing_the_engines():
    code = ('import sys, tt_depth_ros.engines.weights, tt_depth_ros.engines.registry as R; '
            "print(sorted(n for n, m in R.MODELS.items() if m.weights), "
            "'tt_depth_ros.engines.torch.dust3r' in sys.modules, "
            "'tt_depth_ros.engines.torch.da3' in sys.modules)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True).stdout
    assert "'dust3r-vitl-512-dpt'" in out and "'da3metric-large'" in out
    assert out.strip().endswith('False False')


def test_ttnn_dust3r_default_weights_resolve_to_the_pinned_revision(ttnn, monkeypatch,
                                                                   tmp_path):
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path / 'hub'))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    sys.modules.pop('tt_depth_ros.engines.torch.dust3r', None)     # the ttnn build must not need it
    with pytest.raises(WeightsUnavailableError) as e:
        build_engine('dust3r-vitl-512-dpt', backend='ttnn')
    from tt_depth_ros.engines.registry import model
    spec = model('dust3r-vitl-512-dpt').weights
    assert 'no published weights registered' not in str(e.value)
    assert spec.repo_id in str(e.value) and spec.revision in str(e.value)


@pytest.fixture(scope='module')
def tiny_sd():
    cfg = json.loads((DATA / 'tiny_config.json').read_text())
    sd = rule_v1_state_dict({k: tuple(s) for k, s in cfg['state_dict_keys']})
    return {k: torch.from_numpy(v) for k, v in sd.items()}


def test_ttnn_dust3r_reads_a_pth_training_checkpoint_like_torch(ttnn, tiny_sd, tmp_path):
    ckpt = tmp_path / 'checkpoint-best.pth'
    torch.save({'model': tiny_sd, 'args': argparse.Namespace(model='AsymmetricCroCo3DStereo'),
                'epoch': 3}, ckpt)
    rng = np.random.default_rng(1)
    views = [rng.integers(0, 256, (80, 112, 3), dtype=np.uint8) for _ in range(2)]
    with build_engine('dust3r-tiny', backend='ttnn', weights=str(ckpt)) as eng:
        from_pth = eng.infer(*views)
    with build_engine('dust3r-tiny', backend='ttnn', state_dict=tiny_sd) as eng:
        direct = eng.infer(*views)
    for k in direct:
        np.testing.assert_array_equal(from_pth[k], direct[k])


class Payload:
    """Not on the allowlist: weights_only must refuse to unpickle it."""


def test_ttnn_dust3r_pth_refuses_arbitrary_objects(ttnn, tiny_sd, tmp_path):
    ckpt = tmp_path / 'evil.pth'
    torch.save({'model': tiny_sd, 'extra': Payload()}, ckpt)
    with pytest.raises(ValueError, match='weights_only'):
        build_engine('dust3r-tiny', backend='ttnn', weights=str(ckpt))
