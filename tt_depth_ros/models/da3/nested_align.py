"""NESTED alignment: any-view depth scaled to metres by the metric branch.

Upstream `DA3NestedNet` post-process; test/data/da3_anyview/README.md "NESTED" steps 3-7.

Deterministic where upstream is random: upstream draws a random subset (torch RNG) of a quantile's
input when it has more than 100,000 values. Here such an input is sub-sampled to exactly 100,000
values at evenly spaced flat indices, floor(i * n / 100000) (row-major over views, rows, columns:
a uniform spatial grid, the expectation of upstream's uniform draw) - the same result on every run.
At or below 100,000 values (e.g. the golden case, 37,461) both are the exact quantile.
"""
from __future__ import annotations

import torch

from tt_depth_ros.models.da3.config import SKY_THRESHOLD

METRIC_FOCAL = 300.0
MAX_QUANTILE_SAMPLES = 100_000
SKY_FILL_MAX = 200.0
MIN_METRIC, MIN_ANYVIEW = 0.01, 0.001


def subsample(values: torch.Tensor, limit: int = MAX_QUANTILE_SAMPLES) -> torch.Tensor:
    """`values` (1-D) if it has <= limit entries, else `limit` evenly spaced entries."""
    n = values.numel()
    if n <= limit:
        return values
    idx = torch.arange(limit, dtype=torch.int64, device=values.device) * n // limit
    return values[idx]


def align_to_metric(depth: torch.Tensor, conf: torch.Tensor, extrinsics: torch.Tensor,
                    intrinsics: torch.Tensor, metric_depth: torch.Tensor,
                    sky: torch.Tensor) -> dict[str, torch.Tensor]:
    """One metric scale for all views, then the sky fill.

    Args:
        depth: (S, H, W) any-view depth (relative).
        conf: (S, H, W) any-view depth confidence.
        extrinsics: (S, 3, 4) any-view world-to-camera.
        intrinsics: (S, 3, 3) predicted any-view intrinsics at H x W.
        metric_depth: (S, H, W) metric branch raw depth (exp, before focal scaling).
        sky: (S, H, W) metric branch sky score (relu of the logit).

    Returns:
        'depth' (metres; sky pixels = sky_fill), 'depth_conf' (sky = 1.0), 'extrinsics'
        (translation scaled), 'scale_factor' () fp32, 'sky_fill' (), 'median_conf' (),
        'non_sky_mask', 'align_mask' (S, H, W) bool.

    Raises:
        ValueError: No non-sky pixel (nothing to align with).
    """
    focal = (intrinsics[:, 0, 0] + intrinsics[:, 1, 1]) / 2
    metric_scaled = metric_depth * (focal / METRIC_FOCAL)[:, None, None]
    non_sky = sky < SKY_THRESHOLD
    if not bool(non_sky.any()):
        raise ValueError('NESTED alignment: every pixel is sky (metric branch sky >= '
                         f'{SKY_THRESHOLD}); there is nothing to take the metric scale from')
    median_conf = torch.quantile(subsample(conf[non_sky]), 0.5)
    align = ((conf >= median_conf) & non_sky & (metric_scaled > MIN_METRIC)
             & (depth > MIN_ANYVIEW))
    a, m = depth[align], metric_scaled[align]
    scale = torch.dot(m, a) / torch.clamp(torch.dot(a, a), min=1e-12)
    out_depth = depth * scale
    ext = extrinsics.clone()
    ext[:, :, 3] = ext[:, :, 3] * scale
    sky_fill = torch.clamp(torch.quantile(subsample(out_depth[non_sky]), 0.99), max=SKY_FILL_MAX)
    out_depth = torch.where(non_sky, out_depth, sky_fill)
    out_conf = torch.where(non_sky, conf, torch.ones_like(conf))
    return {'depth': out_depth, 'depth_conf': out_conf, 'extrinsics': ext, 'scale_factor': scale,
            'sky_fill': sky_fill, 'median_conf': median_conf, 'non_sky_mask': non_sky,
            'align_mask': align}
