"""The scale's side inputs without a node: scans by stamp, TF at the image stamp, PointCloud2.

ros/depth/scale_inputs.py gathers what one frame's scale needs; these check that a scan is taken
into the camera with TF at the image stamp (a LiDAR frame that moves), with tf2's time travel
through a fixed frame (a moving robot), that the nearest scan within the tolerance is chosen
(offline: only those that had arrived), and that any LiDAR layout is read.
"""
from types import SimpleNamespace

import numpy as np
import pytest
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from tt_depth_ros.geometry.pose.se3 import invert_T, make_T
from tt_depth_ros.ros.depth.scale_inputs import ScaleSideInputs
from tt_depth_ros.ros.msgs.cloud import cloud_xyz, pointcloud2_msg

NS = 10**9
P = SimpleNamespace(scale_source='cloud', metric_cloud_tolerance_s=0.05, metric_cloud_wait_s=0.0,
                    scale_fixed_frame='', metric_depth_wait_s=0.0, camera_height_frame='')


def _header(frame, stamp_ns):
    h = Header(frame_id=frame)
    h.stamp.sec, h.stamp.nanosec = divmod(stamp_ns, NS)
    return h


def _scan(points, frame, stamp_ns):
    xyz = np.asarray(points, np.float32).reshape(1, -1, 3)
    return pointcloud2_msg(xyz, None, _header(frame, stamp_ns))


def _T(x=0.0, y=0.0, z=0.0):
    return make_T(np.eye(3), [x, y, z])


def test_scan_goes_into_the_camera_with_tf_at_the_image_stamp():
    side = ScaleSideInputs()
    side.tf.add('base', 'cam', _T(z=1.0), static=True)
    for t, x in ((10, 0.0), (11, 1.0), (12, 2.0)):           # the LiDAR slides along base x
        side.tf.add('base', 'lidar', _T(x=x), t * NS)
    side.clouds.put(_scan([[0.0, 0.0, 5.0]], 'lidar', int(10.5 * NS)))
    out = side.for_frame(P, _header('cam', int(10.52 * NS)))
    assert out.cloud_missing == '' and out.cloud.shape == (1, 3)
    # TF at the image stamp 10.52 s: the LiDAR 0.52 m along x (not 0.5 at the scan, not 2.0 latest)
    np.testing.assert_allclose(out.cloud_to_camera, _T(x=0.52, z=-1.0), atol=1e-9)
    far = side.for_frame(P, _header('cam', int(11.8 * NS)))
    assert far.cloud is None and 'within 0.05 s' in far.cloud_missing


def test_fixed_frame_moves_the_scan_from_its_stamp_to_the_image():
    side = ScaleSideInputs()
    side.tf.add('base', 'cam', _T(z=1.0), static=True)
    side.tf.add('base', 'lidar', _T(z=1.2), static=True)
    for t in (10, 11):                                        # the robot drives 1 m/s along x
        side.tf.add('odom', 'base', _T(x=float(t - 10)), t * NS)
    side.clouds.put(_scan([[0.0, 0.0, 5.0]], 'lidar', int(10.46 * NS)))
    p = SimpleNamespace(**{**vars(P), 'scale_fixed_frame': 'odom'})
    out = side.for_frame(p, _header('cam', int(10.50 * NS)))
    expected = invert_T(_T(x=0.5, z=1.0)) @ _T(x=0.46, z=1.2)  # cam@10.50 <- odom <- lidar@10.46
    np.testing.assert_allclose(out.cloud_to_camera, expected, atol=1e-9)
    missing = side.for_frame(P, _header('nowhere', int(10.5 * NS)))
    assert missing.cloud is None and 'no TF for the scan' in missing.cloud_missing


def test_nearest_scan_and_the_offline_arrival_bound():
    side = ScaleSideInputs()
    side.tf.add('cam', 'lidar', _T(), static=True)
    for k, (stamp, arrival) in enumerate(((10.06, 100), (10.09, 200), (10.16, 300))):
        side.clouds.put(_scan([[0.0, 0.0, 1.0 + k]], 'lidar', int(stamp * NS)), arrival)
    image = _header('cam', int(10.10 * NS))
    assert side.for_frame(P, image).cloud[0, 2] == 2.0                 # 10.09 is nearest
    assert side.for_frame(P, image, bag_time_ns=150).cloud[0, 2] == 1.0  # 10.09 not arrived
    assert 'no scan' in side.for_frame(P, image, bag_time_ns=50).cloud_missing
    assert 'within 0.05 s' in side.for_frame(P, _header('cam', 11 * NS)).cloud_missing


def test_temporal_pose_from_odometry_or_a_static_camera():
    side = ScaleSideInputs()
    p = SimpleNamespace(**{**vars(P), 'scale_source': 'temporal'})
    np.testing.assert_array_equal(side.for_frame(p, _header('cam', NS)).camera_pose, np.eye(4))
    side.tf.add('odom', 'cam', _T(x=1.0), NS)
    side.tf.add('odom', 'cam', _T(x=3.0), 3 * NS)
    p = SimpleNamespace(**{**vars(p), 'scale_fixed_frame': 'odom'})
    np.testing.assert_allclose(side.for_frame(p, _header('cam', 2 * NS)).camera_pose, _T(x=2.0))
    late = side.for_frame(p, _header('cam', 5 * NS))
    assert late.camera_pose is None and 'extrapolate' in late.camera_pose_missing


def test_cloud_xyz_reads_a_lidar_layout():
    """x, y, z float64 beside intensity and ring, padded points and rows, big-endian too."""
    n = 5
    pts = np.arange(n * 3, dtype=np.float64).reshape(n, 3)
    pts[2] = np.nan
    for big in (False, True):
        e = '>' if big else '<'
        dt = np.dtype({'names': ['intensity', 'x', 'y', 'z', 'ring'],
                       'formats': [e + 'f4', e + 'f8', e + 'f8', e + 'f8', e + 'u2'],
                       'offsets': [0, 4, 12, 20, 28], 'itemsize': 32})
        rec = np.zeros(n, dt)
        rec['x'], rec['y'], rec['z'] = pts.T
        row = rec.tobytes() + b'\0' * 8                       # row padding
        fields = [PointField(name='intensity', offset=0, datatype=PointField.FLOAT32, count=1)]
        fields += [PointField(name=c, offset=o, datatype=PointField.FLOAT64, count=1)
                   for c, o in (('x', 4), ('y', 12), ('z', 20))]
        fields.append(PointField(name='ring', offset=28, datatype=PointField.UINT16, count=1))
        msg = PointCloud2(height=2, width=n, fields=fields, is_bigendian=big, point_step=32,
                          row_step=len(row), data=row * 2, is_dense=False)
        xyz = cloud_xyz(msg)
        expected = np.concatenate([pts[[0, 1, 3, 4]]] * 2).astype(np.float32)
        np.testing.assert_array_equal(xyz, expected)
    for big in (False, True):                                 # float32 x, y, z, ring, time
        e = '>' if big else '<'
        dt = np.dtype({'names': ['x', 'y', 'z', 'ring', 't'],
                       'formats': [e + 'f4', e + 'f4', e + 'f4', e + 'u2', e + 'f8'],
                       'offsets': [0, 4, 8, 12, 16], 'itemsize': 24})
        rec = np.zeros(n, dt)
        rec['x'], rec['y'], rec['z'] = pts.T
        f32 = [PointField(name=c, offset=o, datatype=PointField.FLOAT32, count=1)
               for c, o in (('x', 0), ('y', 4), ('z', 8))]
        msg32 = PointCloud2(height=1, width=n, fields=f32, is_bigendian=big, point_step=24,
                            row_step=24 * n, data=rec.tobytes(), is_dense=False)
        np.testing.assert_array_equal(cloud_xyz(msg32), pts[[0, 1, 3, 4]].astype(np.float32))
    msg.fields = fields[:2]
    with pytest.raises(ValueError, match=r"\['y', 'z'\] missing"):
        cloud_xyz(msg)
