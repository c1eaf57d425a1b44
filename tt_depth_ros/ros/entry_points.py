"""Console scripts of the nodes (what `ros2 run` / `ros2 launch` start): signals, then imports.

Importing a node module loads rclpy, numpy and OpenCV, which takes up to a second; Python's default
SIGINT handling in that window raises KeyboardInterrupt (a traceback, exit code 1), exactly when
a user presses Ctrl-C on a launch that has just started. The latch is installed before those imports
and handed to `run_lifecycle_node`, so a signal at any point after these few lines ends the process
cleanly with exit 0 (the node is created, skips autostart and shuts down at once).
These are the nodes' one start path: `python -m tt_depth_ros.ros.depth` / `...ros.pair` (each
package's `__main__.py`) come here too, with the latch likewise installed first.
"""
from __future__ import annotations

from typing import NoReturn

from tt_depth_ros.ros.runtime.process.signal_latch import SignalLatch


def depth_node() -> NoReturn:
    """`depth_node`: the depth node with its signal latch installed before the heavy imports."""
    latch = SignalLatch()
    from tt_depth_ros.ros.depth.node import DepthNode
    from tt_depth_ros.ros.runtime.process.node_runner import run_lifecycle_node
    return run_lifecycle_node(DepthNode, latch=latch)


def pair_node() -> NoReturn:
    """`pair_node`: the pair node with its signal latch installed before the heavy imports."""
    latch = SignalLatch()
    from tt_depth_ros.ros.pair.node import PairNode
    from tt_depth_ros.ros.runtime.process.node_runner import run_lifecycle_node
    return run_lifecycle_node(PairNode, latch=latch)
