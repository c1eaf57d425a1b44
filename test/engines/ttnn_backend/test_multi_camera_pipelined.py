"""Frames of three cameras pipelined over the ttnn engine's two command queues (CPU stand-in).

The depth node's multi-camera parts without ROS: per-camera latest-frame mailboxes taken
round-robin (ros/runtime/scheduler.py), the staged worker keeping two frames in flight
(ros/runtime/worker.py) and THE DA3 frame path's start/finish (pipelines/depth.py) on a
two-queue engine whose trace resizes each camera frame on the device. All cameras share one
shape, so every frame goes through the same staging buffer and trace: under the stand-in's lazy
queue schedules a missing event would hand a frame another camera's (or an older) image. Each
finished frame must equal the one-at-a-time result of its own image (no stale input, never
another camera's), frames finish in the order they started and each camera's in its own order;
a stop with a trace in flight collects that frame, publishes nothing, and the engine closes.
"""
import threading

import numpy as np

from devtools.ttnn.standin import queues
from support.procs import wait_for
from tt_depth_ros.engines.ttnn import build_ttnn_engine
from tt_depth_ros.pipelines.depth import DA3FramePath, FrameOptions, FrameRequest
from tt_depth_ros.ros.runtime.scheduler import CameraMailboxes, SlotPolicy
from tt_depth_ros.ros.runtime.worker import FrameStages, FrameWorker

CAMERAS = ('a', 'b', 'c')
CAMERA_HW = (30, 40)
ROUNDS = 2
OPTIONS = FrameOptions(process_res=42)
K = np.array([[40.0, 0, 19.5], [0, 40.0, 14.5], [0, 0, 1]])


class Harness:
    """The node's start / finish / discard on one frame path, recording what happened."""

    def __init__(self, path):
        self.path = path
        self.started, self.finished, self.discarded = [], [], []
        self.hold = None          # an Event the first finish waits for (a trace in flight)
        self.overlap = 0

    def start(self, items):
        # frames started and not yet finished when this one starts (2 in flight: 1)
        self.overlap = max(self.overlap, len(self.started) - len(self.finished))
        reqs = [FrameRequest(rgb, self.path.intrinsics(K), OPTIONS, None,
                             self.path.plan(rgb.shape[:2], OPTIONS)) for _, _, rgb in items]
        self.started += [(cam, seq) for cam, seq, _ in items]
        return list(zip(items, self.path.start_batch(reqs)))

    def finish(self, pair):
        if self.hold is not None:
            self.hold.wait(10)
        (cam, seq, _), st = pair
        self.finished.append((cam, seq, self.path.finish(st).raw_depth))

    def discard(self, pair):
        (cam, seq, _), st = pair
        self.path.engine.collect(st.ticket)
        self.discarded.append((cam, seq))


def _frames(n):
    rng = np.random.default_rng(3)
    return {(cam, seq): rng.integers(0, 256, (*CAMERA_HW, 3), dtype=np.uint8)
            for seq in range(n) for cam in CAMERAS}


def _worker(box, h):
    return FrameWorker(box, None, lambda item, exc: h.finished.append(('error', exc)),
                       stages=FrameStages(h.start, h.finish, h.discard, in_flight=2))


def test_cameras_pipelined_each_frame_its_own_image(ttnn, da3_tiny_sd):
    images = _frames(ROUNDS)
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2) as eng:
        path = DA3FramePath(eng, 'metric')
        assert eng.pipelines and path.plan(CAMERA_HW, OPTIONS).resize is not None
        want = {k: path(im, path.intrinsics(K), OPTIONS).raw_depth for k, im in images.items()}
        for schedule in ('cq0_lazy', 'cq1_lazy'):
            queues.set_queue_schedule(schedule)
            try:
                h = _run_rounds(path, images)
            finally:
                queues.set_queue_schedule('in_order')
            assert not h.discarded and len(h.finished) == len(h.started) == 3 * ROUNDS, schedule
            assert h.overlap == 1, schedule              # the next camera's frame went in first
            assert [(c, s) for c, s, _ in h.finished] == h.started   # finished in start order
            for cam, seq, depth in h.finished:
                np.testing.assert_array_equal(depth, want[(cam, seq)],
                                              err_msg=f'{schedule}: {cam} frame {seq}')
    assert not np.array_equal(want[('a', 0)], want[('b', 0)])      # the cameras' frames differ


def _run_rounds(path, images) -> Harness:
    """Rounds of one frame per camera through the mailboxes and the staged worker."""
    box = CameraMailboxes(lambda item: item[0])
    box.configure({cam: SlotPolicy() for cam in CAMERAS})
    h = Harness(path)
    worker = _worker(box, h)
    worker.start()
    for seq in range(ROUNDS):
        for cam in CAMERAS:
            box.put((cam, seq, images[(cam, seq)]))
        while box.pending:          # every camera's frame taken before the next round
            threading.Event().wait(0.01)
    wait_for(lambda: len(h.finished) == 3 * ROUNDS, 60, what='every frame finished')
    assert worker.stop(60)
    return h


def test_stop_with_a_trace_in_flight(ttnn, da3_tiny_sd):
    images = _frames(1)
    queues.set_queue_schedule('cq0_lazy')        # the trace queue runs nothing until forced
    try:
        eng = build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2)
        path = DA3FramePath(eng, 'metric')
        box = CameraMailboxes(lambda item: item[0])
        box.configure({cam: SlotPolicy() for cam in CAMERAS[:2]})
        h = Harness(path)
        h.hold = threading.Event()
        worker = _worker(box, h)
        for cam in CAMERAS[:2]:
            box.put((cam, 0, images[(cam, 0)]))
        worker.start()
        wait = threading.Event()
        while len(h.started) < 2:               # a finishing, b on the device
            wait.wait(0.01)
        stopped = []
        stopper = threading.Thread(target=lambda: stopped.append(worker.stop(60)))
        stopper.start()
        h.hold.set()
        stopper.join(60)
        assert stopped == [True] and not worker.running
        assert [c for c, _, _ in h.finished] == ['a'] and h.discarded == [('b', 0)]
        dev = eng.ctx.device
        eng.close()
        assert not dev._is_open
    finally:
        queues.set_queue_schedule('in_order')
