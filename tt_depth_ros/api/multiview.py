"""Public home of `MultiViewPredictor` / `MultiViewResult` (pipelines/multiview.py)."""
from tt_depth_ros.pipelines.multiview import MultiViewPredictor, MultiViewResult, w2c_to_c2w

__all__ = ['MultiViewPredictor', 'MultiViewResult', 'w2c_to_c2w']
