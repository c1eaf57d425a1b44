"""Analytic FLOP count of one DUSt3R forward (docs/dust3r.md §4), 1 multiply-add = 2 FLOP.

Counts matmuls and convolutions (attention scores and weighted sums included); norms, softmax,
GELU, RoPE, bilinear resizes and the output activations are ignored (< 1 %).
"""
from __future__ import annotations

from tt_depth_ros.models.dust3r.config import Dust3rConfig


def _conv(pixels_out: int, cin: int, cout: int, k: int = 1) -> int:
    return 2 * pixels_out * cin * cout * k * k


def encoder_flops(cfg: Dust3rConfig, h: int, w: int) -> int:
    """Patch embedding + encoder blocks for one (h, w) image."""
    n, d = (h // cfg.patch_size) * (w // cfg.patch_size), cfg.enc_embed_dim
    hidden = int(d * cfg.mlp_ratio)
    block = 2 * n * d * 4 * d + 4 * n * n * d + 4 * n * d * hidden
    return _conv(n, 3, d, cfg.patch_size) + cfg.enc_depth * block


def decoder_flops(cfg: Dust3rConfig, h: int, w: int) -> int:
    """decoder_embed and both decoder branches (one direction, same-size views)."""
    n, d = (h // cfg.patch_size) * (w // cfg.patch_size), cfg.dec_embed_dim
    hidden = int(d * cfg.mlp_ratio)
    attn = 2 * n * d * 4 * d + 4 * n * n * d          # qkv + proj, scores + weighted sum
    block = 2 * attn + 4 * n * d * hidden                # self + cross attention, MLP
    return 2 * (2 * n * cfg.enc_embed_dim * d + cfg.dec_depth * block)


def head_flops(cfg: Dust3rConfig, h: int, w: int) -> int:
    """One DPT head (act_postprocess, scratch fusion, output convs)."""
    gh, gw = h // cfg.patch_size, w // cfg.patch_size
    p = gh * gw
    p4 = ((gh + 1) // 2) * ((gw + 1) // 2)
    t, ld, f = cfg.dim_tokens, cfg.layer_dims, cfg.feature_dim
    total = (_conv(p, t[0], ld[0]) + _conv(p, ld[0], ld[0], 4)                      # ConvT k4 s4
             + _conv(p, t[1], ld[1]) + _conv(p, ld[1], ld[1], 2)                     # ConvT k2 s2
             + _conv(p, t[2], ld[2])
             + _conv(p, t[3], ld[3]) + _conv(p4, ld[3], ld[3], 3))
    total += (_conv(16 * p, ld[0], f, 3) + _conv(4 * p, ld[1], f, 3) + _conv(p, ld[2], f, 3)
              + _conv(p4, ld[3], f, 3))
    rcu = 2 * _conv(1, f, f, 3)                           # per pixel
    for pix, n_rcu in ((p4, 1), (p, 2), (4 * p, 2), (16 * p, 2)):   # refinenet4 .. 1
        total += n_rcu * pix * rcu + _conv(4 * pix, f, f)
    total += _conv(64 * p, f, f // 2, 3) + _conv(h * w, f // 2, cfg.last_dim, 3)
    total += _conv(h * w, cfg.last_dim, cfg.num_channels)
    return total


def pair_flops(cfg: Dust3rConfig, h: int, w: int) -> dict[str, int]:
    """FLOPs of one asymmetric pair forward at (h, w): per part and 'total'."""
    parts = {'encoder': 2 * encoder_flops(cfg, h, w), 'decoder': decoder_flops(cfg, h, w),
             'heads': 2 * head_flops(cfg, h, w)}
    parts['total'] = sum(parts.values())
    return parts
