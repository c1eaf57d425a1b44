"""A small bounded cache of messages by exact header stamp, with a bounded wait for one stamp.

The pair node's metric-depth scale needs the depth image of exactly the reference view's stamp;
that image (e.g. the depth node's output) usually arrives a little after the camera image, so the
worker may wait for it — never longer than a bound, never holding more than `capacity` items.
Both nodes pair each image with the CameraInfo of its stamp the same way
(ros/runtime/inputs/camera_info_sync.py).
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

    def nearest(self, stamp_ns: int, tolerance_ns: int, wait_s: float = 0.0):
        """(stamp, item) for this stamp exactly, else the nearest within `tolerance_ns`; or None.

        Waits up to `wait_s` until the exact stamp is there or a NEWER one arrived (a source
        publishing in stamp order will then never deliver the exact stamp), so both arrival
        orders work: item before the query, or item shortly after it.
        """
        stamp_ns = int(stamp_ns)
        with self._cond:
            if wait_s > 0:
                self._cond.wait_for(lambda: stamp_ns in self._items or any(
                    s > stamp_ns for s in self._items), wait_s)
            if stamp_ns in self._items:
                return stamp_ns, self._items[stamp_ns]
            best = min(self._items, key=lambda s: abs(s - stamp_ns), default=None)
            if best is None or abs(best - stamp_ns) > tolerance_ns:
                return None
            return best, self._items[best]

    def latest(self):
        """(stamp, item) of the newest insertion, or None when empty."""
        with self._cond:
            if not self._items:
                return None
            stamp = next(reversed(self._items))
            return stamp, self._items[stamp]

    def clear(self) -> None:
        with self._cond:
            self._items.clear()

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)
