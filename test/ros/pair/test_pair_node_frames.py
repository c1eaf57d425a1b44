"""Pair node frames, TF conventions and the default-focal mode, through real processes.

- A camera-1 image with an empty frame_id: the pose is a counted, logged rejection; the cloud and
  depth of that pair are still published (no worker error).
- /tf carries metres only by default (`publish_tf: auto`); `always` adds unscaled poses under a
  child frame named `<child>_unscaled`; /tf uses tf2's broadcaster QoS (reliable, keep last 100,
  volatile), not the node's output QoS.
- `output_resolution: camera`: depth at the camera size, NaN where the network crop saw nothing.
- `camera_info_mode: default_focal` on a stereo rig whose cameras have different lenses: each
  camera's focal is estimated from its own pointmap, so the pose still matches the ground truth
  (borrowing camera 1's focal for camera 2 gives a wrong translation direction).
"""
import json

import cv2
import numpy as np
import pytest
from pair_sim import SCENE_ENGINE, H, PairProbe, W, pair_node_cmd, t_ns
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo

from support.fake_engines.pair_scene import (
    STEREO_T_1_2,
    pose_of,
    render_view,
    stamp_camera,
    stamp_id,
)
from support.procs import spawn, wait_for
from support.rosutil import child_env
from tt_depth_ros.geometry.pose.se3 import angle_deg
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth
from tt_depth_ros.ros.msgs.pose import T_from_pose_msg
from tt_depth_ros.tools.eval.scene_render import default_scene, intrinsics, render

pytestmark = [pytest.mark.ros, pytest.mark.timeout(150)]
MS = 1_000_000


def _params(**kw):
    p = dict(mode='stereo', engine_plugin=SCENE_ENGINE, engine_plugin_args='{"mode": "stereo"}',
             network_size=112, diagnostics_period=0.2, bad_input_log_period=0.0)
    p.update(kw)
    return p


def test_empty_frame_id_never_blocks_cloud_and_tf_is_metric_only_by_default():
    ns = '/pair_frames'
    probe = PairProbe(ns, 'stereo')
    try:
        params = _params(publish_unscaled_depth=True)
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_frames') as proc:
            probe.wait_ready()
            t = 10 * 1000 * MS
            probe.publish_stereo(0, t, frames=('', 'right'))
            probe.wait_stamp('points', t)
            probe.wait_stamp('depth_unscaled', t)
            d = probe.wait_diag(lambda v: int(v.get('pose_rejected_frame_id', 0)) >= 1)
            assert d['errors'] == '0' and 'empty frame_id' in d['last_frame_id_problem']
            assert not [m for m in probe.out('pose') if t_ns(m.header.stamp) == t]
            # valid frames, no metric scale: pose yes, /tf no (REP 103: TF is SI)
            t = 11 * 1000 * MS
            probe.publish_stereo(1, t)
            probe.wait_stamp('pose', t)
            d = probe.wait_diag(lambda v: int(v.get('tf_withheld_unscaled', 0)) >= 1)
            assert d['tf_published'] == '0' and probe.out('/tf') == []
            # asked for: unscaled TF, under a child frame whose name says so
            assert all(r.successful for r in probe.set_params(f'{ns}/pair_node',
                                                              {'publish_tf': 'always'}))
            t = 12 * 1000 * MS
            probe.publish_stereo(2, t)
            tf = probe.wait_stamp('/tf', t)
            assert (tf.header.frame_id, tf.child_frame_id) == ('left', 'right_dust3r_unscaled')
            infos = [i for i in probe.node.get_publishers_info_by_topic('/tf')
                     if i.node_name == 'pair_node']
            assert len(infos) == 1
            qos = infos[0].qos_profile    # (discovery does not carry the history depth)
            assert qos.reliability == ReliabilityPolicy.RELIABLE
            assert qos.durability == DurabilityPolicy.VOLATILE
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()


def _view(k, cam, hfov):
    rgb, _ = render(default_scene(), intrinsics(W, H, hfov), W, H, pose_of('stereo', k, cam))
    return stamp_camera(stamp_id(rgb, k), cam)


def test_default_focal_estimates_each_stereo_camera_separately():
    ns = '/pair_focal'
    baseline = float(np.linalg.norm(STEREO_T_1_2[:3, 3]))
    args = json.dumps({'mode': 'stereo', 'hfov2_deg': 50.0})   # camera 2: a longer lens
    params = _params(engine_plugin_args=args, camera_info_mode='default_focal',
                     scale_source='baseline', baseline_m=baseline)
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_focal') as proc:
            probe.wait_ready()
            for k in range(2):
                t = (20 + k) * 1000 * MS
                probe.publish_view(0, _view(k, 0, 70.0), None, t, 'left', info=False)
                probe.publish_view(1, _view(k, 1, 50.0), None, t, 'right', info=False)
                pose = probe.wait_stamp('pose', t)
                T = T_from_pose_msg(pose.pose)
                assert angle_deg(T[:3, :3].T @ STEREO_T_1_2[:3, :3]) <= 0.1
                t_gt = STEREO_T_1_2[:3, 3]
                cos = T[:3, 3] @ t_gt / (np.linalg.norm(T[:3, 3]) * np.linalg.norm(t_gt))
                assert np.degrees(np.arccos(min(1.0, cos))) <= 0.5, T[:3, 3]
                assert np.linalg.norm(T[:3, 3]) == pytest.approx(baseline, rel=1e-6)
                # camera 1's depth/camera_info carries camera 1's own estimated focal
                info = probe.wait_stamp('depth/camera_info', t)
                assert info.k[0] == pytest.approx(intrinsics(W, H, 70.0)[0, 0], rel=1e-3)
            d = probe.wait_diag(lambda v: v.get('focal_source') == 'estimated per camera')
            assert d['pnp_failures'] == '0'
            wait_for(lambda: proc.poll() is None, 1, what='node alive')
    finally:
        probe.close()



def test_depth_at_camera_resolution_matches_the_scene():
    """160x120 cameras on a 112x80 network grid (resize 0.7, 2 rows cropped top and bottom)."""
    ns = '/pair_camres'
    w, h = 160, 120
    baseline = float(np.linalg.norm(STEREO_T_1_2[:3, 3]))
    params = _params(scale_source='baseline', baseline_m=baseline, publish_depth2=True)
    probe = PairProbe(ns, 'stereo')
    probe.subscribe(CameraInfo, f'{ns}/depth2/camera_info')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_camres') as proc:
            probe.wait_ready()
            t = 30 * 1000 * MS
            views = [render_view('stereo', 1, cam, w, h) for cam in (0, 1)]
            for cam, (rgb, _, K) in enumerate(views):
                rgb[:16, :16] = rgb[0, 0]    # the frame-id mark survives the resize and crop
                probe.publish_view(cam, rgb, K, t, ('left', 'right')[cam])
            for topic, (_, truth, K) in (('depth', views[0]), ('depth2', views[1])):
                msg = probe.wait_stamp(topic, t)
                info = probe.wait_stamp(f'{topic}/camera_info', t)
                assert (msg.width, msg.height, info.width, info.height) == (w, h, w, h)
                assert np.allclose(np.reshape(info.k, (3, 3)), K, atol=1e-9)
                d = image_msg_to_depth(msg)
                assert np.isnan(d[0]).all() and np.isnan(d[-1]).all()   # cropped: no data
                ok = np.isfinite(d) & np.isfinite(truth)
                t_ = np.where(np.isfinite(truth), truth, 1e3).astype(np.float32)
                smooth = ok & (cv2.dilate(t_, np.ones((5, 5))) - cv2.erode(
                    t_, np.ones((5, 5))) < 0.05 * t_)
                rel = np.abs(d[smooth] - truth[smooth]) / truth[smooth]
                assert ok.mean() > 0.4 and smooth.sum() > 500
                assert np.median(rel) < 1e-4 and np.percentile(rel, 95) < 1e-2, rel
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()
