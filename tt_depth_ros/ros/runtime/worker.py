"""The single inference thread of a perception node: takes the latest frame, processes it.

The executor thread only validates messages and puts them in the mailbox; this thread runs the
engine and publishes. An exception in `process` is reported through `on_error` and the loop goes
on with the next frame — one bad frame never stops the node. `stop()` closes the mailbox and joins
the thread (bounded wait; a thread still inside the engine is reported, never abandoned silently);
the owner then clears the mailbox (and counts that drop).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tt_depth_ros.ros.runtime.mailbox import LatestFrameMailbox


class FrameWorker:
    """One daemon thread draining a LatestFrameMailbox into `process(item)`."""

    def __init__(self, mailbox: LatestFrameMailbox, process: Callable[[Any], None],
                 on_error: Callable[[Any, BaseException], None], name: str = 'frame-worker'):
        """Create (not start) the worker.

        Args:
            mailbox: the mailbox the executor fills.
            process: called in the worker thread for every frame taken.
            on_error: called with (item, exception) when `process` raises.
            name: thread name (visible in py-spy, leak checks).
        """
        self._mailbox = mailbox
        self._process = process
        self._on_error = on_error
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.busy = False

    def start(self) -> None:
        """Start the thread (idempotent while running)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._mailbox.reopen()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            item = self._mailbox.take(timeout=0.5)
            if item is None or self._stop.is_set():
                continue
            self.busy = True
            try:
                self._process(item)
            except Exception as exc:  # noqa: BLE001 - reported, the loop must survive
                self._on_error(item, exc)
            finally:
                self.busy = False

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop and join; False if the thread is still alive after `timeout` seconds.

        A thread that did not stop (inside a long prepare/infer) is kept: `running` stays true,
        the owner must not release the engine, and a later `stop` waits for it again.
        """
        self._stop.set()
        self._mailbox.close()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        return True

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()
