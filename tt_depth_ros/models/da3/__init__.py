"""Depth Anything 3 metric / mono (DINOv2 ViT-L/14 + DPT head), spec/da3.md."""
