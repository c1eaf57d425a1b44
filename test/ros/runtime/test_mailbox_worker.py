"""Latest-frame mailbox and worker: latest wins, drops counted, errors survived, clean stop."""
import threading
import time

from tt_depth_ros.ros.runtime.mailbox import LatestFrameMailbox
from tt_depth_ros.ros.runtime.worker import FrameWorker


def test_latest_wins_and_drops_counted():
    box = LatestFrameMailbox()
    assert box.take(timeout=0.01) is None
    assert box.put(1) is False
    assert box.put(2) is True and box.put(3) is True
    assert (box.puts, box.dropped, box.pending) == (3, 2, True)
    assert box.take(timeout=0) == 3 and not box.pending
    box.put(4)
    assert box.clear() == 1 and box.dropped == 3 and box.take(timeout=0) is None


def test_close_wakes_waiter_and_reopen():
    box = LatestFrameMailbox()
    out = []
    t = threading.Thread(target=lambda: out.append(box.take(timeout=10)))
    t.start()
    time.sleep(0.05)
    box.close()
    t.join(2)
    assert not t.is_alive() and out == [None]
    box.reopen()
    box.put('x')
    assert box.take(timeout=1) == 'x'


def test_worker_processes_survives_errors_and_stops():
    box = LatestFrameMailbox()
    done, errors = [], []

    def process(item):
        if item == 'bad':
            raise RuntimeError('boom')
        done.append(item)

    worker = FrameWorker(box, process, lambda item, exc: errors.append((item, str(exc))),
                         name='test-worker')
    worker.start()
    for item in ('a', 'bad', 'b'):
        box.put(item)
        deadline = time.monotonic() + 5
        while box.pending and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.02)
    assert done == ['a', 'b'] and errors == [('bad', 'boom')]
    assert worker.running
    assert worker.stop(timeout=5) and not worker.running
    assert 'test-worker' not in [t.name for t in threading.enumerate()]
    worker.start()                      # restartable (lifecycle re-activation)
    box.put('c')
    deadline = time.monotonic() + 5
    while 'c' not in done and time.monotonic() < deadline:
        time.sleep(0.005)
    assert done[-1] == 'c'
    assert worker.stop(timeout=5)
