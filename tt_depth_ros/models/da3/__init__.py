"""Depth Anything 3 metric / mono (DINOv2 ViT-L/14 + DPT head), docs/da3.md."""
