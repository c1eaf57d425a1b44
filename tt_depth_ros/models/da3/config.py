"""DA3 model dimensions (docs/da3.md §2, test/data/da3_anyview/README.md "Configurations").

One dataclass for the whole family: the metric/mono models (plain ViT + DPT with a sky output) and
the any-view models (camera token, alternating local/global attention, QK-norm, RoPE, DualDPT depth
+ ray head, camera decoder). `kind` says which.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from tt_depth_ros.models.kind import ModelKind

SKY_THRESHOLD = 0.3
"""Upstream's non-sky test is sky < 0.3, so a sky score >= 0.3 is sky (docs/da3.md)."""
BUILT_KINDS = (ModelKind.METRIC, ModelKind.MONO, ModelKind.ANYVIEW)
"""The kinds a DA3Config builds (NESTED is two of them: models/da3/nested.py)."""


@dataclass(frozen=True)
class DA3Config:
    """Every dimension a DA3 network is built from.

    Args:
        name: Registry name, e.g. 'da3metric-large', 'da3-small'.
        kind: METRIC (depth in metres via f'/300), MONO (relative, sky head) or ANYVIEW
            (relative multi-view depth + rays + camera; DualDPT head and camera decoder).
        patch_size: Patch side (14).
        img_size: Native size of the learned pos-embed grid (518 -> 37 x 37).
        embed_dim: Token width.
        depth: Number of transformer blocks.
        num_heads: Attention heads.
        mlp_ratio: MLP hidden / width.
        ffn: 'mlp' or 'swiglu' (ViT-g).
        ffn_hidden: FFN hidden width when not embed_dim * mlp_ratio (SwiGLU half width).
        block_norm_eps: Block LayerNorm eps (1e-6).
        final_norm_eps: Final LayerNorm eps, applied to every tap (1e-5, nn.LayerNorm default).
        out_layers: 0-based block indices tapped for the head.
        alt_start: First block of the alternating local/global attention (-1: none). Also where
            the camera token replaces the cls token, and (minus one) the reference-view selection.
        qknorm_start: First block with QK-norm (-1: none).
        rope_start: First block with 2-D RoPE (-1: none).
        rope_base: RoPE frequency base (100).
        cat_token: Taps are cat(local tokens, normed tokens) (2C) instead of normed tokens (C).
        interpolate_offset: Upstream pos-embed resample offset (0.1, spec §2.1).
        interpolate_antialias: Upstream pos-embed resample antialias (False).
        features: DPT fusion width.
        out_channels: DPT per-level projection widths.
        head_features_2: Hidden width of the output convs (32).
    """

    name: str
    kind: ModelKind = ModelKind.METRIC
    patch_size: int = 14
    img_size: int = 518
    embed_dim: int = 1024
    depth: int = 24
    num_heads: int = 16
    mlp_ratio: float = 4.0
    ffn: str = 'mlp'
    ffn_hidden: Optional[int] = None
    block_norm_eps: float = 1e-6
    final_norm_eps: float = 1e-5
    out_layers: tuple[int, ...] = (4, 11, 17, 23)
    alt_start: int = -1
    qknorm_start: int = -1
    rope_start: int = -1
    rope_base: float = 100.0
    cat_token: bool = False
    interpolate_offset: float = 0.1
    interpolate_antialias: bool = False
    features: int = 256
    out_channels: tuple[int, ...] = (256, 512, 1024, 1024)
    head_features_2: int = 32

    def __post_init__(self) -> None:
        object.__setattr__(self, 'kind', ModelKind(self.kind))   # a config file gives the name
        if self.kind not in BUILT_KINDS:
            raise ValueError(f'{self.name}: kind={self.kind.value!r}; allowed: '
                             f'{[k.value for k in BUILT_KINDS]}')
        if self.embed_dim % self.num_heads:
            raise ValueError(f'{self.name}: embed_dim {self.embed_dim} not divisible by '
                             f'num_heads {self.num_heads}')
        if len(self.out_layers) != 4 or len(self.out_channels) != 4:
            raise ValueError(f'{self.name}: out_layers and out_channels need 4 entries')
        if list(self.out_layers) != sorted(set(self.out_layers)):
            raise ValueError(f'{self.name}: out_layers {self.out_layers} must be increasing')
        if not all(0 <= i < self.depth for i in self.out_layers):
            raise ValueError(f'{self.name}: out_layers {self.out_layers} outside '
                             f'0..{self.depth - 1}')
        if self.anyview != (self.alt_start > 0 and self.cat_token):
            raise ValueError(f'{self.name}: any-view models need alt_start > 0 and cat_token; '
                             'metric/mono models neither')

    @property
    def is_metric(self) -> bool:
        """Depth scales to metres with f'/300 (DA3METRIC)."""
        return self.kind is ModelKind.METRIC

    @property
    def anyview(self) -> bool:
        """Any-view model (DualDPT head, camera decoder, multi-view attention)."""
        return self.kind is ModelKind.ANYVIEW

    @property
    def head_dim_in(self) -> int:
        """Width of the head's input tokens (2C with cat_token)."""
        return self.embed_dim * (2 if self.cat_token else 1)

    @property
    def output_conv1_out(self) -> int:
        """Channels after output_conv1 (features // 2)."""
        return self.features // 2

    def is_global(self, i: int) -> bool:
        """Block i attends across all views (i >= alt_start and odd)."""
        return 0 <= self.alt_start <= i and i % 2 == 1


LARGE = DA3Config(name='da3metric-large')
MONO_LARGE = replace(LARGE, name='da3mono-large', kind=ModelKind.MONO)
# test/data/da3/tiny_config.json: same code paths and key names as LARGE, only smaller.
TINY = DA3Config(name='da3metric-tiny', embed_dim=64, depth=4, num_heads=4, out_layers=(0, 1, 2, 3),
                 features=32, out_channels=(16, 32, 64, 64))


def _anyview(name: str, **dims) -> DA3Config:
    start = dims.pop('alt_start')
    return DA3Config(name=name, kind=ModelKind.ANYVIEW, alt_start=start, qknorm_start=start,
                     rope_start=start, cat_token=True, **dims)


SMALL = _anyview('da3-small', embed_dim=384, depth=12, num_heads=6, out_layers=(5, 7, 9, 11),
                 alt_start=4, features=64, out_channels=(48, 96, 192, 384))
BASE = _anyview('da3-base', embed_dim=768, depth=12, num_heads=12, out_layers=(5, 7, 9, 11),
                alt_start=4, features=128, out_channels=(96, 192, 384, 768))
LARGE_1_1 = _anyview('da3-large-1.1', embed_dim=1024, depth=24, num_heads=16,
                     out_layers=(11, 15, 19, 23), alt_start=8, features=256,
                     out_channels=(256, 512, 1024, 1024))
GIANT_1_1 = _anyview('da3-giant-1.1', embed_dim=1536, depth=40, num_heads=24, ffn='swiglu',
                     ffn_hidden=4096, out_layers=(19, 27, 33, 39), alt_start=13, features=256,
                     out_channels=(256, 512, 1024, 1024))
# test/data/da3_anyview/tiny_anyview_config.json: same classes and key names as DA3-SMALL.
ANYVIEW_TINY = _anyview('da3-anyview-tiny', embed_dim=64, depth=4, num_heads=4,
                        out_layers=(0, 1, 2, 3), alt_start=2, features=32,
                        out_channels=(16, 32, 64, 64))

CONFIGS = {c.name: c for c in (LARGE, MONO_LARGE, TINY)}
"""The single-view metric/mono configs (what engines/ttnn builds)."""
ANYVIEW_CONFIGS = {c.name: c for c in (SMALL, BASE, LARGE_1_1, GIANT_1_1, ANYVIEW_TINY)}
"""The any-view configs (torch only)."""
