"""Progress of a batch run: a bar on a terminal, else one plain log line per finished bag.

Both say bags done of all, frames out, the frame rate and the ETA, updated as bags finish (in
any order) for the local and the Ray runner. On a terminal (stderr is a TTY) a `tqdm` bar over
the bags carries the frames and their rate; elsewhere (a CI log, a cluster job's output, a pipe)
each bag adds one log line, so the record reads the same everywhere. The ETA assumes the bags
left take as long on average as the bags done so far.
"""
from __future__ import annotations

import logging
import shutil
import sys
import time

LOG = logging.getLogger('tt_depth_batch')


class Progress:
    """Counts finished bags and frames; `done(row)` shows the run's state after each bag.

    Args:
        total_bags: bags in the run.
        stream: where the bar goes (default stderr); a bar only when it is a TTY.
    """

    def __init__(self, total_bags: int, stream=None) -> None:
        self.total = total_bags
        self.bags = self.frames = 0
        self._t0 = time.monotonic()
        stream = stream or sys.stderr
        self._bar = None
        if stream.isatty():
            from tqdm import tqdm
            # tqdm hides its bar on a terminal that reports a size of 0 (a fresh pty, some CI
            # runners): COLUMNS / LINES, else the reported size, else 80 x 24
            size = shutil.get_terminal_size()
            self._bar = tqdm(total=total_bags, unit='bag', file=stream, ncols=size.columns,
                             nrows=size.lines, desc='tt-depth-batch', smoothing=0.0)

    def done(self, row: dict) -> None:
        """One bag finished (`row` as process_bag returns it): show where the run stands."""
        self.bags += 1
        self.frames += row['frames_out'] if row['status'] == 'ok' else 0
        elapsed = time.monotonic() - self._t0
        rate = self.frames / elapsed if elapsed > 0 else 0.0
        if self._bar is not None:
            self._bar.set_postfix_str(f'{self.frames} frames, {rate:.1f} frames/s, last '
                                      f'{row["bag"]} {row["status"]}', refresh=False)
            self._bar.update(1)
            return
        left = self.total - self.bags
        eta = f'ETA {elapsed / self.bags * left:.0f} s' if left else 'done'
        LOG.info(f'progress: {self.bags}/{self.total} bags, {self.frames} frames out, '
                 f'{rate:.1f} frames/s, {elapsed:.0f} s elapsed, {eta} '
                 f'(last: {row["bag"]} {row["status"]})')

    def close(self) -> None:
        """End the bar (the summary table follows it); nothing for plain lines."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
