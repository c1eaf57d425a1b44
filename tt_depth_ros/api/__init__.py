"""Python API without ROS: `DepthPredictor` (DA3 metric depth); DUSt3R pairs in `api.pair`."""
from tt_depth_ros.api.depth import DepthPredictor, DepthResult

__all__ = ['DepthPredictor', 'DepthResult', 'Dust3rPredictor', 'PairResult']


def __getattr__(name: str):
    # DUSt3R's API lives in api/pair.py (its own owner); imported on first use only.
    if name in ('Dust3rPredictor', 'PairResult'):
        from tt_depth_ros.api import pair

        return getattr(pair, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
