"""Approximate-time pairing of two camera streams by header stamp (stereo mode of the pair node).

Plays the role of message_filters' ApproximateTimeSynchronizer (not available as a wheel), reduced
to two streams and made explicit about what it throws away: every frame that leaves without a
partner is counted per side, duplicates and stamps going backwards are counted, and queues are
bounded. Pure Python: no rclpy, so it is unit-tested alone; thread-safe so any executor may call it.

Policy (greedy, lowest latency): when a frame arrives it is matched with the closest-in-time queued
frame of the other stream; if that is within `tolerance_s` the pair is emitted at once. A pair never
goes back in time: after emitting (a, b) every queued frame at or before a / b is discarded
(counted as unpaired). Frames of one side older than `newest_other - tolerance` can never pair any
more and are discarded too. A stamp that goes backwards on a side (a bag loop, a clock jump) is a
reset, counted for that side: its queue is cleared, and so are the other side's frames ahead of
the new time (old timeline); the other side's frames already on the new timeline are kept, so two
looping streams pair again at once. A repeated stamp on one side is a duplicate and is dropped.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from tt_depth_ros.ros.msgs.stamps import NS_PER_S


class Pair(NamedTuple):
    """Two frames taken at (approximately) the same time; `first` is camera 1 (the reference)."""

    first: Any
    second: Any
    stamp_ns_1: int
    stamp_ns_2: int

    @property
    def skew_s(self) -> float:
        """Stamp of camera 2 minus stamp of camera 1, seconds."""
        return (self.stamp_ns_2 - self.stamp_ns_1) / NS_PER_S


@dataclass(frozen=True)
class PairingStats:
    """Counters for diagnostics; tuples are indexed by side (0 = camera 1, 1 = camera 2)."""

    pairs: int
    received: tuple[int, int]
    unpaired: tuple[int, int]
    resets: tuple[int, int]
    duplicates: tuple[int, int]
    queued: tuple[int, int]
    last_stamp_ns: tuple[int | None, int | None]
    last_skew_s: float | None


class ApproxTimePairer:
    """Pairs frames of two streams whose stamps differ by at most `tolerance_s`.

    Args:
        tolerance_s: largest |stamp_1 - stamp_2| accepted as one pair (seconds, >= 0).
        queue_size: frames kept per side while waiting for a partner (>= 1); the oldest beyond it
            is discarded and counted as unpaired.
    """

    def __init__(self, tolerance_s: float, queue_size: int = 5):
        if not tolerance_s >= 0.0:  # also rejects NaN
            raise ValueError(f'tolerance_s must be >= 0 seconds, got {tolerance_s}')
        if int(queue_size) < 1:
            raise ValueError(f'queue_size must be >= 1, got {queue_size}')
        self._tol = int(round(tolerance_s * NS_PER_S))
        self._size = int(queue_size)
        self._lock = threading.Lock()
        self._queues: tuple[deque, deque] = (deque(), deque())
        self._last: list[int | None] = [None, None]
        self._received = [0, 0]
        self._unpaired = [0, 0]
        self._resets = [0, 0]
        self._dups = [0, 0]
        self._pairs = 0
        self._last_skew: float | None = None

    @property
    def tolerance_s(self) -> float:
        return self._tol / NS_PER_S

    def push(self, side: int, stamp_ns: int, item: Any) -> Pair | None:
        """Offer a frame of stream `side` (0 or 1); return the pair it completes, if any."""
        if side not in (0, 1):
            raise ValueError(f'side must be 0 or 1, got {side!r}')
        stamp_ns = int(stamp_ns)
        with self._lock:
            self._received[side] += 1
            last = self._last[side]
            if last is not None and stamp_ns == last:
                self._dups[side] += 1
                return None
            if last is not None and stamp_ns < last:
                self._resets[side] += 1
                self._discard_on_reset(side, stamp_ns)
            self._last[side] = stamp_ns
            own, other = self._queues[side], self._queues[1 - side]
            own.append((stamp_ns, item))
            match = self._closest(other, stamp_ns)
            if match is not None and abs(other[match][0] - stamp_ns) <= self._tol:
                other_stamp, other_item = other[match]
                self._discard_upto(side, stamp_ns)
                self._discard_upto(1 - side, other_stamp)
                self._pairs += 1
                if side == 0:
                    pair = Pair(item, other_item, stamp_ns, other_stamp)
                else:
                    pair = Pair(other_item, item, other_stamp, stamp_ns)
                self._last_skew = pair.skew_s
                return pair
            # Frames of the other side this old can no longer meet a partner (ours only grow).
            self._discard_before(1 - side, stamp_ns - self._tol)
            while len(own) > self._size:
                own.popleft()
                self._unpaired[side] += 1
            return None

    def reset(self) -> None:
        """Forget queued frames and last stamps (e.g. on deactivate); counters are kept."""
        with self._lock:
            self._discard_all()
            self._last = [None, None]

    @property
    def stats(self) -> PairingStats:
        with self._lock:
            return PairingStats(
                pairs=self._pairs, received=tuple(self._received),
                unpaired=tuple(self._unpaired), resets=tuple(self._resets),
                duplicates=tuple(self._dups),
                queued=(len(self._queues[0]), len(self._queues[1])),
                last_stamp_ns=tuple(self._last), last_skew_s=self._last_skew)

    # -- internals (lock held) --------------------------------------------------------------
    @staticmethod
    def _closest(queue: deque, stamp_ns: int) -> int | None:
        best, best_dt = None, None
        for i, (s, _) in enumerate(queue):
            dt = abs(s - stamp_ns)
            if best_dt is None or dt < best_dt:
                best, best_dt = i, dt
        return best

    def _discard_upto(self, side: int, stamp_ns: int) -> None:
        """Remove frames at or before `stamp_ns`; the one exactly at it is the paired one."""
        queue = self._queues[side]
        while queue and queue[0][0] <= stamp_ns:
            s, _ = queue.popleft()
            if s != stamp_ns:
                self._unpaired[side] += 1

    def _discard_before(self, side: int, stamp_ns: int) -> None:
        queue = self._queues[side]
        while queue and queue[0][0] < stamp_ns:
            queue.popleft()
            self._unpaired[side] += 1

    def _discard_on_reset(self, side: int, stamp_ns: int) -> None:
        # New timeline on `side`: its queue is old; the other side keeps only frames that can
        # belong to the new timeline (not ahead of it), e.g. when that side already looped.
        self._unpaired[side] += len(self._queues[side])
        self._queues[side].clear()
        other = self._queues[1 - side]
        keep = [(s, it) for s, it in other if s <= stamp_ns + self._tol]
        self._unpaired[1 - side] += len(other) - len(keep)
        other.clear()
        other.extend(keep)

    def _discard_all(self) -> None:
        for side in (0, 1):
            self._unpaired[side] += len(self._queues[side])
            self._queues[side].clear()
