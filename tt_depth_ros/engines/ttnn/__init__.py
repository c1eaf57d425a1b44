"""Traced ttnn engines for DA3 and DUSt3R on a Tenstorrent Blackhole p150 (docs/ttnn.md).

One captured trace per input shape; weights converted once (cached on disk); normalisation and
output activations on device. `build_ttnn_engine` is what engines/factory.py calls for
backend 'ttnn'. Importing this package does not import ttnn. May import: models (configs and
the reference modules), engines (base, weights), torch and numpy; ttnn inside functions only.
"""
from __future__ import annotations

from tt_depth_ros.engines.ttnn.build import build_ttnn_engine

__all__ = ['build_ttnn_engine']
