"""Progress of a batch run: one plain log line per finished bag (bags, frames, rate, ETA).

The same lines for the local and the Ray runner, written as bags finish (in any order); they go
to the log (stderr), so they read the same on a terminal, in a CI log or a cluster job's output.
The ETA assumes the bags left take as long on average as the bags done so far.
"""
from __future__ import annotations

import logging
import time

LOG = logging.getLogger('tt_depth_batch')


class Progress:
    """Counts finished bags and frames; `done(row)` logs the run's state after each bag."""

    def __init__(self, total_bags: int) -> None:
        self.total = total_bags
        self.bags = self.frames = 0
        self._t0 = time.monotonic()

    def done(self, row: dict) -> None:
        """One bag finished (`row` as process_bag returns it): log where the run stands."""
        self.bags += 1
        self.frames += row['frames_out'] if row['status'] == 'ok' else 0
        elapsed = time.monotonic() - self._t0
        rate = self.frames / elapsed if elapsed > 0 else 0.0
        left = self.total - self.bags
        eta = f'ETA {elapsed / self.bags * left:.0f} s' if left else 'done'
        LOG.info(f'progress: {self.bags}/{self.total} bags, {self.frames} frames out, '
                 f'{rate:.1f} frames/s, {elapsed:.0f} s elapsed, {eta} '
                 f'(last: {row["bag"]} {row["status"]})')
