"""Pair node with a DA3 any-view engine (perfect test double) instead of DUSt3R, through real ROS.

The double returns a perfect any-view network's outputs for the known scene (depth, confidence,
intrinsics, world-to-camera extrinsics in a world frame that is not camera 1, ray maps, relative
units or NESTED metres); the node's real code converts them to its pose convention (from the
camera decoder, or by PnP on the ray head's points with a decoder that is 5 deg off), scales,
chains and publishes. Same gates as the DUSt3R geometry tests: rotation <= 0.1 deg, translation
direction <= 1 %, metres from a baseline or from NESTED itself, a temporal chain with one unit.
"""
import numpy as np
import pytest
from pair_sim import PairProbe, pair_node_cmd
from test_pair_node_geometry import direction_error

from support.fake_engines.pair_scene import STEREO_T_1_2, pose_of, render_view
from support.procs import spawn
from support.rosutil import child_env
from tt_depth_ros.geometry.pose.se3 import angle_deg
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth
from tt_depth_ros.ros.msgs.pose import T_from_pose_msg, T_from_transform_msg

# one_distro: a real model in the pair node; its ROS surface runs on Kilted in the other
# pair node tests (engine doubles)
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(180)]
MS = 1_000_000
W, H = 112, 84          # the DA3 grid of network_size 112 for this size: no resize
ENGINE = 'support.fake_engines.scene_anyview:SceneAnyviewEngine'


def _params(mode, kind, decoder_error_deg=0.0, **extra):
    p = dict(mode=mode, engine_plugin=ENGINE, network_size=112, diagnostics_period=0.2,
             engine_plugin_args=f'{{"mode": "{mode}", "kind": "{kind}", "camera_wh": [{W}, {H}], '
                                f'"decoder_error_deg": {decoder_error_deg}}}')
    p.update(extra)
    return p


def _publish_stereo(probe, k, t):
    for cam, frame in ((0, 'left'), (1, 'right')):
        rgb, _, K = render_view('stereo', k, cam, W, H)
        probe.publish_view(cam, rgb, K, t, frame)


@pytest.mark.parametrize('kind,pose_source', [('anyview', 'auto'), ('nested', 'camera_decoder'),
                                              ('anyview', 'pnp'), ('nested', 'pnp')])
def test_stereo_anyview_pose_depth_cloud(kind, pose_source):
    """Relative any-view + baseline scale, and NESTED metres without any scale source."""
    ns = f'/pair_av_{kind}_{pose_source}'
    baseline = float(np.linalg.norm(STEREO_T_1_2[:3, 3]))
    extra = (dict(scale_source='baseline', baseline_m=baseline) if kind == 'anyview' else {})
    error = 5.0 if pose_source == 'pnp' else 0.0     # only the ray PnP can pass the pose gates
    params = _params('stereo', kind, error, publish_depth2=True, pose_source=pose_source, **extra)
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(),
                   name=f'pair_av_{kind}_{pose_source}') as proc:
            probe.wait_ready()
            for k in range(2):
                t = (100 + k) * 1000 * MS
                _publish_stereo(probe, k, t)
                pose = probe.wait_stamp('pose', t)
                T = T_from_pose_msg(pose.pose)
                assert pose.header.frame_id == 'left'
                assert angle_deg(T[:3, :3].T @ STEREO_T_1_2[:3, :3]) <= 0.1
                assert direction_error(T[:3, 3], STEREO_T_1_2[:3, 3]) <= 0.01
                assert np.linalg.norm(T[:3, 3]) == pytest.approx(baseline, rel=1e-5)  # metres
                tf = probe.wait_stamp('/tf', t)
                assert tf.header.frame_id == 'left' and tf.child_frame_id == 'right_dust3r'
                assert np.allclose(T_from_transform_msg(tf), T, atol=1e-9)
                depth_msg = probe.wait_stamp('depth', t)
                assert depth_msg.encoding == '32FC1' and depth_msg.header.frame_id == 'left'
                _, true_depth, K = render_view('stereo', k, 0, W, H)
                d = image_msg_to_depth(depth_msg)
                ok = np.isfinite(d)
                assert d.shape == (H, W) and ok.mean() > 0.4
                assert not np.isfinite(d[~np.isfinite(true_depth)]).any()
                np.testing.assert_allclose(d[ok], true_depth[ok], rtol=1e-4)
                info = probe.wait_stamp('depth/camera_info', t)
                np.testing.assert_allclose(np.reshape(info.k, (3, 3)), K, rtol=1e-9)
                d2 = image_msg_to_depth(probe.wait_stamp('depth2', t))
                _, true2, _ = render_view('stereo', k, 1, W, H)
                ok2 = np.isfinite(d2)
                np.testing.assert_allclose(d2[ok2], true2[ok2], rtol=1e-4)
                cloud = probe.wait_stamp('points', t)
                assert cloud.header.frame_id == 'left'
                assert cloud.width == int(ok.sum() + ok2.sum())
                pts = np.frombuffer(bytes(cloud.data), np.float32).reshape(-1, 8)[:, :3]
                np.testing.assert_allclose(pts[:ok.sum(), 2], true_depth[ok], rtol=1e-4)
                # view-2 points land where camera 2 sees them, in camera 1 (metres)
                p2 = pts[ok.sum():].astype(np.float64)
                z2 = (p2 - STEREO_T_1_2[:3, 3]) @ STEREO_T_1_2[:3, 2]
                np.testing.assert_allclose(z2, true2[ok2], rtol=1e-3)
            # 'pairs' counts pairs formed; the outcome counters follow when the worker is done
            diag = probe.wait_diag(lambda v: v.get('pairs') == '2' and (
                pose_source != 'pnp' or v.get('pnp_ok') == '2'))
            assert 'DA3 any-view' in diag['engine']
            if pose_source == 'pnp':
                assert 'ray head by PnP-RANSAC' in diag['engine'], diag
                assert diag['pose_source'] == 'pnp' and diag['pnp_ok'] == '2', diag
                assert int(diag['pnp_inliers']) > 1000 and float(diag['pnp_reproj_px']) < 1.0
            else:
                assert 'camera decoder' in diag['engine']
                assert diag['pose_source'] == 'camera_decoder'
            assert diag['units'] == 'metres'
            assert diag['scale_source'] == ('baseline' if kind == 'anyview' else 'model')
            assert diag['depth_output'] == 'depth (32FC1 metres)'
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()


@pytest.mark.parametrize('window,pose_source', [(2, 'auto'), (4, 'auto'), (4, 'pnp')])
def test_temporal_anyview_chain_one_unit_and_no_metric_depth(window, pose_source):
    """Relative any-view, temporal (pairs, and a 4-view window): one unit, nothing on `depth`."""
    ns, n = f'/pair_av_temporal_{window}_{pose_source}', 6
    params = _params('temporal', 'anyview', 5.0 if pose_source == 'pnp' else 0.0,
                     keyframe_every_n=2, keyframe_max_rotation_deg=0.0,
                     publish_unscaled_depth=True, window_size=window, pose_source=pose_source)
    params['engine_plugin_args'] = params['engine_plugin_args'][:-1] + f', "views": {window}}}'
    probe = PairProbe(ns, 'temporal')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_av_temporal') as proc:
            probe.wait_ready()
            T_w0 = pose_of('temporal', 0, 0)
            est, gt = [], []
            for k in range(n):
                t = (50 + k) * 100 * MS
                rgb, _, K = render_view('temporal', k, 0, W, H)
                probe.publish_view(0, rgb, K, t, 'cam')
                pose = probe.wait_stamp('pose', t)
                assert pose.header.frame_id == 'dust3r_odom'
                est.append(T_from_pose_msg(pose.pose))
                gt.append(np.linalg.inv(T_w0) @ pose_of('temporal', k, 0))
            assert np.allclose(est[0], np.eye(4))
            unit = np.linalg.norm(gt[1][:3, 3]) / np.linalg.norm(est[1][:3, 3])
            for k in range(1, n):
                assert angle_deg(est[k][:3, :3].T @ gt[k][:3, :3]) <= 0.1, k
                assert direction_error(est[k][:3, 3], gt[k][:3, 3]) <= 0.01, k
                assert np.linalg.norm(est[k][:3, 3]) * unit == pytest.approx(
                    np.linalg.norm(gt[k][:3, 3]), rel=0.01), k
            assert probe.out('depth') == []
            probe.wait_stamp('depth_unscaled', (50 + n - 1) * 100 * MS)
            diag = probe.wait_diag(lambda v: v.get('keyframes') == '3')
            assert diag['units'] == 'model units (relative)' and 'DA3 any-view' in diag['engine']
            assert diag['pose_source'] == ('pnp' if pose_source == 'pnp' else 'camera_decoder')
            if window == 4:   # keyframes 0, 2, 4: frame 5 sees keyframe 4, then 2, 0 (newest first)
                assert 'anyview-double views [4, 2, 0, 5]' in proc.log_text()
                assert 'anyview-double views [0, 0, 0, 1]' in proc.log_text()   # padded start
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()
