"""Bad input and failed frames: every one counted in the statistics, logged at most once a period.

A camera with a wrong encoding sends the same problem at frame rate; one log line per reason per
`bad_input_log_period` (saying how many were suppressed since) keeps the log readable while
/diagnostics counts every frame (ros/runtime/diagnostics.py NodeStats).
"""
from __future__ import annotations

import time
import traceback
from typing import Callable

from tt_depth_ros.ros.runtime.diagnostics import NodeStats


class RejectReporter:
    """Counts skipped frames and processing errors; throttles their log lines per reason.

    Args:
        logger: the node's logger.
        stats: the node's statistics (every reject and error is counted there).
        period_s: current log period in seconds (a runtime parameter, read at each report).
    """

    def __init__(self, logger, stats: NodeStats, period_s: Callable[[], float]) -> None:
        self._logger, self._stats, self._period_s = logger, stats, period_s
        self._last_log: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def _due(self, reason: str) -> bool:
        now = time.monotonic()
        if now - self._last_log.get(reason, -1e9) < self._period_s():
            return False
        self._last_log[reason] = now
        return True

    def reject(self, reason: str, message: str) -> None:
        """Count a skipped frame; log it unless `reason` was logged less than a period ago."""
        self._stats.on_reject(reason, message)
        if self._due(reason):
            n = self._suppressed.pop(reason, 0)
            more = f' ({n} more since the last report)' if n else ''
            self._logger.warning(f'frame skipped [{reason}]: {message}{more}')
        else:
            self._suppressed[reason] = self._suppressed.get(reason, 0) + 1

    def warn(self, key: str, message: str) -> None:
        """Log a warning that is not a skipped frame, at most once a period per `key`."""
        if self._due(f'warn:{key}'):
            n = self._suppressed.pop(f'warn:{key}', 0)
            more = f' ({n} more since the last report)' if n else ''
            self._logger.warning(f'{message}{more}')
        else:
            self._suppressed[f'warn:{key}'] = self._suppressed.get(f'warn:{key}', 0) + 1

    def processing_failed(self, item, exc: BaseException) -> None:
        """The worker's error callback: count the error, log its traceback at most once a period."""
        self._stats.on_error(f'processing: {type(exc).__name__}: {exc}')
        if self._due('worker'):
            self._logger.error('frame processing failed: '
                               + ''.join(traceback.format_exception(exc)))
