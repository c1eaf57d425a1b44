"""Pair node through real ROS (node in its own process) with the exact-geometry engine double.

The engine double returns DUSt3R outputs of a known ray-cast scene from known poses (divided by a
random per-pair scale, as DUSt3R is scale-free); everything else - decoding, CameraInfo, network
grid, PnP, scale, chaining, messages - is the node's real code. Gates: rotation <= 0.1 deg,
translation direction <= 1 %, metres with a baseline, trajectory up to one global scale when no
metric source is configured.
"""
import numpy as np
import pytest
from pair_sim import SCENE_ENGINE, H, PairProbe, W, pair_node_cmd, stamp
from std_msgs.msg import Header

from support.fake_engines.pair_scene import STEREO_T_1_2, pose_of, render_view
from support.procs import spawn
from support.rosutil import child_env
from tt_depth_ros.geometry.pose.se3 import angle_deg
from tt_depth_ros.ros.msgs.depth import depth_image_msg, image_msg_to_depth
from tt_depth_ros.ros.msgs.pose import T_from_pose_msg, T_from_transform_msg

pytestmark = [pytest.mark.ros, pytest.mark.timeout(180)]
MS = 1_000_000


def direction_error(t_est, t_gt) -> float:
    return float(np.linalg.norm(t_est / np.linalg.norm(t_est) - t_gt / np.linalg.norm(t_gt)))


def test_stereo_pose_tf_depth_and_cloud_match_ground_truth_in_metres():
    ns = '/pair_geo_stereo'
    baseline = float(np.linalg.norm(STEREO_T_1_2[:3, 3]))
    params = dict(mode='stereo', engine_plugin=SCENE_ENGINE,
                  engine_plugin_args='{"mode": "stereo"}',
                  network_size=112, scale_source='baseline', baseline_m=baseline,
                  pair_tolerance_s=0.01, publish_depth2=True, publish_confidence=True,
                  diagnostics_period=0.2)
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_stereo') as proc:
            probe.wait_ready()
            for k in range(4):
                t = (100 + k) * 1000 * MS
                skew = (k - 1) * 3 * MS
                probe.publish_stereo(k, t, skew_ns=skew)   # jitter within tolerance
                pose = probe.wait_stamp('pose', t)
                tf = probe.wait_stamp('/tf', t)
                T = T_from_pose_msg(pose.pose)
                assert pose.header.frame_id == 'left'
                assert angle_deg(T[:3, :3].T @ STEREO_T_1_2[:3, :3]) <= 0.1
                assert direction_error(T[:3, 3], STEREO_T_1_2[:3, 3]) <= 0.01
                assert np.linalg.norm(T[:3, 3]) == pytest.approx(baseline, rel=1e-6)  # metres
                assert tf.header.frame_id == 'left' and tf.child_frame_id == 'right_dust3r'
                assert np.allclose(T_from_transform_msg(tf), T, atol=1e-9)
                # depth of camera 1 in metres (network grid == camera grid here)
                depth_msg = probe.wait_stamp('depth', t)
                assert depth_msg.encoding == '32FC1' and depth_msg.header.frame_id == 'left'
                assert (depth_msg.height, depth_msg.width) == (H, W)
                _, true_depth, K = render_view('stereo', k, 0, W, H)
                d = image_msg_to_depth(depth_msg)
                ok = np.isfinite(d)
                assert ok.mean() > 0.4 and not np.isfinite(d[~np.isfinite(true_depth)]).any()
                assert np.allclose(d[ok], true_depth[ok], rtol=1e-4)
                info = probe.wait_stamp('depth/camera_info', t)
                assert np.allclose(np.reshape(info.k, (3, 3)), K)
                assert (info.width, info.height) == (W, H)
                d2_msg = probe.wait_stamp('depth2', t + skew)     # camera 2's own header
                assert d2_msg.header.frame_id == 'right'
                d2 = image_msg_to_depth(d2_msg)
                _, true_depth2, _ = render_view('stereo', k, 1, W, H)
                ok2 = np.isfinite(d2)
                assert ok2.mean() > 0.4 and np.allclose(d2[ok2], true_depth2[ok2], rtol=1e-4)
                conf = probe.wait_stamp('confidence', t)
                assert conf.encoding == '32FC1' and (conf.height, conf.width) == (H, W)
                cloud = probe.wait_stamp('points', t)
                assert cloud.header.frame_id == 'left' and cloud.point_step == 32
                assert cloud.height == 1 and cloud.width == int(ok.sum() + ok2.sum())
                pts = np.frombuffer(bytes(cloud.data), np.float32).reshape(-1, 8)[:, :3]
                # view-1 points first, in metres, in camera 1: z equals the true depth
                assert np.allclose(pts[:ok.sum(), 2], true_depth[ok], rtol=1e-4)
            diag = probe.wait_diag(lambda v: v.get('pairs') == '4')
            assert diag['scale_source'] == 'baseline' and diag['units'] == 'metres'
            assert diag['depth_output'].startswith('depth (32FC1 metres)')
            assert int(diag['pnp_inliers']) > 1000 and diag['pnp_failures'] == '0'
            assert diag['unpaired_camera1'] == '0' and diag['unpaired_camera2'] == '0'
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()


def test_temporal_chain_matches_ground_truth_trajectory():
    ns = '/pair_geo_temporal'
    n = 8
    params = dict(mode='temporal', engine_plugin=SCENE_ENGINE,
                  engine_plugin_args='{"mode": "temporal"}', network_size=112,
                  keyframe_every_n=3, keyframe_max_rotation_deg=0.0, publish_path=True,
                  publish_unscaled_depth=True, diagnostics_period=0.2,
                  publish_tf='always')   # unscaled poses on /tf only when asked
    probe = PairProbe(ns, 'temporal')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_temporal') as proc:
            probe.wait_ready()
            T_w0 = pose_of('temporal', 0, 0)
            est, gt = [], []
            for k in range(n):
                t = (50 + k) * 100 * MS
                probe.publish_temporal(k, t)
                pose = probe.wait_stamp('pose', t)
                tf = probe.wait_stamp('/tf', t)
                assert pose.header.frame_id == 'dust3r_odom'
                assert tf.header.frame_id == 'dust3r_odom'
                assert tf.child_frame_id == 'cam_dust3r_unscaled'
                est.append(T_from_pose_msg(pose.pose))
                gt.append(np.linalg.inv(T_w0) @ pose_of('temporal', k, 0))
            assert np.allclose(est[0], np.eye(4))     # the first keyframe is the odom origin
            unit = np.linalg.norm(gt[1][:3, 3]) / np.linalg.norm(est[1][:3, 3])
            for k in range(1, n):
                assert angle_deg(est[k][:3, :3].T @ gt[k][:3, :3]) <= 0.1, k
                assert direction_error(est[k][:3, 3], gt[k][:3, 3]) <= 0.01, k
                # one consistent unit along the chain although every pair has its own scale
                assert np.linalg.norm(est[k][:3, 3]) * unit == pytest.approx(
                    np.linalg.norm(gt[k][:3, 3]), rel=0.01), k
            path = probe.wait_stamp('path', (50 + n - 1) * 100 * MS)
            assert path.header.frame_id == 'dust3r_odom' and len(path.poses) == n
            # no metric scale: nothing on 'depth', scale-free depth only on 'depth_unscaled'
            assert probe.out('depth') == []
            unscaled = probe.wait_stamp('depth_unscaled', (50 + n - 1) * 100 * MS)
            assert unscaled.header.frame_id == 'cam'
            diag = probe.wait_diag(lambda v: v.get('keyframes') == '3')
            assert diag['units'] == 'dust3r-units' and diag['mode'] == 'temporal'
            assert 'depth_unscaled' in diag['depth_output']
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()


def publish_metric(probe, depth, t, frame):
    probe.metric_pub.publish(depth_image_msg(depth, Header(stamp=stamp(t), frame_id=frame)))


def test_metric_depth_scale_gives_metres_in_stereo_and_temporal_modes():
    """scale_source=depth: median ratio to a metric depth image of the reference view."""
    for mode in ('stereo', 'temporal'):
        ns = f'/pair_geo_metric_{mode}'
        params = dict(mode=mode, engine_plugin=SCENE_ENGINE,
                      engine_plugin_args=f'{{"mode": "{mode}"}}', network_size=112,
                      scale_source='depth', keyframe_every_n=2, diagnostics_period=0.2,
                      # under CI load the metric image can reach the worker after the default
                      # 0.5 s; without it the pair has no metric scale and no pose is published
                      metric_depth_wait_s=5.0)
        probe = PairProbe(ns, mode)
        try:
            with spawn(pair_node_cmd(ns, params), env=child_env(), name=f'pair_m_{mode}') as pr:
                probe.wait_ready()
                probe.wait_matched(probe.metric_pub)
                T_w0 = pose_of(mode, 0, 0)
                for k in range(4):
                    t = (300 + k) * 1000 * MS
                    _, true_depth, _ = render_view(mode, k, 0, W, H)
                    if mode == 'stereo' or k in (0, 2):   # temporal: keyframes only need it
                        publish_metric(probe, true_depth, t, 'left' if mode == 'stereo' else 'cam')
                    if mode == 'stereo':
                        probe.publish_stereo(k, t)
                        gt = STEREO_T_1_2
                    else:
                        probe.publish_temporal(k, t)
                        gt = np.linalg.inv(T_w0) @ pose_of(mode, k, 0)
                    T = T_from_pose_msg(probe.wait_stamp('pose', t).pose)
                    assert angle_deg(T[:3, :3].T @ gt[:3, :3]) <= 0.1, (mode, k)
                    # metres without any unknown factor
                    assert np.allclose(T[:3, 3], gt[:3, 3], atol=1e-4), (mode, k, T, gt)
                    if k:
                        d = image_msg_to_depth(probe.wait_stamp('depth', t))
                        _, true_d, _ = render_view(mode, k, 0, W, H)   # camera 1 / current
                        ok = np.isfinite(d)
                        assert ok.mean() > 0.4 and np.allclose(d[ok], true_d[ok], rtol=1e-4)
                diag = probe.wait_diag(lambda v: v.get('scale_source') == 'depth')
                assert diag['units'] == 'metres'
                assert pr.poll() is None, pr.log_text()
        finally:
            probe.close()
