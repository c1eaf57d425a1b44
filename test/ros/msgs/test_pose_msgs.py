"""Pose messages (ros/msgs/pose.py) and SE(3) helpers: round trips, frames, stamps, validation."""
import numpy as np
import pytest
from builtin_interfaces.msg import Time

from tt_depth_ros.geometry.pose.se3 import R_from_quat, angle_deg, invert_T, make_T, quat_from_R
from tt_depth_ros.ros.msgs.pose import (
    T_from_pose_msg,
    T_from_transform_msg,
    path_msg,
    pose_stamped_msg,
    tf_message,
)


def random_T(rng):
    q = rng.normal(size=4)
    return make_T(R_from_quat(q), rng.normal(size=3))


def test_se3_round_trips_including_near_180_degrees():
    rng = np.random.default_rng(3)
    for q in [*rng.normal(size=(200, 4)), [1, 0, 0, 1e-12], [0, 0.6, 0.8, 0], [0, 0, 0, 1]]:
        R = R_from_quat(q)
        q2 = quat_from_R(R)
        assert q2[3] >= 0 and np.isclose(np.linalg.norm(q2), 1.0)
        assert np.allclose(R_from_quat(q2), R, atol=1e-12)
    T = random_T(rng)
    assert np.allclose(invert_T(T) @ T, np.eye(4), atol=1e-12)
    assert angle_deg(R_from_quat([0, np.sin(0.25), 0, np.cos(0.25)])) == pytest.approx(
        np.degrees(0.5))


def test_pose_and_tf_messages_carry_frames_stamp_and_exact_transform():
    rng = np.random.default_rng(5)
    stamp = Time(sec=12, nanosec=345)
    for _ in range(20):
        T = random_T(rng)
        ps = pose_stamped_msg(T, stamp, 'left_optical')
        assert ps.header.frame_id == 'left_optical' and ps.header.stamp == stamp
        assert np.allclose(T_from_pose_msg(ps.pose), T, atol=1e-12)
        tf = tf_message(T, stamp, 'odom', 'cam')
        (edge,) = tf.transforms
        assert edge.header.frame_id == 'odom' and edge.child_frame_id == 'cam'
        assert edge.header.stamp == stamp
        assert np.allclose(T_from_transform_msg(edge), T, atol=1e-12)


def test_tf_refuses_bad_frames_and_non_finite_poses():
    with pytest.raises(ValueError, match='frame names'):
        tf_message(np.eye(4), Time(), 'a', 'a')
    with pytest.raises(ValueError, match='frame names'):
        tf_message(np.eye(4), Time(), '', 'a')
    bad = np.eye(4)
    bad[0, 3] = np.nan
    with pytest.raises(ValueError, match='finite 4x4'):
        pose_stamped_msg(bad, Time(), 'a')


def test_path_in_frame_with_last_stamp():
    poses = [(Time(sec=i), make_T(np.eye(3), [i, 0, 0])) for i in range(4)]
    p = path_msg(poses, 'odom')
    assert p.header.frame_id == 'odom' and p.header.stamp == Time(sec=3)
    assert [ps.pose.position.x for ps in p.poses] == [0.0, 1.0, 2.0, 3.0]
    assert all(ps.header.frame_id == 'odom' for ps in p.poses)
