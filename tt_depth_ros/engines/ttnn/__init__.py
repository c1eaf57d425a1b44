"""Traced ttnn engines for DA3 and DUSt3R on a Tenstorrent Blackhole p150 (docs/ttnn.md).

One captured trace per input shape; weights converted once (cached on disk); normalisation and
output activations on device. `build_ttnn_engine` is what engines/factory.py calls for
backend 'ttnn'. Importing this package does not import ttnn, nor torch until
`build_ttnn_engine` is first looked up: the ROS layer reads the preset names of precision.py
without torch. May import: models (configs and the reference modules), engines (base, weights),
torch and numpy; ttnn inside functions only.
"""
from __future__ import annotations

__all__ = ['build_ttnn_engine']


def __getattr__(name: str):
    if name == 'build_ttnn_engine':
        from tt_depth_ros.engines.ttnn.build import build_ttnn_engine
        return build_ttnn_engine
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
