"""StampedCache (ros/stamp_cache.py): exact-stamp lookup, bounded size, bounded wait."""
import threading

import pytest

from tt_depth_ros.ros.stamp_cache import StampedCache


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
