"""Public home of `DepthPredictor` / `DepthResult`: the DA3 frame path (pipelines/depth.py)."""
from tt_depth_ros.pipelines.depth import DepthPredictor, DepthResult

__all__ = ['DepthPredictor', 'DepthResult']
