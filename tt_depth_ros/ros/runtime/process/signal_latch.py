"""SIGINT/SIGTERM for a node process, async-signal-safe: a flag, a counter and a byte on a pipe.

`threading.Event.set()` in a signal handler can deadlock: Python runs the handler in the main
thread, and a second signal arriving while the first handler holds the Event's lock re-enters it
(`ros2 launch` Ctrl-C delivers such bursts: the terminal signals the process group and launch
forwards its own). Here the C-level handler writes the signal number to a non-blocking pipe
(`signal.set_wakeup_fd`) and the Python handler only assigns plain attributes: no lock, no I/O,
nothing that can block. The main thread waits on the pipe with `select`. After teardown,
`ignore_further()` sets SIG_IGN, which interpreter finalization keeps (a late signal would
otherwise kill the exiting process with rc -2).
"""
from __future__ import annotations

import contextlib
import os
import select
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalLatch:
    """Install handlers for SIGINT/SIGTERM at construction (main thread only)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, _frame) -> None:
        # Runs in the main thread between two bytecodes: plain assignments only.
        self.count += 1
        if self.first is None:
            self.first = signum

    def wait(self, timeout: float) -> bool:
        """Block up to `timeout` s for a signal; True once one has arrived."""
        if self.first is not None:
            return True
        ready, _, _ = select.select([self._r], [], [], timeout)
        if ready:
            with contextlib.suppress(BlockingIOError):
                data = os.read(self._r, 64)
                if data and self.first is None:
                    self.first = data[0]   # the Python handler may not have run yet
        return self.first is not None

    @property
    def name(self) -> str:
        """Name of the first signal, e.g. 'SIGINT' ('' before any)."""
        return signal.Signals(self.first).name if self.first else ''

    def ignore_further(self) -> None:
        """From now on SIGINT/SIGTERM are ignored (teardown and interpreter exit)."""
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        signal.set_wakeup_fd(-1)
