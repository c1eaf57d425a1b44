"""onnxruntime backend: runs a DA3 file exported by `tt-depth export` behind the Engine interface.

engine.py the engine (normalisation in numpy, one session on one execution provider, outputs as
the torch engine's). May import: engines (base, registry, select, export.sidecar), geometry
constants, numpy, onnxruntime (imported when an engine is built). Never torch, never ROS.
"""
