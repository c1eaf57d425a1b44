"""A one-slot, latest-wins hand-over between the executor thread and the worker thread.

A camera produces frames at its own rate; the network runs at its own. Queueing would let latency
grow without bound under overload, so the mailbox holds at most one unprocessed item: `put`
replaces it (counted as a drop) and `take` blocks until an item or close. Memory stays flat.
"""
from __future__ import annotations

import threading
from typing import Any


class LatestFrameMailbox:
    """Thread-safe single-slot mailbox with drop counting."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._item: Any = None
        self._has_item = False
        self._closed = False
        self.puts = 0
        self.dropped = 0

    def put(self, item: Any) -> bool:
        """Offer an item; returns True when it replaced an unprocessed one (a drop)."""
        with self._cond:
            replaced = self._has_item
            self._item, self._has_item = item, True
            self.puts += 1
            if replaced:
                self.dropped += 1
            self._cond.notify()
            return replaced

    def take(self, timeout: float | None = None) -> Any:
        """Wait for the next item; None on timeout or when closed."""
        with self._cond:
            if not self._has_item and not self._closed:
                self._cond.wait(timeout)
            if not self._has_item:
                return None
            item, self._item, self._has_item = self._item, None, False
            return item

    def clear(self) -> int:
        """Discard a pending item (counted as a drop); returns how many were discarded (0 or 1)."""
        with self._cond:
            n = int(self._has_item)
            self._item, self._has_item = None, False
            self.dropped += n
            return n

    def close(self) -> None:
        """Wake every waiter; later `take` calls return None until `reopen`."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def reopen(self) -> None:
        """Accept items again after `close` (lifecycle re-activation)."""
        with self._cond:
            self._closed = False

    @property
    def pending(self) -> bool:
        """Whether an unprocessed item is waiting."""
        with self._cond:
            return self._has_item
