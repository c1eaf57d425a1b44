"""Fixtures for the ttnn engine tests: the CPU stand-in injected as `ttnn` (test only)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from devtools.rule_weights import rule_v1_state_dict
from devtools.ttnn import standin
from devtools.ttnn.standin import device as standin_device

DATA = Path(__file__).resolve().parents[2] / 'data'


@pytest.fixture
def ttnn(monkeypatch, tmp_path):
    """The stand-in as sys.modules['ttnn'] with a per-test weight cache; devices closed after."""
    monkeypatch.setitem(sys.modules, 'ttnn', standin)
    monkeypatch.setenv('TT_DEPTH_ROS_TTNN_CACHE', str(tmp_path / 'ttnn_cache'))
    standin.set_eth_dispatch_patched(False)
    yield standin
    standin.set_eth_dispatch_patched(False)
    standin_device._open_devices.clear()


@pytest.fixture(scope='session')
def da3_tiny_sd():
    keys = json.loads((DATA / 'da3' / 'tiny_config.json').read_text())['keys']
    sd = rule_v1_state_dict({k: tuple(s) for k, s in keys.items()})
    return {k: torch.from_numpy(v) for k, v in sd.items()}


def load_png(path: Path) -> np.ndarray:
    return np.array(Image.open(path).convert('RGB'))
