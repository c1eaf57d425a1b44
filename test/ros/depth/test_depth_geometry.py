"""Geometry exactness through the ROS path: known raw depth in, closed-form metres and points out.

The node runs in its own process with the known-depth engine double (network only); this test
process publishes Image + CameraInfo and checks depth, depth/camera_info and points against values
computed here from first principles (image_geometry's P/binning/ROI rules, DA3's metric scale with
the focal at network resolution, depth_image_proc's back-projection) for several intrinsics,
resolutions, binning/ROI settings, decimations and both output resolutions. The double
`resizes_on_device`, so the camera-grid cases hand the camera image to `infer_camera` and the
network-grid ones resize on the host (both roads of the frame path, one node).
"""
import time

import numpy as np
import pytest
from pointcloud2 import read_points
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header

from support.procs import spawn, wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth, rgb_image_msg

pytestmark = pytest.mark.ros
NS, NODE = '/geo', '/geo/depth_node'
BASE, GX, GY, SKY_ROWS = 2.0, 0.01, 0.02, 3

# (image W, H, CameraInfo W, H, K or P, binning (x, y), roi (x, y, w, h), decimation, output res)
CASES = [
    (640, 480, 640, 480, ('K', 500.0, 500.0, 319.5, 239.5), (0, 0), (0, 0, 0, 0), 1, 'network'),
    (320, 180, 1280, 720, ('P', 900.0, 880.0, 640.0, 355.0), (1, 1), (0, 0, 0, 0), 2, 'network'),
    (320, 240, 640, 480, ('P', 520.0, 515.0, 322.0, 241.0), (2, 2), (0, 0, 0, 0), 3, 'network'),
    (400, 300, 800, 600, ('P', 610.0, 600.0, 405.0, 298.0), (1, 1), (100, 60, 400, 300), 4,
     'camera'),
    (320, 240, 800, 600, ('K', 700.0, 702.0, 399.0, 301.0), (2, 2), (80, 40, 640, 480), 1,
     'camera'),
]


def _camera_info(case, header):
    _, _, cw, ch, (kind, fx, fy, cx, cy), (bx, by), roi, _, _ = case
    msg = CameraInfo(header=header, width=cw, height=ch, binning_x=bx, binning_y=by)
    msg.roi.x_offset, msg.roi.y_offset, msg.roi.width, msg.roi.height = roi
    msg.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0] if kind == 'K' else [1.0] * 9
    msg.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0] if kind == 'P' else [0.0] * 12
    return msg


def _expected_K_image(case):
    """image_geometry: P (else K), binning, ROI; then the explicit resize to the image size."""
    w, h, cw, ch, (_, fx, fy, cx, cy), (bx, by), roi, _, _ = case
    bx, by = bx or 1, by or 1
    rw, rh = (roi[2], roi[3]) if roi[2] else (cw, ch)
    sx, sy = w / (rw / bx), h / (rh / by)
    return np.array([[fx / bx * sx, 0, (cx - roi[0]) / bx * sx],
                     [0, fy / by * sy, (cy - roi[1]) / by * sy], [0, 0, 1]])


def _backproject(depth, K, d):
    v, u = np.mgrid[0:depth.shape[0]:d, 0:depth.shape[1]:d].astype(np.float64)
    z = depth[::d, ::d].astype(np.float64)
    with np.errstate(invalid='ignore'):
        pts = np.stack([(u - K[0, 2]) * z / K[0, 0], (v - K[1, 2]) * z / K[1, 1], z], -1)
    pts[~np.isfinite(z)] = np.nan
    return pts


@pytest.fixture(scope='module')
def probe():
    p = RosProbe('geo_probe')
    yield p
    p.close()


def _outputs_for(probe, stamp_sec):
    def find(topic):
        return next((m for m in probe.got(topic) if m.header.stamp.sec == stamp_sec), None)
    return {t: find(f'{NS}/{t}') for t in ('depth', 'depth/camera_info', 'points')}


def test_geometry_exact_through_ros(probe):
    args = (f'{{"base": {BASE}, "gx": {GX}, "gy": {GY}, "sky_rows": {SKY_ROWS}, '
            '"resize_on_device": true}')
    params = {'engine_plugin': KNOWN_ENGINE, 'engine_plugin_args': args,
              'input_reliability': 'reliable', 'points_format': 'xyzrgb'}
    for t, typ in (('depth', Image), ('depth/camera_info', CameraInfo), ('points', PointCloud2)):
        probe.subscribe(typ, f'{NS}/{t}', RELIABLE)
    img_pub = probe.publisher(Image, f'{NS}/image', RELIABLE)
    info_pub = probe.publisher(CameraInfo, f'{NS}/camera_info', RELIABLE)
    with spawn(depth_node_cmd(NS, params), env=child_env(), name='geo-node') as proc:
        probe.wait_matched(img_pub, timeout=60)
        probe.wait_matched(info_pub)
        probe.wait_state(NODE, 'active', 60)
        rng = np.random.default_rng(1)
        for i, case in enumerate(CASES):
            w, h, *_, dec, res = case
            for r in probe.set_params(NODE, {'points_decimation': dec, 'output_resolution': res}):
                assert r.successful, r.reason
            header = Header(frame_id=f'cam{i}_optical_frame')
            header.stamp.sec, header.stamp.nanosec = 100 + i, 1234
            rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                info_pub.publish(_camera_info(case, header))
                time.sleep(0.05)
                img_pub.publish(rgb_image_msg(rgb, header))
                out = None
                t_end = time.monotonic() + 1.0
                while time.monotonic() < t_end:
                    out = _outputs_for(probe, 100 + i)
                    if all(out.values()):
                        break
                    time.sleep(0.02)
                if out and all(out.values()):
                    break
            assert out and all(out.values()), f'case {i}: outputs missing\n{proc.log_text()}'
            _check_case(case, header, rgb, out)
        assert 'known-depth: resized (300, 400) -> ' in proc.log_text(), proc.log_text()
        _check_mm_and_preview(probe, img_pub, info_pub, proc)


def _check_mm_and_preview(probe, img_pub, info_pub, proc):
    """16UC1 millimetres (0 = invalid/sky) and the rgb8 turbo preview, same header and size."""
    probe.subscribe(Image, f'{NS}/depth/colorized', RELIABLE)
    for r in probe.set_params(NODE, {'depth_encoding': '16UC1', 'colorized_enable': True,
                                     'output_resolution': 'network'}):
        assert r.successful, r.reason
    case = CASES[0]
    header = Header(frame_id='mm_optical_frame')
    header.stamp.sec = 200
    wait_for(lambda: probe.node.count_subscribers(f'{NS}/depth/colorized') > 0, 10,
             what='preview subscription')
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        info_pub.publish(_camera_info(case, header))
        img_pub.publish(rgb_image_msg(np.zeros((case[1], case[0], 3), np.uint8), header))
        time.sleep(0.3)
        depth = [m for m in probe.got(f'{NS}/depth') if m.header.stamp.sec == 200]
        prev = [m for m in probe.got(f'{NS}/depth/colorized') if m.header.stamp.sec == 200]
        if depth and prev:
            break
    assert depth and prev, proc.log_text()
    net_h, net_w = network_size(case[0], case[1], 504)
    K_net = _expected_K_image(case)
    scale = (K_net[0, 0] * net_w / case[0] + K_net[1, 1] * net_h / case[1]) / 2 / 300
    v, u = np.mgrid[0:net_h, 0:net_w]
    mm = np.rint((BASE + GX * u + GY * v) * scale * 1000).astype(np.uint16)
    mm[:SKY_ROWS] = 0
    d = depth[0]
    assert (d.encoding, d.step, d.height, d.width) == ('16UC1', 2 * net_w, net_h, net_w)
    got = np.frombuffer(d.data, '<u2').reshape(net_h, net_w)
    assert np.abs(got.astype(int) - mm.astype(int)).max() <= 1     # float32 rounding at .5 mm
    p = prev[0]
    assert (p.encoding, p.height, p.width, p.header.frame_id) == \
        ('rgb8', net_h, net_w, 'mm_optical_frame')
    img = np.frombuffer(p.data, np.uint8).reshape(net_h, net_w, 3)
    assert not img[:SKY_ROWS].any() and img[SKY_ROWS:].any()       # sky black, scene coloured


def _check_case(case, header, rgb, out):
    w, h, *_, dec, res = case
    net_h, net_w = network_size(w, h, 504)
    K_img = _expected_K_image(case)
    K_net = K_img.copy()
    K_net[0] *= net_w / w
    K_net[1] *= net_h / h
    scale = (K_net[0, 0] + K_net[1, 1]) / 2 / 300
    v, u = np.mgrid[0:net_h, 0:net_w].astype(np.float32)
    metric = (np.float32(BASE) + np.float32(GX) * u + np.float32(GY) * v) * np.float32(scale)
    metric[:SKY_ROWS] = np.inf
    depth_msg, info, cloud = out['depth'], out['depth/camera_info'], out['points']
    for m in out.values():
        assert m.header.frame_id == header.frame_id
        assert (m.header.stamp.sec, m.header.stamp.nanosec) == (header.stamp.sec, 1234)
    depth = image_msg_to_depth(depth_msg)
    assert depth_msg.encoding == '32FC1'
    if res == 'network':
        assert depth.shape == (net_h, net_w)
        np.testing.assert_allclose(depth, metric, rtol=1e-6)
        K_out = K_net
    else:
        assert depth.shape == (h, w)
        assert np.all(np.isposinf(depth[0]))      # sky rows stay +Inf at camera resolution
        fin = np.isfinite(depth)
        assert fin.mean() > 0.9
        lo, hi = metric[SKY_ROWS:].min(), metric[SKY_ROWS:].max()
        assert depth[fin].min() >= lo * (1 - 1e-6) and depth[fin].max() <= hi * (1 + 1e-6)
        K_out = K_img
    assert (info.width, info.height) == (depth.shape[1], depth.shape[0])
    np.testing.assert_allclose(np.reshape(info.k, (3, 3)), K_out, rtol=1e-9)
    np.testing.assert_allclose(np.reshape(info.p, (3, 4))[:, :3], K_out, rtol=1e-9)
    exp = _backproject(depth, K_out, dec)
    assert (cloud.height, cloud.width) == exp.shape[:2]
    assert (cloud.point_step, cloud.is_dense) == (32, False)
    pts = read_points(cloud, field_names=['x', 'y', 'z', 'rgb'], skip_nans=False)
    got = np.stack([pts['x'], pts['y'], pts['z']], -1).reshape(exp.shape)
    np.testing.assert_allclose(got, exp, rtol=2e-6, atol=1e-6, equal_nan=True)
    if res == 'camera':
        bits = np.asarray(pts['rgb'], np.float32).view(np.uint32).reshape(exp.shape[:2])
        sub = rgb[::dec, ::dec].astype(np.uint32)
        np.testing.assert_array_equal(bits, (sub[..., 0] << 16) | (sub[..., 1] << 8) | sub[..., 2])
