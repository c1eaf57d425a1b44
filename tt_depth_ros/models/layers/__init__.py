"""Shared ViT / DPT building blocks (DA3, DUSt3R); attribute names are the checkpoint contract.

Attention (self and cross, optional RoPE), transformer block, MLP, LayerScale, patch and
position embeddings, RoPE2D, DPT fusion. May import: torch only.
"""
