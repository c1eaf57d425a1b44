"""A small bounded cache of messages by exact header stamp, with a bounded wait for one stamp.

The pair node's metric-depth scale needs the depth image of exactly the reference view's stamp;
that image (e.g. the depth node's output) usually arrives a little after the camera image, so the
worker may wait for it — never longer than a bound, never holding more than `capacity` items.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class StampedCache:
    """Thread-safe stamp -> item map keeping the newest `capacity` insertions.

    Args:
        capacity: items kept (oldest insertions evicted first).
    """

    def __init__(self, capacity: int = 30):
        if int(capacity) < 1:
            raise ValueError(f'capacity must be >= 1, got {capacity}')
        self._cap = int(capacity)
        self._items: OrderedDict[int, Any] = OrderedDict()
        self._cond = threading.Condition()

    def put(self, stamp_ns: int, item: Any) -> None:
        """Store `item` under `stamp_ns` and wake waiters."""
        with self._cond:
            self._items[int(stamp_ns)] = item
            self._items.move_to_end(int(stamp_ns))
            while len(self._items) > self._cap:
                self._items.popitem(last=False)
            self._cond.notify_all()

    def get(self, stamp_ns: int, wait_s: float = 0.0) -> Any | None:
        """The item with exactly this stamp, waiting up to `wait_s` seconds; None if absent."""
        with self._cond:
            if wait_s > 0:
                self._cond.wait_for(lambda: int(stamp_ns) in self._items, wait_s)
            return self._items.get(int(stamp_ns))

    def clear(self) -> None:
        with self._cond:
            self._items.clear()

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)
