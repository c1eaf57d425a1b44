"""DUSt3R model dimensions: real LARGE and golden TINY.

Specs: docs/dust3r.md §2, test/data/dust3r/README.md §2.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dust3rConfig:
    """Every dimension the DUSt3R network is built from.

    Args:
        name: registry name, e.g. 'dust3r-vitl-512-dpt'.
        patch_size: patch side (16).
        enc_embed_dim: encoder token width.
        enc_depth: encoder blocks.
        enc_num_heads: encoder heads.
        dec_embed_dim: decoder token width.
        dec_depth: blocks per decoder branch (must be 12 for hooks [0, 6, 9, 12]).
        dec_num_heads: decoder heads.
        mlp_ratio: MLP hidden / width.
        norm_eps: every LayerNorm's epsilon (1e-6, spec §2).
        rope_base: RoPE2D frequency base ("RoPE100").
        hooks: indices into [encoder out, block 0 .. block 11 (last normed)] tapped by the heads.
        layer_dims: DPT act_postprocess widths per hook.
        feature_dim: DPT fusion width.
        last_dim: DPT head hidden width.
        num_channels: head outputs (xyz + confidence logit).
    """

    name: str
    patch_size: int = 16
    enc_embed_dim: int = 1024
    enc_depth: int = 24
    enc_num_heads: int = 16
    dec_embed_dim: int = 768
    dec_depth: int = 12
    dec_num_heads: int = 12
    mlp_ratio: float = 4.0
    norm_eps: float = 1e-6
    rope_base: float = 100.0
    hooks: tuple[int, int, int, int] = (0, 6, 9, 12)
    layer_dims: tuple[int, int, int, int] = (96, 192, 384, 768)
    feature_dim: int = 256
    last_dim: int = 128
    num_channels: int = 4

    def __post_init__(self):
        for dim, heads, what in ((self.enc_embed_dim, self.enc_num_heads, 'enc'),
                                 (self.dec_embed_dim, self.dec_num_heads, 'dec')):
            if dim % heads or (dim // heads) % 4:
                raise ValueError(f'Dust3rConfig {self.name}: {what}_embed_dim {dim} / heads '
                                 f'{heads} must give a head_dim that is a multiple of 4 (RoPE2D)')
        if len(self.hooks) != 4 or self.hooks[0] != 0 or max(self.hooks) != self.dec_depth:
            raise ValueError(f'Dust3rConfig {self.name}: hooks {self.hooks} must start at 0 '
                             f'(encoder) and end at dec_depth={self.dec_depth} (normed last block)')

    @property
    def dim_tokens(self) -> tuple[int, int, int, int]:
        """Token width at each hook: the encoder output, then decoder widths."""
        return tuple(self.enc_embed_dim if h == 0 else self.dec_embed_dim for h in self.hooks)


LARGE = Dust3rConfig(name='dust3r-vitl-512-dpt')

# test/data/dust3r/tiny_config.json: enc 64/2/4, dec 64/12/4, DPT [16,32,64,64] -> 32, last 16.
TINY = Dust3rConfig(name='dust3r-tiny', enc_embed_dim=64, enc_depth=2, enc_num_heads=4,
                    dec_embed_dim=64, dec_depth=12, dec_num_heads=4,
                    layer_dims=(16, 32, 64, 64), feature_dim=32, last_dim=16)

CONFIGS = {c.name: c for c in (LARGE, TINY)}
