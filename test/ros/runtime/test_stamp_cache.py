"""StampedCache (ros/runtime/inputs/stamp_cache.py): exact-stamp lookup, bounded size and wait."""
import threading
import time

import pytest

from tt_depth_ros.ros.runtime.inputs.stamp_cache import StampedCache


def test_exact_stamp_lookup_and_eviction_of_oldest():
    c = StampedCache(3)
    for s in range(5):
        c.put(s, f'd{s}')
    assert len(c) == 3 and c.get(0) is None and c.get(1) is None
    assert [c.get(s) for s in (2, 3, 4)] == ['d2', 'd3', 'd4']
    c.clear()
    assert c.get(4) is None
    with pytest.raises(ValueError):
        StampedCache(0)


def test_wait_returns_an_item_put_later_and_gives_up_after_the_bound():
    c = StampedCache(2)
    threading.Timer(0.05, lambda: c.put(7, 'late')).start()
    assert c.get(7, wait_s=10.0) == 'late'
    assert c.get(8, wait_s=0.05) is None     # gives up (no item with that stamp)


def test_nearest_prefers_the_exact_stamp_then_the_closest_within_tolerance():
    c = StampedCache(4)
    for s in (100, 200, 300):
        c.put(s, f'i{s}')
    assert c.nearest(200, 0) == (200, 'i200')
    assert c.nearest(240, 50) == (200, 'i200')
    assert c.nearest(240, 39) is None            # 40 ns away is beyond the tolerance
    assert c.latest() == (300, 'i300')
    assert StampedCache(1).latest() is None


def test_nearest_waits_for_a_late_item_but_not_once_a_newer_one_arrived():
    c = StampedCache(4)
    threading.Timer(0.05, lambda: c.put(7, 'late')).start()
    assert c.nearest(7, 0, wait_s=10.0) == (7, 'late')
    c.put(20, 'newer')
    t0 = time.monotonic()
    assert c.nearest(15, 0, wait_s=10.0) is None  # a newer stamp is there: no wait
    assert time.monotonic() - t0 < 5.0
