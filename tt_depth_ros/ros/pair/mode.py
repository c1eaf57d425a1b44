"""What a mode of the pair node is (ros/pair/stereo.py, ros/pair/temporal.py): its inputs and work.

The node (ros/pair/node.py) creates its mode at configure, lets it subscribe at activate and hands
it every item the worker takes from the mailbox; the mode returns what it published.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from tt_depth_ros.ros.pair.host import PairHost
from tt_depth_ros.ros.pair.outputs import PairPublishers
from tt_depth_ros.ros.pair.steps import PairSteps


class Published(NamedTuple):
    """What one processed item put out: the header of its outputs and its stage times (s)."""

    header: Any
    stages: dict


class PairMode:
    """One mode's inputs and per-item work on the configured node.

    Args:
        node: the node it runs on (ros/pair/host.py `PairHost`).
        steps: the shared per-pair steps on the node's pipeline.
        outputs: the node's publishers.
        metric_for: (stamp_ns, wait=True) -> metric depth image with that stamp, or None.
    """

    def __init__(self, node: PairHost, steps: PairSteps, outputs: PairPublishers,
                 metric_for: Callable) -> None:
        self._node, self._steps, self._out, self._metric_for = node, steps, outputs, metric_for

    def create_inputs(self) -> None:
        """Subscribe the mode's inputs (activate)."""
        raise NotImplementedError

    def process(self, item) -> Published | None:
        """Worker: one item to its outputs; None when it was skipped (already reported)."""
        raise NotImplementedError

    def diagnostics(self) -> dict:
        """The mode's own /diagnostics figures (beyond the shared ones)."""
        return {}
