"""Distorted stereo cameras through the pair node: rectified before DUSt3R.

Both rig cameras have a barrel lens (plumb_bob); their CameraInfo has K, D and the rectified
pinhole P. The scene is ray-cast through the lens with exact per-pixel rays, its red channel coding
planar depth, and the DUSt3R double builds its pointmaps from what the images show (so a wrongly
rectified view gives a wrong pointmap, as it would for the network). With `rectify: auto` the
metric depth (scale from `metric_depth`, the true pinhole depth) and the pose match the ground
truth; with `rectify: disabled` the depth visibly does not. (The pose cannot show it with this
double: its pointmap back-projects each pixel with the same K that PnP uses, so it stays
self-consistent even on unrectified pixels.)

A stereo rig is rectified with rotations R != I: a third pair in the same node run carries R1 / R2
of cv2.stereoRectify (the rig's own relative pose; 5 and 8 degrees) in its CameraInfos, each view
coding the depth along its rectified camera's axis. Camera 1's depth must then be that of the
pinhole K rendered from the rotated camera, at the same tolerance (the double's pose is not
checked there: it places view 2 with the unrotated rig pose).

Tolerance (stated): median |depth error| <= 1 % of the true depth on pixels away from
discontinuities (7 cm depth code; measured 0.3 %), camera-2 rotation <= 0.5 deg and translation
direction <= 1 deg; without rectification the median depth error exceeds 3 % (measured 7 %).
"""
import json

import cv2
import numpy as np
import pytest
from pair_sim import SCENE_ENGINE, H, PairProbe, W, pair_node_cmd, stamp
from sensor_msgs.msg import CameraInfo
from std_msgs.msg import Header

from support.fake_engines.depth_code import encode_depth
from support.fake_engines.pair_scene import ID_BLOCK, STEREO_T_1_2, pose_of, stamp_id
from support.procs import spawn
from support.rosutil import child_env
from tt_depth_ros.geometry.camera.rectify import pixel_rays
from tt_depth_ros.geometry.pose.se3 import angle_deg
from tt_depth_ros.ros.msgs.depth import depth_image_msg, image_msg_to_depth, rgb_image_msg
from tt_depth_ros.ros.msgs.pose import T_from_pose_msg
from tt_depth_ros.tools.eval.scene_render import default_scene, intrinsics, render

pytestmark = [pytest.mark.ros, pytest.mark.timeout(150)]
MS = 1_000_000
Z_STEP = 0.07
K = intrinsics(W, H)                       # the rectified camera P (and the lens's K)
D = [-0.25, 0.06, 0.001, -0.001, 0.0]      # barrel


def _distorted_view(k, cam, R=None):
    """Camera `cam`'s view through the lens, coding depth along its axis (R: the rotated one)."""
    rays = pixel_rays('plumb_bob', K, D, W, H)
    _, depth = render(default_scene(), K, W, H, pose_of('stereo', k, cam), rays_cam=rays)
    if R is not None:   # z of each seen point in the rectified frame: depth * (R ray)_z
        depth = depth * (rays @ R[2]).reshape(H, W)
    rgb = stamp_id(encode_depth(depth, Z_STEP), k)
    # the id survives rectification: rectified pixel (0, 0) reads inside the block (with R
    # from about (20, 6); the double takes the block's colour for sky)
    block = ID_BLOCK if R is None else 2 * ID_BLOCK
    rgb[:block, :block] = rgb[0, 0]
    return rgb


def stereo_rectification():
    """R1, R2 of the scene's rig (camera 2 in camera 1: STEREO_T_1_2) from cv2.stereoRectify."""
    R12, t12 = STEREO_T_1_2[:3, :3], STEREO_T_1_2[:3, 3]
    R1, R2, *_ = cv2.stereoRectify(K, np.asarray(D), K, np.asarray(D), (W, H), R12.T,
                                   -R12.T @ t12, alpha=0)
    return R1, R2


def _info(header, R=None):
    msg = CameraInfo(header=header, width=W, height=H, distortion_model='plumb_bob', d=D,
                     k=K.reshape(-1).tolist(),
                     r=(np.eye(3) if R is None else R).reshape(-1).tolist())
    msg.p = np.concatenate([K, np.zeros((3, 1))], 1).reshape(-1).tolist()
    return msg


def test_distorted_stereo_is_rectified_before_the_network():
    ns = '/pair_rect'
    args = json.dumps({'mode': 'stereo', 'depth_code_step': Z_STEP})
    params = dict(mode='stereo', engine_plugin=SCENE_ENGINE, engine_plugin_args=args,
                  network_size=112, scale_source='depth', diagnostics_period=0.2)
    probe = PairProbe(ns, 'stereo')
    errors = {}
    Rs = stereo_rectification()
    assert min(np.degrees(np.linalg.norm(cv2.Rodrigues(R)[0])) for R in Rs) > 4.0
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_rect') as proc:
            probe.wait_ready()
            probe.wait_matched(probe.metric_pub)
            for j, case in enumerate(('auto', 'stereo', 'disabled')):
                mode = 'disabled' if case == 'disabled' else 'auto'
                assert all(r.successful for r in probe.set_params(f'{ns}/pair_node',
                                                                  {'rectify': mode}))
                k, t = 1, (50 + j) * 1000 * MS
                R = (None, None) if case != 'stereo' else Rs
                T_w1 = pose_of('stereo', k, 0).copy()
                if R[0] is not None:             # the rectified camera 1: turned by R1
                    T_w1[:3, :3] = T_w1[:3, :3] @ R[0].T
                _, truth = render(default_scene(), K, W, H, T_w1)
                probe.metric_pub.publish(depth_image_msg(truth, Header(stamp=stamp(t),
                                                                       frame_id='left')))
                for cam, frame in enumerate(('left', 'right')):
                    header = Header(stamp=stamp(t), frame_id=frame)
                    probe.info_pubs[cam].publish(_info(header, R[cam]))
                    probe.img_pubs[cam].publish(rgb_image_msg(_distorted_view(k, cam, R[cam]),
                                                              header))
                try:
                    d = image_msg_to_depth(probe.wait_stamp('depth', t))
                    T = T_from_pose_msg(probe.wait_stamp('pose', t).pose)
                except TimeoutError as exc:   # the node's own account of the pair
                    raise AssertionError(f'{case}: {exc}; node log:\n'
                                         f'{proc.log_text()[-4000:]}') from exc
                t_ = np.where(np.isfinite(truth), truth, 1e3).astype(np.float32)
                smooth = np.isfinite(d) & np.isfinite(truth) & (
                    cv2.dilate(t_, np.ones((5, 5))) - cv2.erode(t_, np.ones((5, 5))) < 0.08 * t_)
                assert smooth.sum() > 300
                t_gt = STEREO_T_1_2[:3, 3]
                cos = T[:3, 3] @ t_gt / (np.linalg.norm(T[:3, 3]) * np.linalg.norm(t_gt))
                errors[case] = {
                    'depth_median_rel': float(np.median(np.abs(d[smooth] - truth[smooth])
                                                        / truth[smooth])),
                    'rot_deg': angle_deg(T[:3, :3].T @ STEREO_T_1_2[:3, :3]),
                    'dir_deg': float(np.degrees(np.arccos(min(1.0, cos))))}
            d = probe.wait_diag(lambda v: v.get('distorted_unrectified_frames') == '2')
            assert d['rectified_frames'] == '4'      # two cameras, two pairs
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()
    print(errors)
    good, bad = errors['auto'], errors['disabled']
    assert good['depth_median_rel'] <= 0.01, errors
    assert good['rot_deg'] <= 0.5 and good['dir_deg'] <= 1.0, errors
    assert errors['stereo']['depth_median_rel'] <= 0.01, errors
    assert bad['depth_median_rel'] > 0.03, errors
