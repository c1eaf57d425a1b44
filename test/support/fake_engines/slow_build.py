"""Engine builds that take long (a download, a compile) for the signal-during-configure tests.

Selected through `engine_plugin` at process start only. `cancellable` waits on the node's
cancellation token (as a build step that checks it would); `blocking` sleeps in one call nobody
can interrupt (as one long C call would). Both then return the known-depth double.
"""
from __future__ import annotations

import time

from support.fake_engines.known_depth import KnownDepthEngine


def cancellable(delay_s: float = 60.0, cancel=None) -> KnownDepthEngine:
    """A build of `delay_s` seconds that stops when the token is cancelled."""
    print('slow build: started (cancellable)', flush=True)
    cancel.sleep(delay_s)
    return KnownDepthEngine()


def blocking(delay_s: float = 60.0) -> KnownDepthEngine:
    """A build of `delay_s` seconds that cannot be interrupted."""
    print('slow build: started (blocking)', flush=True)
    time.sleep(delay_s)
    return KnownDepthEngine()
