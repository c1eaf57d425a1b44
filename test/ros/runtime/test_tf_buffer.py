"""ros/runtime/tf/tf_buffer.py: chained static + dynamic lookups, interpolation, clear errors."""
import numpy as np
import pytest

from tt_depth_ros.geometry.pose.se3 import make_T
from tt_depth_ros.ros.runtime.tf.tf_buffer import NS, TfBuffer, TfLookupError


def rot_z(deg):
    a = np.radians(deg)
    return np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1.0]])


def test_chained_lookup_through_static_and_dynamic_edges():
    buf = TfBuffer()
    mount = make_T(rot_z(10), [0.2, 0.0, 0.5])
    optical = make_T(np.array([[0, 0, 1.0], [-1, 0, 0], [0, -1, 0]]), [0, 0, 0])
    buf.add('base_link', 'camera_link', mount, static=True)
    buf.add('camera_link', 'camera_optical_frame', optical, static=True)
    buf.add('odom', 'base_link', make_T(rot_z(0), [0, 0, 0]), 1 * NS)
    buf.add('odom', 'base_link', make_T(rot_z(90), [2.0, 0, 0]), 3 * NS)
    T = buf.lookup('base_link', 'camera_optical_frame', 5 * NS)   # static only: any stamp
    assert np.allclose(T, mount @ optical)
    assert np.allclose(buf.lookup('camera_optical_frame', 'base_link'), np.linalg.inv(T))
    mid = buf.lookup('odom', 'base_link', 2 * NS)                 # slerp / lerp at the middle
    assert np.allclose(mid, make_T(rot_z(45), [1.0, 0, 0]))
    full = buf.lookup('odom', 'camera_optical_frame', 3 * NS)
    assert np.allclose(full, make_T(rot_z(90), [2.0, 0, 0]) @ mount @ optical)
    assert np.allclose(buf.lookup('odom', 'base_link', 0), make_T(rot_z(90), [2.0, 0, 0]))
    with pytest.raises(TfLookupError, match='extrapolate'):
        buf.lookup('odom', 'camera_optical_frame', 9 * NS)
    with pytest.raises(TfLookupError, match='not connected'):
        buf.lookup('map', 'base_link')
    buf.clear()
    with pytest.raises(TfLookupError):
        buf.lookup('base_link', 'camera_link')


def test_cache_keeps_a_bounded_time_window():
    buf = TfBuffer(cache_s=1.0)
    for k in range(30):
        buf.add('odom', 'base_link', make_T(np.eye(3), [k, 0, 0]), k * NS // 10)
    with pytest.raises(TfLookupError):
        buf.lookup('odom', 'base_link', NS // 20)                # dropped (older than 1 s)
    assert np.allclose(buf.lookup('odom', 'base_link', 29 * NS // 10)[:3, 3], [29, 0, 0])
