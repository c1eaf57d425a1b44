"""Sample bag: deterministic bytes, the promised topics, exact ground truth, stereo geometry."""
import numpy as np
import pytest
from rosbags.rosbag2 import Reader

from tt_depth_ros.tools.bag import sample as sb
from tt_depth_ros.tools.eval import scene_render as sr

CFG = sb.SampleBagConfig(width=80, height=60, frames=4, baseline_m=0.2)


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp('a') / 'bag'
    sb.generate(path, CFG)
    return path


def _decoded(path):
    ts = sb.typestore_for('jazzy')
    out = {}
    with Reader(path) as r:
        for c, t, raw in r.messages():
            out.setdefault(c.topic, []).append((t, ts.deserialize_cdr(raw, c.msgtype)))
    return out


def test_deterministic_bytes(bag, tmp_path):
    again = tmp_path / 'bag'
    sb.generate(again, CFG)
    for f in ('bag.mcap', 'metadata.yaml'):
        assert (again / f).read_bytes() == (bag / f).read_bytes()
    with pytest.raises(FileExistsError):
        sb.generate(again, CFG)
    sb.generate(again, CFG, overwrite=True)


def test_topics_types_and_headers(bag):
    msgs = _decoded(bag)
    assert set(msgs) == set(sb.TOPICS.values())
    assert all(len(v) == CFG.frames for v in msgs.values())
    img = msgs['/camera/image_raw'][0][1]
    assert (img.encoding, img.width, img.height, img.step) == ('rgb8', 80, 60, 240)
    assert img.header.frame_id == 'camera_optical_frame'
    right = msgs['/camera_right/image_raw'][0][1]
    assert right.header.frame_id == 'camera_right_optical_frame'
    depth = msgs['/camera/depth_gt'][0][1]
    assert depth.encoding == '32FC1' and depth.step == 320
    assert msgs['/camera/pose_gt'][0][1].header.frame_id == 'odom'
    assert msgs['/camera/image_raw/compressed'][0][1].format.startswith('rgb8; jpeg')
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
              for _, m in msgs['/camera/image_raw']]
    assert np.allclose(np.diff(stamps), 1e9 / CFG.rate_hz)
    for items in msgs.values():     # every topic of a frame shares the stamp
        assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in items] == stamps


def test_ground_truth_is_exact(bag):
    msgs = _decoded(bag)
    K = sr.intrinsics(80, 60, CFG.hfov_deg)
    poses = sr.default_trajectory(CFG.frames, CFG.step_m)
    for i in (0, CFG.frames - 1):
        rgb, depth = sr.render(sr.default_scene(), K, 80, 60, poses[i])
        m = msgs['/camera/depth_gt'][i][1]
        got = np.frombuffer(m.data.tobytes(), np.float32).reshape(60, 80)
        np.testing.assert_array_equal(got, depth)
        assert np.isposinf(got).any() and np.isfinite(got).any()
        img = msgs['/camera/image_raw'][i][1]
        np.testing.assert_array_equal(img.data.reshape(60, 80, 3), rgb)
        p = msgs['/camera/pose_gt'][i][1].pose
        np.testing.assert_allclose([p.position.x, p.position.y, p.position.z], poses[i][:3, 3])
        q = np.array([p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w])
        np.testing.assert_allclose(_R(q), poses[i][:3, :3], atol=1e-12)
    info = msgs['/camera/camera_info'][0][1]
    np.testing.assert_allclose(info.k.reshape(3, 3), K)
    rinfo = msgs['/camera_right/camera_info'][0][1]
    assert rinfo.p[3] == pytest.approx(-K[0, 0] * CFG.baseline_m)


def _R(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def test_quaternion_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        got = np.array(sb.quat_xyzw(_R(q)))
        np.testing.assert_allclose(got, q if q[3] >= 0 else -q, atol=1e-12)


def test_stereo_pair_matches_depth_and_baseline():
    """A left pixel at depth z appears fx*b/z pixels to the left in the right image."""
    K = sr.intrinsics(160, 120)
    T = sr.default_trajectory(1)[0]
    T_lr = np.eye(4)
    T_lr[0, 3] = 0.2
    rgb_l, depth = sr.render(sr.default_scene(), K, 160, 120, T)
    rgb_r, _ = sr.render(sr.default_scene(), K, 160, 120, T @ T_lr)
    v, u = np.mgrid[0:120, 0:160]
    ok = np.isfinite(depth)
    ur = np.rint(u - K[0, 0] * 0.2 / np.where(ok, depth, 1)).astype(int)
    ok &= (ur >= 0) & (ur < 160)
    diff = np.abs(rgb_l[ok].astype(int) - rgb_r[v[ok], ur[ok]].astype(int)).max(axis=1)
    assert np.mean(diff <= 40) > 0.9     # the same surface point (texture edges aside)


def test_bad_config_is_rejected(tmp_path):
    with pytest.raises(ValueError, match='frames'):
        sb.generate(tmp_path / 'x', sb.SampleBagConfig(frames=0))
    with pytest.raises(ValueError, match='storage'):
        sb.generate(tmp_path / 'x', sb.SampleBagConfig(storage='db3'))
