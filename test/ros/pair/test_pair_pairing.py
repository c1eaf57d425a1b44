"""Approximate-time pairing (ros/pair/pairing.py): jitter, drops, silence, stamps backwards."""
import random
import threading
from types import SimpleNamespace

import pytest

from tt_depth_ros.ros.msgs.stamps import NS_PER_S, stamp_to_ns
from tt_depth_ros.ros.pair.pairing import ApproxTimePairer

MS = 1_000_000


def feed(pairer, events):
    """events: (side, stamp_ns) in arrival order -> list of emitted pairs as (stamp1, stamp2)."""
    out = []
    for side, stamp in events:
        pair = pairer.push(side, stamp, (side, stamp))
        if pair is not None:
            assert pair.first == (0, pair.stamp_ns_1) and pair.second == (1, pair.stamp_ns_2)
            out.append((pair.stamp_ns_1, pair.stamp_ns_2))
    return out


def test_stamp_to_ns():
    assert stamp_to_ns(SimpleNamespace(sec=3, nanosec=250)) == 3 * NS_PER_S + 250


def test_synchronised_streams_pair_exactly_in_any_arrival_order():
    p = ApproxTimePairer(0.005)
    events = []
    for k in range(20):
        t = k * 33 * MS
        events += [(0, t), (1, t)] if k % 2 else [(1, t), (0, t)]
    assert feed(p, events) == [(k * 33 * MS, k * 33 * MS) for k in range(20)]
    s = p.stats
    assert s.pairs == 20 and s.unpaired == (0, 0) and s.queued == (0, 0)
    assert s.received == (20, 20) and s.resets == (0, 0)


def test_jitter_within_tolerance_pairs_every_frame_with_its_true_partner():
    rng = random.Random(4)
    p = ApproxTimePairer(0.010)
    events = []
    for k in range(200):
        t = k * 50 * MS
        t1, t2 = t + rng.randint(-3, 3) * MS, t + rng.randint(-3, 3) * MS
        d1, d2 = rng.uniform(0, 20), rng.uniform(0, 20)  # delivery delays reorder the streams
        events += [(d1 + t / MS, 0, t1), (d2 + t / MS, 1, t2)]
    events.sort()
    pairs = feed(p, [(side, stamp) for _, side, stamp in events])
    assert len(pairs) == 200
    assert all(abs(a - b) <= 6 * MS for a, b in pairs)
    assert [round(a / (50 * MS)) for a, _ in pairs] == list(range(200))
    assert p.stats.unpaired == (0, 0)


def test_skew_beyond_tolerance_never_pairs_and_counts_both_sides():
    p = ApproxTimePairer(0.005, queue_size=3)
    events = []
    for k in range(10):
        events += [(0, k * 100 * MS), (1, k * 100 * MS + 20 * MS)]
    assert feed(p, events) == []
    s = p.stats
    assert s.pairs == 0
    assert s.unpaired[0] + s.queued[0] == 10 and s.unpaired[1] + s.queued[1] == 10
    assert s.unpaired[0] >= 9 and s.unpaired[1] >= 9  # only the newest can still wait


def test_drops_on_one_side_count_the_orphans_of_the_other():
    p = ApproxTimePairer(0.004)
    dropped = {3, 4, 10}
    events = []
    for k in range(15):
        events.append((0, k * 33 * MS))
        if k not in dropped:
            events.append((1, k * 33 * MS + 1 * MS))
    pairs = feed(p, events)
    assert [a // (33 * MS) for a, _ in pairs] == [k for k in range(15) if k not in dropped]
    s = p.stats
    assert s.unpaired == (3, 0)


def test_one_camera_silent_bounded_queue_then_recovers():
    p = ApproxTimePairer(0.005, queue_size=4)
    assert feed(p, [(0, k * 10 * MS) for k in range(100)]) == []
    s = p.stats
    assert s.queued == (4, 0) and s.unpaired == (96, 0)
    # Camera 2 comes back with frames at the current time: pairing resumes with fresh frames.
    out = feed(p, [(0, 1000 * MS), (1, 1000 * MS), (0, 1010 * MS), (1, 1011 * MS)])
    assert out == [(1000 * MS, 1000 * MS), (1010 * MS, 1011 * MS)]
    assert p.stats.unpaired == (100, 0)  # all 100 early camera-1 frames left unpaired


def test_closest_partner_wins_and_pairs_never_go_back_in_time():
    p = ApproxTimePairer(0.020)
    out = feed(p, [(1, 0), (1, 10 * MS), (1, 20 * MS), (0, 12 * MS)])
    assert out == [(12 * MS, 10 * MS)]
    assert p.stats.unpaired == (0, 1)  # the 0 ms frame was skipped over; 20 ms still waits
    assert p.stats.queued == (0, 1)
    # a camera-1 frame older than the last pair cannot pair with the waiting 20 ms frame backwards
    assert feed(p, [(0, 25 * MS)]) == [(25 * MS, 20 * MS)]


def test_stamps_backwards_is_a_counted_reset_and_pairing_resumes():
    p = ApproxTimePairer(0.005)
    first = [(s, k * 100 * MS) for k in range(5) for s in (0, 1)]
    assert len(feed(p, first)) == 5
    # bag loop: both streams restart at 0; camera 1 loops first, camera 2 has one straggler
    events = [(0, 0), (1, 500 * MS), (1, 0), (0, 100 * MS), (1, 100 * MS),
              (0, 200 * MS), (1, 200 * MS)]
    out = feed(p, events)
    assert out == [(100 * MS, 100 * MS), (200 * MS, 200 * MS)]
    s = p.stats
    assert s.resets == (1, 1)
    assert s.pairs == 7


def test_both_streams_loop_to_the_same_stamp_pair_again_at_once():
    p = ApproxTimePairer(0.005)
    feed(p, [(0, 9000 * MS), (1, 9000 * MS), (0, 9100 * MS)])
    out = feed(p, [(0, 3000 * MS), (1, 3000 * MS), (1, 3100 * MS), (0, 3100 * MS)])
    assert out == [(3000 * MS, 3000 * MS), (3100 * MS, 3100 * MS)]
    assert p.stats.resets == (1, 1) and p.stats.unpaired == (1, 0)


def test_duplicate_stamp_is_dropped_and_counted():
    p = ApproxTimePairer(0.005)
    assert feed(p, [(0, 5 * MS), (0, 5 * MS), (1, 5 * MS)]) == [(5 * MS, 5 * MS)]
    assert p.stats.duplicates == (1, 0)


def test_zero_tolerance_is_exact_match():
    p = ApproxTimePairer(0.0)
    assert feed(p, [(0, 7), (1, 8), (0, 9), (1, 9)]) == [(9, 9)]


def test_reset_clears_queues_keeps_counters():
    p = ApproxTimePairer(0.005)
    feed(p, [(0, 10 * MS), (0, 20 * MS)])
    p.reset()
    s = p.stats
    assert s.queued == (0, 0) and s.unpaired == (2, 0) and s.last_stamp_ns == (None, None)
    assert feed(p, [(0, 1 * MS), (1, 1 * MS)]) == [(1 * MS, 1 * MS)]  # no reset counted
    assert p.stats.resets == (0, 0)


@pytest.mark.parametrize('bad', [dict(tolerance_s=-0.1), dict(tolerance_s=float('nan')),
                                 dict(tolerance_s=0.01, queue_size=0)])
def test_rejects_bad_arguments(bad):
    with pytest.raises(ValueError):
        ApproxTimePairer(**bad)


def test_rejects_bad_side():
    with pytest.raises(ValueError, match='side'):
        ApproxTimePairer(0.01).push(2, 0, None)


def test_concurrent_pushes_keep_counters_consistent():
    p = ApproxTimePairer(0.001, queue_size=2)

    def run(side):
        for k in range(2000):
            p.push(side, k * MS, k)

    threads = [threading.Thread(target=run, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = p.stats
    for side in (0, 1):
        assert s.pairs + s.unpaired[side] + s.queued[side] == 2000
