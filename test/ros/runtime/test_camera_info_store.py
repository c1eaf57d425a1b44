"""CameraInfoStore (ros/runtime/inputs/camera_info_sync.py): exact/nearest/latest, time jumps."""
import threading

from tt_depth_ros.ros.runtime.inputs.camera_info_sync import CameraInfoStore

S = 1_000_000_000


def test_matching_modes_and_counters():
    store = CameraInfoStore()
    store.put('cam', 10 * S, 'info10', 'geom10')
    store.put('cam', 11 * S, 'info11', 'geom11')
    m = store.lookup('cam', 10 * S, 'exact', 0.0, 0.0)
    assert (m.msg, m.how, m.skew_s) == ('info10', 'exact', 0.0)
    assert store.lookup('cam', 12 * S, 'exact', 0.5, 0.0) is None      # 1 s away > 0.5 s
    m = store.lookup('cam', 12 * S, 'exact', 1.5, 0.0)
    assert (m.msg, m.how, m.skew_s) == ('info11', 'nearest', -1.0)
    m = store.lookup('cam', 30 * S, 'latest', 0.0, 0.0)
    assert (m.msg, m.how) == ('info11', 'latest')
    assert store.counters() == {'camera_info_exact': 1, 'camera_info_nearest': 1,
                                'camera_info_other_stamp': 1, 'camera_info_unmatched': 1}
    assert not store.has_any('other') and store.nearest_skew_s('cam', 13 * S) == -2.0


def test_waits_for_a_late_camera_info_and_forgets_the_future_after_a_time_jump():
    store = CameraInfoStore()
    threading.Timer(0.05, lambda: store.put('cam', 5 * S, 'late', 'g')).start()
    assert store.lookup('cam', 5 * S, 'exact', 0.0, 10.0).msg == 'late'
    store.put('cam', 100 * S, 'future', 'g')
    store.put('cam', 6 * S, 'after_loop', 'g')        # clock went back: the future is stale
    threading.Timer(0.05, lambda: store.put('cam', 7 * S, 'late2', 'g')).start()
    assert store.lookup('cam', 7 * S, 'exact', 0.0, 10.0).msg == 'late2'
    store.reset()
    assert not store.has_any('cam') and store.counters()['camera_info_exact'] == 0
