"""Public home of `Dust3rPredictor` / `PairResult`: DUSt3R two views (pipelines/dust3r.py)."""
from tt_depth_ros.pipelines.dust3r import Dust3rPredictor, PairResult, load_image

__all__ = ['Dust3rPredictor', 'PairResult', 'load_image']
