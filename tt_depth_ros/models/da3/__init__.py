"""Depth Anything 3, every family member: metric, mono, any-view and NESTED (docs/da3.md).

backbone.py DINOv2 with camera token; head.py / dualdpt.py the DPT and DualDPT heads; camera.py
the camera decoder; nested.py / nested_align.py NESTED; model.py the network; config.py and
checkpoint.py dimensions and key mapping (test/data/da3_anyview/README.md). May import:
models.layers, models.weight_rule, torch, numpy.
"""
