"""The real tiny DA3 engine whose process SIGKILLs itself once, mid-bag (the Ray retry test).

`tiny_dies_once(weights_path, marker, after_frames)` builds what the node builds for
da3metric-tiny on torch-cpu, and on the `after_frames`-th inference of the first process to get
there (it creates `marker`, atomically) kills its own process with SIGKILL, as the kernel's OOM
killer would: no Python cleanup, a half-written output left behind. Every other process (the
restarted actor, the other actors, any run once `marker` exists) runs the engine unchanged, so
the outputs equal those of a run without the plugin.
"""
from __future__ import annotations

import os
import signal


def tiny_dies_once(weights_path: str, marker: str, after_frames: int = 3, cancel=None):
    """The tiny torch-cpu engine, wrapped to die once after `after_frames` inferences."""
    from tt_depth_ros.engines.factory import build_engine

    engine = build_engine('da3metric-tiny', dtype='float32', weights=weights_path,
                          backend='torch-cpu',
                          cancel=cancel)
    infer, calls = engine.infer, [0]

    def infer_or_die(*images):
        calls[0] += 1
        if calls[0] == after_frames:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return infer(*images)     # another process already died: run normally
            print(f'dies_once: SIGKILL to pid {os.getpid()} after {after_frames - 1} frames',
                  flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return infer(*images)

    engine.infer = infer_or_die
    return engine
