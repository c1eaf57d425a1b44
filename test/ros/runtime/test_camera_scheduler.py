"""Per-camera latest-frame mailboxes: round-robin order, priority, rate cap, drops per camera."""
import threading

from tt_depth_ros.ros.runtime.scheduler import CameraMailboxes, SlotPolicy
from tt_depth_ros.ros.runtime.worker import FrameStages, FrameWorker


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def boxes(policies=None, clock=None):
    box = CameraMailboxes(lambda item: item[0], **({'clock': clock} if clock else {}))
    box.configure(policies or {k: SlotPolicy() for k in 'abc'})
    return box


def test_round_robin_over_the_cameras_with_a_fresh_frame():
    box = boxes()
    order = []
    for i in range(6):           # camera a always has a frame, b and c now and then
        box.put(('a', i))
        if i % 3 == 0:
            box.put(('b', i))
        if i == 1:
            box.put(('c', i))
        order.append(box.take(timeout=0)[0])
    # after a camera's turn the scan starts at the next camera: b and c each wait one turn
    assert order == ['a', 'b', 'c', 'a', 'b', 'a']
    assert box.take(timeout=0) is None


def test_latest_wins_per_camera_and_drops_counted_per_camera():
    box = boxes()
    for i in range(5):
        box.put(('a', i))
    box.put(('b', 0))
    assert box.take(timeout=0) == ('a', 4)       # the newest frame, never a queue
    assert box.counters('a') == {'puts': 5, 'dropped': 4, 'taken': 1}
    assert box.counters('b') == {'puts': 1, 'dropped': 0, 'taken': 0}
    assert box.clear() == 1 and box.counters('b')['dropped'] == 1 and not box.pending


def test_no_camera_waits_more_than_one_turn_of_each_other():
    box = boxes({k: SlotPolicy() for k in 'abcd'})
    waited = {k: 0 for k in 'abcd'}
    worst = 0
    for step in range(200):       # every camera floods: each is served every 4th take
        for k in 'abcd':
            box.put((k, step))
        k, _ = box.take(timeout=0)
        for other in waited:
            waited[other] = 0 if other == k else waited[other] + 1
        worst = max(worst, max(waited.values()))
    assert worst == 3


def test_priority_gives_consecutive_turns():
    box = boxes({'a': SlotPolicy(priority=2), 'b': SlotPolicy()})
    order = []
    for i in range(6):
        box.put(('a', i))
        box.put(('b', i))
        order.append(box.take(timeout=0)[0])
    assert order == ['a', 'a', 'b', 'a', 'a', 'b']


def test_rate_cap_holds_the_newest_frame_until_due():
    clock = Clock()
    box = boxes({'a': SlotPolicy(max_rate_hz=10.0), 'b': SlotPolicy()}, clock)
    box.put(('a', 0))
    assert box.take(timeout=0) == ('a', 0)
    clock.t += 0.05
    box.put(('a', 1))
    box.put(('a', 2))
    box.put(('b', 0))
    assert box.take(timeout=0) == ('b', 0)
    assert box.take(timeout=0) is None           # a's next frame is due at +0.1 s
    clock.t += 0.05
    assert box.take(timeout=0) == ('a', 2)
    assert box.counters('a')['dropped'] == 1


def test_take_ready_takes_one_frame_per_waiting_camera_in_order():
    box = boxes()
    box.put(('c', 0))
    box.put(('a', 0))
    box.put(('b', 0))
    first = box.take(timeout=0)
    rest = box.take_ready(5, accept=lambda item: item[0] != 'c')
    assert first == ('a', 0) and rest == [('b', 0)]
    assert box.take(timeout=0) == ('c', 0)


def test_close_wakes_a_waiting_take():
    box = boxes()
    out = []
    t = threading.Thread(target=lambda: out.append(box.take(timeout=10)))
    t.start()
    box.close()
    t.join(2)
    assert not t.is_alive() and out == [None]


def test_staged_worker_keeps_two_in_flight_and_finishes_in_start_order():
    """Pipelined stages: frame N+1 starts before N finishes only while frames wait."""
    box = boxes()
    log, done = [], threading.Event()

    def start(items):
        log.append(('start', [i[0] for i in items]))
        return list(items)

    def finish(item):
        log.append(('finish', item[0]))
        if item == ('c', 0):
            done.set()

    for k in 'abc':
        box.put((k, 0))
    worker = FrameWorker(box, None, lambda item, exc: log.append(('error', exc)),
                         stages=FrameStages(start, finish, lambda item: None, in_flight=2))
    worker.start()
    assert done.wait(5)
    assert worker.stop(2)
    assert log == [('start', ['a']), ('start', ['b']), ('finish', 'a'), ('start', ['c']),
                   ('finish', 'b'), ('finish', 'c')]


def test_staged_worker_batches_and_discards_in_flight_frames_at_stop():
    box = boxes()
    log, started = [], threading.Event()
    release = threading.Event()

    def start(items):
        log.append(('start', sorted(i[0] for i in items)))
        started.set()
        return list(items)

    def finish(item):
        release.wait(5)     # the first frame of the batch is "on the device" at stop
        log.append(('finish', item[0]))

    for k in 'abc':
        box.put((k, 0))
    worker = FrameWorker(box, None, lambda item, exc: None,
                         stages=FrameStages(start, finish, lambda item: log.append(
                             ('discard', item[0])), in_flight=1, batch=3))
    worker.start()
    assert started.wait(5)
    stopper = threading.Thread(target=worker.stop, args=(5,))
    stopper.start()
    release.set()
    stopper.join(5)
    assert not worker.running
    assert log[0] == ('start', ['a', 'b', 'c'])
    # every started frame is either finished or discarded, exactly once
    assert sorted(k for what, k in log[1:]) == ['a', 'b', 'c']
