"""A depth map on the DUSt3R network grid back at camera resolution (pair node, `camera` output).

The network grid is the camera image resized to (Wr, Hr) and then cropped (or padded) to the
window `box_ltrb`. Going back: the grid is placed into its window on a resized-size canvas (pixels
the crop removed stay NaN = no data; padding is dropped), then the canvas is resampled to the
camera size with the depth node's invalid-aware resize (metric_depth.resize_depth: never blends
valid depth with NaN/Inf). The matching intrinsics are `dust3r_preprocess.unmap_intrinsics`.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.geometry.depth.metric_depth import resize_depth
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import Dust3rPlan


def grid_to_camera(grid: np.ndarray, plan: Dust3rPlan) -> np.ndarray:
    """(h, w) map on the network grid -> (H1, W1) float32 at the plan's camera resolution."""
    grid = np.asarray(grid, dtype=np.float32)
    if grid.shape != plan.net_hw:
        raise ValueError(f'grid is {grid.shape}, the plan expects {plan.net_hw}')
    wr, hr = plan.resized_wh
    left, top, right, bottom = plan.box_ltrb
    canvas = np.full((hr, wr), np.nan, dtype=np.float32)
    x0, y0, x1, y1 = max(left, 0), max(top, 0), min(right, wr), min(bottom, hr)
    canvas[y0:y1, x0:x1] = grid[y0 - top:y1 - top, x0 - left:x1 - left]
    w1, h1 = plan.src_wh
    return resize_depth(canvas, (h1, w1))
