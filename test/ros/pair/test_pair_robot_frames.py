"""The pair node in a robot's TF tree: odom -> base_link, and the measured extrinsic.

Synthetic rig: a base driving and turning on flat ground with its camera mounted 0.9 m up, offset
and pitched down 0.15 rad (pair_scene.MOUNT_BASE_LINK, published here on /tf_static as
base_link -> camera_link -> camera_optical_frame like robot_state_publisher). The temporal node
with `robot_base_frame: base_link` must publish the BASE trajectory in `odom` (z up, the base
pose at the first keyframe) matching the ground truth in metres; a frame that arrives before
the mounting is known is skipped and counted. Stereo with `publish_extrinsic_static` publishes
the measured camera-2 pose once on /tf_static (transient local), not once per pair.
"""
import numpy as np
import pytest
from pair_sim import SCENE_ENGINE, PairProbe, pair_node_cmd, stamp
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from support.fake_engines.pair_scene import (
    LINK_OPTICAL,
    MOUNT_BASE_LINK,
    STEREO_T_1_2,
    render_view,
    robot_base_poses,
)
from support.procs import spawn
from support.rosutil import child_env
from tt_depth_ros.geometry.pose.se3 import angle_deg
from tt_depth_ros.ros.msgs.depth import depth_image_msg
from tt_depth_ros.ros.msgs.pose import T_from_pose_msg, T_from_transform_msg, tf_message
from tt_depth_ros.ros.runtime.tf.tf_qos import TF_STATIC_QOS

pytestmark = [pytest.mark.ros, pytest.mark.timeout(150)]
MS = 1_000_000
CAM = 'camera_optical_frame'


def test_temporal_mode_publishes_the_base_trajectory_in_odom():
    ns = '/pair_robot'
    params = dict(mode='temporal', engine_plugin=SCENE_ENGINE,
                  engine_plugin_args='{"mode": "robot"}', network_size=112,
                  scale_source='depth', keyframe_every_n=2, robot_base_frame='base_link',
                  publish_path=True, diagnostics_period=0.2, bad_input_log_period=0.0)
    probe = PairProbe(ns, 'temporal')
    static_pub = probe.publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
    base = robot_base_poses(64)
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_robot') as proc:
            probe.wait_ready()
            probe.wait_matched(probe.metric_pub)

            def send(k, t):
                rgb, depth, K = render_view('robot', k, 0, 112, 80)
                probe.metric_pub.publish(depth_image_msg(depth, Header(stamp=stamp(t),
                                                                       frame_id=CAM)))
                probe.publish_view(0, rgb, K, t, CAM)

            send(0, 5 * 1000 * MS)      # no mounting known yet: skipped, counted
            probe.wait_diag(lambda v: int(v.get('rejected_tf_mount', 0)) >= 1)
            stamp0 = Header().stamp
            static_pub.publish(TFMessage(transforms=[
                tf_message(MOUNT_BASE_LINK, stamp0, 'base_link', 'camera_link').transforms[0],
                tf_message(LINK_OPTICAL, stamp0, 'camera_link', CAM).transforms[0]]))
            probe.wait_matched(static_pub)
            for k in range(6):
                t = (10 + k) * 1000 * MS
                send(k, t)
                tf = probe.wait_stamp('/tf', t)
                pose = probe.wait_stamp('pose', t)
                assert (tf.header.frame_id, tf.child_frame_id) == ('odom', 'base_link')
                assert pose.header.frame_id == 'odom'
                T = T_from_transform_msg(tf)
                gt = np.linalg.inv(base[0]) @ base[k]
                assert np.allclose(T_from_pose_msg(pose.pose), T, atol=1e-9)
                assert np.abs(T[:3, 3] - gt[:3, 3]).max() <= 1e-3, (k, T[:3, 3], gt[:3, 3])
                assert angle_deg(T[:3, :3].T @ gt[:3, :3]) <= 0.05, k
                assert abs(T[2, 3]) <= 1e-3      # z up: a ground robot stays at z = 0
            path = probe.wait_stamp('path', 15 * 1000 * MS)
            assert path.header.frame_id == 'odom' and len(path.poses) == 6
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()


def test_stereo_measured_extrinsic_on_tf_static_once():
    ns = '/pair_extr'
    baseline = float(np.linalg.norm(STEREO_T_1_2[:3, 3]))
    params = dict(mode='stereo', engine_plugin=SCENE_ENGINE,
                  engine_plugin_args='{"mode": "stereo"}', network_size=112,
                  scale_source='baseline', baseline_m=baseline, publish_extrinsic_static=True)
    probe = PairProbe(ns, 'stereo')
    probe.subscribe(TFMessage, '/tf_static', TF_STATIC_QOS)
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_extr') as proc:
            probe.wait_ready()
            for k in range(3):
                t = (40 + k) * 1000 * MS
                probe.publish_stereo(k, t)
                probe.wait_stamp('pose', t)
            msgs = probe.out('/tf_static')
            assert len(msgs) == 1, msgs          # the rig does not move: published once
            tf = msgs[0].transforms[0]
            assert (tf.header.frame_id, tf.child_frame_id) == ('left', 'right_dust3r')
            assert np.allclose(T_from_transform_msg(tf), STEREO_T_1_2, atol=1e-4)
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()
