"""Inference engines: one interface over the torch and ttnn backends.

base.py the Engine (uint8 RGB at network resolution in, float32 raw maps out); registry.py the
one table of every model (family, kind, views, backends, weights, licence); select.py the
backend choice; factory.py builds an engine by model and backend; weights.py resolves and
verifies checkpoint files; licence.py the non-commercial opt-in; cancel.py cancels a slow
build; torch/ and ttnn/ the backends. May import: models, geometry (numpy input checks and
constants); torch and ttnn only inside a backend package, which factory.py imports when an
engine is built. Never ROS.
"""
