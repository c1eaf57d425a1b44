"""Python API without ROS: DA3 `DepthPredictor` / `MultiViewPredictor`; DUSt3R in `api.pair`.

`DepthPredictor`: one image, any DA3 model. `MultiViewPredictor`: DA3 any-view / NESTED, N images
of one scene -> per-view depth and cameras. Thin re-exports of pipelines/. May import:
pipelines, engines, geometry, models. Never rclpy, ros or tools.
"""
from tt_depth_ros.api.depth import DepthPredictor, DepthResult
from tt_depth_ros.api.multiview import MultiViewPredictor, MultiViewResult

__all__ = ['DepthPredictor', 'DepthResult', 'MultiViewPredictor', 'MultiViewResult',
           'Dust3rPredictor', 'PairResult']


def __getattr__(name: str):
    # DUSt3R's API lives in api/pair.py (its own owner); imported on first use only.
    if name in ('Dust3rPredictor', 'PairResult'):
        from tt_depth_ros.api import pair

        return getattr(pair, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
