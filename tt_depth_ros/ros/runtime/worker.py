"""The single inference thread of a perception node: takes the latest frame, processes it.

The executor thread only validates messages and puts them in the mailbox; this thread runs the
engine and publishes. An exception in `process` is reported through `on_error` and the loop goes
on with the next frame — one bad frame never stops the node. `stop()` closes the mailbox and joins
the thread (bounded wait; a thread still inside the engine is reported, never abandoned silently);
the owner then clears the mailbox (and counts that drop).

A node whose frames split into `start` (hand to the engine) and `finish` (collect, publish) gives
`FrameStages` instead of one `process`: the worker then keeps up to `in_flight` starts unfinished
while more frames are waiting (an engine with two command queues uploads the next camera's frame
while the device runs this one), finishes everything at once when nothing waits (no frame waits
for a later one), and, with `batch` > 1, starts the frames every camera has waiting in one call
(one forward for same-shape frames, ros/runtime/scheduler.py `take_ready`). Frames are finished in
the order they were started. At stop, frames still in flight go to `discard` (collected from the
engine, published nowhere), so the engine is idle when the owner releases it.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

from tt_depth_ros.ros.runtime.mailbox import LatestFrameMailbox


@dataclass(frozen=True)
class FrameStages:
    """A node's frame work in two halves (module docstring).

    Attributes:
        start: items -> their started frames (skipped items left out); reports its own
            per-item failures.
        finish: one started frame -> published.
        discard: one started frame at stop -> collected, nothing published.
        in_flight: starts that may be unfinished while more frames wait (2: two command queues).
        batch: frames taken together (1 = one camera's frame per start).
    """

    start: Callable[[list], list]
    finish: Callable[[Any], None]
    discard: Callable[[Any], None]
    in_flight: int = 1
    batch: int = 1


class FrameWorker:
    """One daemon thread draining a LatestFrameMailbox into `process(item)` (or `stages`)."""

    def __init__(self, mailbox: LatestFrameMailbox, process: Callable[[Any], None],
                 on_error: Callable[[Any, BaseException], None], name: str = 'frame-worker',
                 stages: Optional[FrameStages] = None):
        """Create (not start) the worker.

        Args:
            mailbox: the mailbox the executor fills (`take_ready` too when stages batch).
            process: called in the worker thread for every frame taken (without `stages`).
            on_error: called with (item, exception) when `process` raises.
            name: thread name (visible in py-spy, leak checks).
            stages: start/finish halves instead of `process` (module docstring).
        """
        self._mailbox = mailbox
        self._process = process
        self._on_error = on_error
        self._name = name
        self._stages = stages
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.busy = False

    def start(self) -> None:
        """Start the thread (idempotent while running)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._mailbox.reopen()
        target = self._run if self._stages is None else self._run_stages
        self._thread = threading.Thread(target=target, name=self._name, daemon=True)
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

    def _call(self, fn, arg) -> Any:
        try:
            return fn(arg)
        except Exception as exc:  # noqa: BLE001 - reported, the loop must survive
            self._on_error(arg, exc)
            return None

    def _run_stages(self) -> None:
        st = self._stages
        flight: deque = deque()      # one list of started frames per start call, oldest first
        try:
            while not self._stop.is_set():
                item = self._mailbox.take(timeout=0.0 if flight else 0.5)
                if self._stop.is_set():
                    break
                if item is not None:
                    self.busy = True
                    items = [item]
                    if st.batch > 1:
                        items += self._mailbox.take_ready(st.batch - 1)
                    started = self._call(st.start, items)
                    if started:
                        flight.append(started)
                keep = st.in_flight - 1 if item is not None else 0
                while len(flight) > keep:
                    for frame in flight.popleft():
                        self._call(st.finish, frame)
                self.busy = bool(flight)
        finally:
            for group in flight:
                for frame in group:
                    self._call(st.discard, frame)
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
