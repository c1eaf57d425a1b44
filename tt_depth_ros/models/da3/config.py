"""DA3 model dimensions (spec/da3.md §2, §8): DA3METRIC-LARGE, DA3MONO-LARGE and the golden TINY."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DA3Config:
    """Every dimension the DA3 network is built from.

    Args:
        name: Registry name, e.g. 'da3metric-large'.
        is_metric: True when depth scales to metres with f'/300 (metric); False = relative (mono).
        patch_size: Patch side (14).
        img_size: Native size of the learned pos-embed grid (518 -> 37 x 37).
        embed_dim: Token width.
        depth: Number of transformer blocks.
        num_heads: Attention heads.
        mlp_ratio: MLP hidden / width.
        block_norm_eps: Block LayerNorm eps (1e-6).
        final_norm_eps: Final LayerNorm eps, applied to every tap (1e-5, nn.LayerNorm default).
        out_layers: 0-based block indices tapped for the head.
        interpolate_offset: Upstream pos-embed resample offset (0.1, spec §2.1).
        interpolate_antialias: Upstream pos-embed resample antialias (False).
        features: DPT fusion width.
        out_channels: DPT per-level projection widths.
        head_features_2: Hidden width of output_conv2 / sky_output_conv2 (32).
    """

    name: str
    is_metric: bool = True
    patch_size: int = 14
    img_size: int = 518
    embed_dim: int = 1024
    depth: int = 24
    num_heads: int = 16
    mlp_ratio: float = 4.0
    block_norm_eps: float = 1e-6
    final_norm_eps: float = 1e-5
    out_layers: tuple[int, ...] = (4, 11, 17, 23)
    interpolate_offset: float = 0.1
    interpolate_antialias: bool = False
    features: int = 256
    out_channels: tuple[int, ...] = (256, 512, 1024, 1024)
    head_features_2: int = 32

    def __post_init__(self) -> None:
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

    @property
    def output_conv1_out(self) -> int:
        """Channels after output_conv1 (features // 2)."""
        return self.features // 2


LARGE = DA3Config(name='da3metric-large')
MONO_LARGE = replace(LARGE, name='da3mono-large', is_metric=False)
# test/data/da3/tiny_config.json: same code paths and key names as LARGE, only smaller.
TINY = DA3Config(name='da3metric-tiny', embed_dim=64, depth=4, num_heads=4, out_layers=(0, 1, 2, 3),
                 features=32, out_channels=(16, 32, 64, 64))

CONFIGS = {c.name: c for c in (LARGE, MONO_LARGE, TINY)}
