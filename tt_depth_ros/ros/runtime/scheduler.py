"""Latest-frame mailboxes of several cameras and the fair order in which the worker takes them.

One engine serves every camera of a node (ros/depth/camera.py). Each camera has a one-slot,
latest-wins mailbox (ros/runtime/mailbox.py's rule: a new frame replaces an unprocessed one and
counts as that camera's drop; nothing queues), and the worker takes the next frame round-robin over
the cameras that have a fresh one: after camera k, the scan starts at the camera after k. A camera
with `priority` N gets up to N turns in a row when it has fresh frames; one with `max_rate_hz` is
skipped until 1/max_rate_hz has passed since its last frame was taken (its newest frame waits in
its slot). So under overload no camera starves, and a frame waits at most for one turn of every
other camera: with N cameras of priority 1 its latency stays within N + 1 engine periods.

Same interface as LatestFrameMailbox (`put`, `take`, `clear`, `close`, `reopen`, `pending`) so
the lifecycle base and the worker take either; `take_ready` hands the worker the other cameras'
frames waiting at that moment (batching, pipelining), in the same fair order. Thread-safe.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class SlotPolicy:
    """A camera's share of the worker: `priority` turns per round, at most `max_rate_hz`."""

    priority: int = 1
    max_rate_hz: float = 0.0


class _Slot:
    __slots__ = ('policy', 'item', 'full', 'puts', 'dropped', 'taken', 'last_taken', 'streak')

    def __init__(self, policy: SlotPolicy) -> None:
        self.policy = policy
        self.item: Any = None
        self.full = False
        self.puts = self.dropped = self.taken = 0
        self.last_taken = -1e18
        self.streak = 0          # turns in a row this round

    def ready_at(self) -> float:
        rate = self.policy.max_rate_hz
        return self.last_taken + 1.0 / rate if rate > 0 else -1e18


class CameraMailboxes:
    """One latest-frame slot per camera key and a fair (round-robin) take over them.

    Args:
        key_of: the camera key of an item (`put` files it under that key).
        clock: monotonic seconds (tests may pass a fake).
    """

    def __init__(self, key_of: Callable[[Any], str],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._key_of, self._clock = key_of, clock
        self._cond = threading.Condition()
        self._slots: dict[str, _Slot] = {}
        self._order: list[str] = []
        self._cursor = 0
        self._closed = False

    def configure(self, policies: dict[str, SlotPolicy]) -> None:
        """The cameras, in round-robin order, and their policies (forgets pending frames)."""
        with self._cond:
            self._slots = {k: _Slot(p) for k, p in policies.items()}
            self._order = list(policies)
            self._cursor = 0

    def _slot(self, key: str) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:     # an unconfigured key: its own slot at the end of the round
            slot = self._slots[key] = _Slot(SlotPolicy())
            self._order.append(key)
        return slot

    def put(self, item: Any) -> bool:
        """File `item` under its camera; True when it replaced an unprocessed one (a drop)."""
        with self._cond:
            slot = self._slot(self._key_of(item))
            replaced = slot.full
            slot.item, slot.full = item, True
            slot.puts += 1
            slot.dropped += int(replaced)
            self._cond.notify()
            return replaced

    def _pick(self, now: float, skip: frozenset = frozenset()) -> Optional[str]:
        """The next camera with a frame it may hand over now, from the cursor on."""
        n = len(self._order)
        for i in range(n):
            key = self._order[(self._cursor + i) % n]
            slot = self._slots[key]
            if slot.full and key not in skip and slot.ready_at() <= now:
                return key
        return None

    def _take_key(self, key: str, now: float) -> Any:
        slot = self._slots[key]
        item, slot.item, slot.full = slot.item, None, False
        slot.taken += 1
        slot.last_taken = now
        slot.streak += 1
        index = self._order.index(key)
        if slot.streak >= slot.policy.priority:
            slot.streak = 0
            self._cursor = (index + 1) % len(self._order)
        else:
            self._cursor = index
        return item

    def take(self, timeout: Optional[float] = None) -> Any:
        """Wait for the next camera's frame in the fair order; None on timeout or when closed."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                now = self._clock()
                key = None if self._closed else self._pick(now)
                if key is not None:
                    return self._take_key(key, now)
                if self._closed:
                    return None
                waits = [s.ready_at() - now for s in self._slots.values() if s.full]
                wait = min(waits) if waits else None
                if deadline is not None:
                    left = deadline - now
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def take_ready(self, limit: int, accept: Callable[[Any], bool] = lambda item: True) -> list:
        """Up to `limit` more frames that may go now, in the fair order; never waits.

        `accept(item)` False leaves a frame in its slot (e.g. another network shape than the
        batch being formed); each camera gives at most one frame.
        """
        out: list = []
        with self._cond:
            if self._closed:
                return out
            now = self._clock()
            seen: set[str] = set()
            while len(out) < limit:
                key = self._pick(now, frozenset(seen))
                if key is None:
                    break
                seen.add(key)
                if accept(self._slots[key].item):
                    out.append(self._take_key(key, now))
        return out

    def clear(self) -> int:
        """Discard every pending frame (each counted as its camera's drop); returns how many."""
        with self._cond:
            n = 0
            for slot in self._slots.values():
                if slot.full:
                    slot.item, slot.full = None, False
                    slot.dropped += 1
                    n += 1
            return n

    def close(self) -> None:
        """Wake every waiter; later `take` calls return None until `reopen`."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def reopen(self) -> None:
        """Accept takes again after `close` (lifecycle re-activation)."""
        with self._cond:
            self._closed = False

    @property
    def pending(self) -> bool:
        """Whether any camera has an unprocessed frame."""
        with self._cond:
            return any(s.full for s in self._slots.values())

    def counters(self, key: str) -> dict[str, int]:
        """A camera's counts: offered ('puts'), dropped unprocessed, taken by the worker."""
        with self._cond:
            slot = self._slots.get(key)
            if slot is None:
                return {'puts': 0, 'dropped': 0, 'taken': 0}
            return {'puts': slot.puts, 'dropped': slot.dropped, 'taken': slot.taken}
