"""Shared ViT / DPT building blocks (DA3, DUSt3R); attribute names are the checkpoint contract."""
