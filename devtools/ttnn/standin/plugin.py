"""Test-only engine plugin for the ROS nodes: the real ttnn engine on the CPU stand-in.

`engine_plugin: 'devtools.ttnn.standin.plugin:build_engine'` (the repository root on
PYTHONPATH). It puts the stand-in in sys.modules['ttnn'] and then builds through the normal
factory with backend='ttnn' — select, factory, build_ttnn_engine and the engine are the
production code. Never used by `auto` (which requires /dev/tenstorrent).
"""
from __future__ import annotations

from devtools.ttnn import standin


def build_engine(model: str, weights: str, backend: str = 'ttnn', dtype=None):
    standin.install()
    from tt_depth_ros.engines.factory import build_engine as factory_build
    return factory_build(model, weights=weights, backend=backend, dtype=dtype)
