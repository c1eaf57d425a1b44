"""PyTorch backend (CPU, CUDA): the shared TorchEngine and the DA3 and DUSt3R builders.

May import: models, torch, engines (base, registry, weights). Never geometry-above layers.
"""
