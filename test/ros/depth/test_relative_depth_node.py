"""Relative, any-view and NESTED DA3 kinds in the depth node, through real ROS processes.

Each node runs in its own process with the known-geometry engine double
(support/fake_engines/known_anyview.py: a level camera 1.5 m above a floor, a wall at 12 m, the
engine's "estimated" camera known); this process publishes images (and CameraInfo / metric depth
where a case needs them) and checks every output's topic, frame, stamp, unit and value against
closed-form expectations, and /diagnostics' statement of the focal and scale that produced them.
"""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from pointcloud2 import read_points
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header

from support.fake_engines.known_anyview import scene
from support.procs import spawn, wait_for
from support.rosutil import RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.depth import depth_image_msg, image_msg_to_depth, rgb_image_msg
from tt_depth_ros.ros.runtime.diagnostics import status_values

pytestmark = pytest.mark.ros


PLUGIN = 'support.fake_engines.known_anyview:KnownAnyviewEngine'
W, H = 320, 240            # camera image
NH, NW = 168, 224          # network grid for process_res 224 (4:3 kept)
HEIGHT, WALL, FF, REL = 1.5, 12.0, 0.8, 4.0
Z, K_EST = scene(NH, NW, HEIGHT, WALL, FF)
Z_WALL, _ = scene(NH, NW, HEIGHT, WALL, FF, floor=False)
FRAME = 'cam_optical_frame'
IMAGE = rgb_image_msg(np.full((H, W, 3), 90, np.uint8), Header())
BRIGHT = rgb_image_msg(np.full((H, W, 3), 250, np.uint8), Header())


def _params(kind, **extra):
    args = (f'{{"kind": "{kind}", "height": {HEIGHT}, "wall_z": {WALL}, "focal_frac": {FF}, '
            f'"rel_scale": {REL}, "low_conf_rows": 10, "sky_rows": 5}}')
    p = {'engine_plugin': PLUGIN, 'engine_plugin_args': args, 'process_res': 224,
         'output_resolution': 'network', 'input_reliability': 'reliable',
         'diagnostics_period': 0.2, 'camera_info_mode': 'wait'}
    p.update(extra)
    return p


class Node:
    """One node under test: its namespace, input publishers and output collection."""

    def __init__(self, probe, ns, outputs):
        self.probe, self.ns, self.name = probe, ns, f'{ns}/depth_node'
        self.outputs = outputs
        for topic, typ in outputs.items():
            probe.subscribe(typ, f'{ns}/{topic}', RELIABLE)
        self.img = probe.publisher(Image, f'{ns}/image')
        self.info = probe.publisher(CameraInfo, f'{ns}/camera_info')
        self.metric = probe.publisher(Image, f'{ns}/metric_depth')

    def ready(self):
        self.probe.wait_matched(self.img, timeout=60)
        self.probe.wait_state(self.name, 'active', 60)
        self.probe.wait_sources([f'{self.ns}/{t}' for t in self.outputs], 20)

    def got(self, topic, sec):
        return [m for m in self.probe.got(f'{self.ns}/{topic}') if m.header.stamp.sec == sec]

    def frame(self, sec, topics, image=IMAGE, info=None, metric=None, timeout=20.0):
        """Publish the frame (re-sent each second) until every topic has the stamp `sec`."""
        header = Header(frame_id=FRAME)
        header.stamp.sec = sec
        image.header = header
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if info is not None:
                info.header = header
                self.info.publish(info)
            if metric is not None:
                self.metric.publish(depth_image_msg(metric, header))
            self.img.publish(image)
            t_end = time.monotonic() + 1.0
            while time.monotonic() < t_end:
                if all(self.got(t, sec) for t in topics):
                    return {t: self.got(t, sec)[0] for t in topics}
                time.sleep(0.02)
        raise AssertionError(f'{self.ns}: no {topics} for stamp {sec}')

    def diag(self):
        for arr in reversed(self.probe.got('/diagnostics')):
            for st in arr.status:
                if st.name == self.name:
                    return status_values(st)
        return {}

    def diag_when(self, pred, what):
        wait_for(lambda: pred(self.diag()), 15, what=f'{what}: {self.diag()}')
        return self.diag()


@pytest.fixture(scope='module')
def probe():
    p = RosProbe('relative_probe')
    p.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
    yield p
    p.close()


def _K(info):
    return np.reshape(info.k, (3, 3))


def _cloud_xyz(cloud):
    pts = read_points(cloud, field_names=['x', 'y', 'z'], skip_nans=False)
    return np.stack([pts['x'], pts['y'], pts['z']], -1).reshape(cloud.height, cloud.width, 3)


def _backproject(depth, K):
    v, u = np.mgrid[0:depth.shape[0], 0:depth.shape[1]].astype(np.float64)
    with np.errstate(invalid='ignore'):
        return np.stack([(u - K[0, 2]) * depth / K[0, 0], (v - K[1, 2]) * depth / K[1, 1],
                         depth], -1)


def _check_header(msgs, sec):
    for topic, m in msgs.items():
        assert (m.header.frame_id, m.header.stamp.sec) == (FRAME, sec), topic


def test_anyview_relative_outputs_and_scale_sources(probe):
    """Any-view kind: no scale / camera_height / metric depth image, three nodes side by side."""
    rel_topics = {'depth_relative': Image, 'depth_relative/camera_info': CameraInfo,
                  'confidence': Image, 'camera_info_estimated': CameraInfo}
    metric_topics = {'depth': Image, 'depth/camera_info': CameraInfo, 'points': PointCloud2}
    plain = Node(probe, '/rel_none', dict(rel_topics, points_relative=PointCloud2))
    height = Node(probe, '/rel_height', dict(rel_topics, points_relative=PointCloud2,
                                             **metric_topics))
    ratio = Node(probe, '/rel_ratio', dict(rel_topics, depth=Image))
    cmds = [depth_node_cmd('/rel_none', _params('anyview')),
            depth_node_cmd('/rel_height', _params('anyview', scale_source='camera_height',
                                                  camera_height_m=HEIGHT, min_confidence=1.5)),
            depth_node_cmd('/rel_ratio', _params('anyview', scale_source='depth'))]
    with spawn(cmds[0], env=child_env(), name='rel-none') as p0, \
            spawn(cmds[1], env=child_env(), name='rel-height') as p1, \
            spawn(cmds[2], env=child_env(), name='rel-ratio') as p2:
        logs = lambda: '\n'.join(p.log_text() for p in (p0, p1, p2))  # noqa: E731
        for n in (plain, height, ratio):
            n.ready()
        # no scale source: relative outputs only, nothing at all on `depth`
        out = plain.frame(10, list(plain.outputs))
        _check_header(out, 10)
        assert probe.node.count_publishers('/rel_none/depth') == 0
        assert probe.node.count_publishers('/rel_none/points') == 0
        rel = image_msg_to_depth(out['depth_relative'])
        assert out['depth_relative'].encoding == '32FC1' and rel.shape == (NH, NW)
        np.testing.assert_allclose(rel, Z / np.float32(REL), rtol=1e-6)
        for key in ('depth_relative/camera_info', 'camera_info_estimated'):
            info = out[key]
            assert (info.width, info.height) == (NW, NH)
            np.testing.assert_allclose(_K(info), K_EST, rtol=1e-6)
        conf = image_msg_to_depth(out['confidence'])
        assert conf.shape == (NH, NW) and (conf[:10] == 1).all() and (conf[10:] == 2).all()
        np.testing.assert_allclose(_cloud_xyz(out['points_relative']),
                                   _backproject(rel.astype(np.float64), K_EST), rtol=2e-6,
                                   atol=1e-6)
        d = plain.diag_when(lambda d: d.get('depth_kind') == 'relative', 'relative diag')
        assert (d['focal_source'], d['scale_source'], d['units']) == \
            ('estimated', 'none', 'model units (relative)')
        assert d['model_kind'] == 'anyview'
        # camera resolution: maps resampled, the estimate's K mapped to the image size
        assert all(r.successful for r in probe.set_params(plain.name,
                                                          {'output_resolution': 'camera'}))
        out = plain.frame(11, list(plain.outputs))
        assert image_msg_to_depth(out['depth_relative']).shape == (H, W)
        assert image_msg_to_depth(out['confidence']).shape == (H, W)
        K_img = K_EST * np.array([[W / NW], [H / NH], [1.0]])
        for key in ('depth_relative/camera_info', 'camera_info_estimated'):
            assert (out[key].width, out[key].height) == (W, H)
            np.testing.assert_allclose(_K(out[key]), K_img, rtol=1e-6)
        assert (out['points_relative'].width, out['points_relative'].height) == (W, H)

        # camera_height: the ground plane gives metres; low-confidence rows leave the cloud
        # (both clouds); points_relative is published every frame, beside the metric outputs
        out = height.frame(20, list(height.outputs))
        _check_header(out, 20)
        rel = image_msg_to_depth(out['depth_relative']).astype(np.float64)
        rel_pts = _cloud_xyz(out['points_relative'])
        assert np.isnan(rel_pts[:10]).all()
        np.testing.assert_allclose(rel_pts[10:], _backproject(rel, K_EST)[10:], rtol=2e-6,
                                   atol=1e-6)
        depth = image_msg_to_depth(out['depth'])
        assert out['depth'].encoding == '32FC1'
        np.testing.assert_allclose(depth, Z, rtol=1e-4)
        np.testing.assert_allclose(_K(out['depth/camera_info']), K_EST, rtol=1e-6)
        pts = _cloud_xyz(out['points'])
        assert np.isnan(pts[:10]).all()
        np.testing.assert_allclose(pts[10:], _backproject(Z.astype(np.float64), K_EST)[10:],
                                   rtol=1e-4, atol=1e-5)
        d = height.diag_when(lambda d: d.get('scale_source') == 'camera_height', 'height diag')
        assert abs(float(d['scale']) - REL) < 1e-3 * REL and d['units'] == 'metres'
        floor = (Z < WALL)[10:].mean()
        assert abs(float(d['ground_inlier_ratio']) - floor) < 0.02
        # a frame without visible ground: relative outputs, no metric ones, a counted refusal
        out = height.frame(21, ['depth_relative', 'points_relative'], image=BRIGHT)
        np.testing.assert_allclose(image_msg_to_depth(out['depth_relative']),
                                   Z_WALL / np.float32(REL), rtol=1e-6)
        d = height.diag_when(lambda d: int(d.get('rejected_scale', 0)) >= 1, 'scale refusal')
        assert 'ground' in d['last_scale_failure'] and int(d['scale_failures']) >= 1
        time.sleep(0.5)
        assert not height.got('depth', 21) and not height.got('points', 21), logs()

        # depth source: the median ratio to a metric image with the same stamp
        out = ratio.frame(30, ['depth_relative', 'depth'], metric=Z * np.float32(1.0))
        np.testing.assert_allclose(image_msg_to_depth(out['depth']), Z, rtol=1e-6)
        d = ratio.diag_when(lambda d: d.get('scale_source') == 'depth', 'ratio diag')
        assert abs(float(d['scale']) - REL) < 1e-5 and int(d['scale_support']) > 1000


def test_nested_focal_source_and_mono(probe):
    """NESTED: metres with the estimated focal, then the CameraInfo focal; mono: relative only."""
    nested = Node(probe, '/nested', {'depth': Image, 'depth/camera_info': CameraInfo,
                                     'camera_info_estimated': CameraInfo, 'confidence': Image,
                                     'points': PointCloud2})
    mono = Node(probe, '/mono', {'depth_relative': Image,
                                 'depth_relative/camera_info': CameraInfo})
    with spawn(depth_node_cmd('/nested', _params('nested')), env=child_env(),
               name='nested') as pn, \
            spawn(depth_node_cmd('/mono', _params('mono')), env=child_env(), name='mono') as pm:
        nested.ready()
        mono.ready()
        expect = Z.copy()
        expect[:5] = np.inf                                    # sky rows: +Inf (REP 117)
        out = nested.frame(40, list(nested.outputs))
        _check_header(out, 40)
        np.testing.assert_allclose(image_msg_to_depth(out['depth']), expect, rtol=1e-6)
        np.testing.assert_allclose(_K(out['depth/camera_info']), K_EST, rtol=1e-6)
        d = nested.diag_when(lambda d: d.get('focal_source') == 'estimated', 'nested estimated')
        assert d['depth_kind'] == 'metric' and d['units'] == 'metres'
        # a calibrated camera: its focal scales the metres, the estimate is reported beside it
        f_real = 300.0                                          # px at 320x240
        info = CameraInfo(width=W, height=H, k=[f_real, 0.0, 160.0, 0.0, f_real, 120.0,
                                                0.0, 0.0, 1.0])
        out = nested.frame(41, list(nested.outputs), info=info)
        f_net = f_real * NW / W
        np.testing.assert_allclose(image_msg_to_depth(out['depth']),
                                   expect * np.float32(f_net / K_EST[0, 0]), rtol=1e-5)
        np.testing.assert_allclose(_K(out['depth/camera_info'])[0, 0], f_net, rtol=1e-9)
        np.testing.assert_allclose(_K(out['camera_info_estimated']), K_EST, rtol=1e-6)
        d = nested.diag_when(lambda d: d.get('focal_source') == 'camera_info', 'nested calib')
        f_est_img = FF * NW * W / NW
        assert abs(float(d['focal_difference_pct']) - 100 * (f_est_img / f_real - 1)) < 1e-2
        assert abs(float(d['focal_used_px']) - f_real) < 1e-3

        # mono: waits for CameraInfo (camera_info_mode=wait), no confidence / estimate topics
        out = mono.frame(50, list(mono.outputs), info=info)
        _check_header(out, 50)
        rel = image_msg_to_depth(out['depth_relative'])
        np.testing.assert_allclose(rel, expect / np.float32(REL), rtol=1e-6)
        np.testing.assert_allclose(_K(out['depth_relative/camera_info'])[0, 0], f_net,
                                   rtol=1e-9)
        for topic in ('depth', 'confidence', 'camera_info_estimated', 'points'):
            assert probe.node.count_publishers(f'/mono/{topic}') == 0, topic
        assert pn.poll() is None and pm.poll() is None


def test_camera_height_from_tf(probe):
    """camera_height_frame: the height is the camera's z in the ground frame of /tf_static."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage

    from tt_depth_ros.ros.msgs.pose import transform_stamped_msg

    node = Node(probe, '/rel_tf', {'depth_relative': Image, 'depth': Image})
    params = _params('anyview', scale_source='camera_height',
                     camera_height_frame='base_footprint')
    latched = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    tf_pub = probe.publisher(TFMessage, '/tf_static', latched)
    with spawn(depth_node_cmd('/rel_tf', params), env=child_env(), name='rel-tf') as proc:
        node.ready()
        # no TF yet: the frame is refused with the reason, the relative depth still goes out
        node.frame(60, ['depth_relative'])
        d = node.diag_when(lambda d: int(d.get('rejected_scale', 0)) >= 1, 'no TF refusal')
        assert 'TF' in d['last_scale_failure'] and not node.got('depth', 60)
        # base_footprint -> base_link (0.9 m up) -> optical frame (0.6 m up, REP 103 axes)
        R_base_optical = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
        T1, T2 = np.eye(4), np.eye(4)
        T1[2, 3] = 0.9
        T2[:3, :3], T2[:3, 3] = R_base_optical, (0.2, 0.0, HEIGHT - 0.9)
        stamp = Header().stamp
        tf_pub.publish(TFMessage(transforms=[
            transform_stamped_msg(T1, stamp, 'base_footprint', 'base_link'),
            transform_stamped_msg(T2, stamp, 'base_link', FRAME)]))
        out = node.frame(61, ['depth'])
        np.testing.assert_allclose(image_msg_to_depth(out['depth']), Z, rtol=1e-4)
        d = node.diag_when(lambda d: 'camera_height_m' in d, 'tf height diag')
        assert float(d['camera_height_m']) == pytest.approx(HEIGHT, abs=1e-6)
        assert abs(float(d['scale']) - REL) < 1e-3 * REL
        assert proc.poll() is None
