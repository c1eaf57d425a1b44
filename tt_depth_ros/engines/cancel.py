"""A cancellation token for slow engine builds (download, weight loading, compile, trace).

A node's configure runs in the executor thread; when SIGINT/SIGTERM arrives the process's main
thread cancels the token, and the build stops at its next checkpoint (`check`) with
`BuildCancelled` instead of finishing work nobody will use. Steps that cannot be interrupted
(one blocking C call) are simply not checked inside; the caller bounds its own wait.
"""
from __future__ import annotations

import threading


class BuildCancelled(RuntimeError):
    """The build was cancelled (the process is shutting down); nothing is wrong with the inputs."""


class CancelToken:
    """One-way flag: `cancel()` from any thread (not a signal handler), `check()` in builds."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Request cancellation (idempotent)."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    def check(self, stage: str = '') -> None:
        """Raise BuildCancelled when cancelled; `stage` names where (for the log)."""
        if self._event.is_set():
            raise BuildCancelled(f'cancelled {stage}'.strip())

    def sleep(self, seconds: float) -> None:
        """Sleep up to `seconds`, returning early (raising BuildCancelled) on cancellation."""
        if self._event.wait(seconds):
            raise BuildCancelled('cancelled while waiting')
