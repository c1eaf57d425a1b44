"""The node's log lines offline: an rclpy-logger face over `logging`, with rclpy's `once=True`.

Throttled reports (bad input, a PnP failure that skips nothing) go through the node's own
RejectReporter (ros/runtime/rejects.py), which throttles per reason or key; this logger only
prefixes and forwards.
"""
from __future__ import annotations

import logging


class OfflineLogger:
    """`info`, `warning`, `error` of an rclpy logger, to a `logging.Logger`, each line prefixed."""

    def __init__(self, prefix: str, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger('tt_depth_batch')
        self._prefix, self._once = prefix, set()

    def _emit(self, level: int, msg: str, once: bool) -> None:
        if once:
            if msg in self._once:
                return
            self._once.add(msg)
        self._log.log(level, f'{self._prefix}{msg}')

    def info(self, msg: str, once: bool = False) -> None:
        self._emit(logging.INFO, msg, once)

    def warning(self, msg: str, once: bool = False) -> None:
        self._emit(logging.WARNING, msg, once)

    def error(self, msg: str, once: bool = False) -> None:
        self._emit(logging.ERROR, msg, once)
