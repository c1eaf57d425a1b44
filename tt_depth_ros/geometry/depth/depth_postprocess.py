"""Raw DA3 network maps -> the depth that is published or returned, in one place.

The DA3 frame path (pipelines/depth.py) runs these steps in this order (docs/design.md §2): metric
scale with the focal at network resolution (metric models only), sky marking, optional maximum
range, optional resampling to the camera resolution that never blends valid with invalid/sky
pixels, and the rectification border of a rectified input marked invalid on each grid.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from tt_depth_ros.geometry.camera.rectify import Rectifier
from tt_depth_ros.geometry.depth import metric_depth as md


def finish_depth(raw_depth: np.ndarray, sky_score: Optional[np.ndarray], K_net: np.ndarray, *,
                 sky_threshold: float, metric: bool = True,
                 sky_mode: str = 'inf', max_depth_m: Optional[float] = None,
                 out_hw: Optional[tuple[int, int]] = None,
                 border: Optional[Rectifier] = None) -> np.ndarray:
    """Published depth from the engine's raw maps.

    Args:
        raw_depth: (h, w) raw network depth at network resolution.
        sky_score: (h, w) sky head output, or None for a model without one.
        K_net: 3x3 intrinsics at network resolution (their focal sets the metric scale).
        metric: False for relative-depth models: no focal scaling.
        sky_threshold: Sky score at or above which a pixel is sky.
        sky_mode: 'inf', 'nan' or 'keep' (geometry.depth.metric_depth.apply_sky).
        max_depth_m: Depth beyond this becomes +Inf; None or 0 = no limit.
        out_hw: (H, W) to resample to (camera resolution), or None to stay on the network grid.
        border: The Rectifier of a rectified input: pixels that map from outside the source image
            are no scene. They are invalid (NaN) on the network grid before anything else, so the
            resample never blends them into valid depth, and again on the output grid, where sky
            marking and the resample may have written over them.
    """
    if border is not None:
        raw_depth = border.mark_invalid(raw_depth)
    if metric:
        depth = md.metric_depth(raw_depth, K_net[0, 0], K_net[1, 1])
    else:
        depth = np.array(raw_depth, dtype=np.float32)
    if sky_score is not None:
        depth = md.apply_sky(depth, sky_score, sky_threshold, sky_mode)
    if max_depth_m:
        depth = md.clip_max_depth(depth, max_depth_m)
    if out_hw is not None:
        depth = md.resize_depth(depth, out_hw)
    if border is not None:
        depth = border.mark_invalid(depth)
    return depth
