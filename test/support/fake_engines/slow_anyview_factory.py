"""The pair node with a slow stand-in for engines.factory.build_engine (signal-during-build test).

`python -m support.fake_engines.slow_anyview_factory --ros-args ...` starts the pair node through
its one start path (ros/entry_points.py) after replacing the factory's `build_engine`, so a DA3
any-view model takes the node's real (non-plugin) build path. The stand-in waits 60 s on the
cancellation token the node passes; a build that was given none cannot be cancelled and sleeps, as
one long C call would. It then returns the any-view scene double.
"""
import time

import tt_depth_ros.engines.factory as factory
from support.fake_engines.scene_anyview import SceneAnyviewEngine
from tt_depth_ros.ros.entry_points import pair_node

BUILD_S = 60.0


def slow_build_engine(model, *, num_views=None, cancel=None, **kwargs):
    """A 60 s build of `model` that stops when `cancel` (if given) is cancelled."""
    print(f'slow factory build: started ({model}, num_views={num_views}, '
          f'cancellable={cancel is not None})', flush=True)
    if cancel is None:
        time.sleep(BUILD_S)
    else:
        cancel.sleep(BUILD_S)
    return SceneAnyviewEngine(views=num_views or 2)


factory.build_engine = slow_build_engine

if __name__ == '__main__':
    raise SystemExit(pair_node())
