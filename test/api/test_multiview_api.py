"""MultiViewPredictor against upstream's 3-view inference case (api_small_3v_1280x720, DA3-SMALL).

Also the mapping of every output back to the original image size; cloud, savers, crops, bad input.
"""
import json

import cv2
import numpy as np
import pytest

from support.da3_fixtures import (
    ANYVIEW,
    anyview_golden,
    anyview_png,
    anyview_state_dict,
    assert_anyview_close,
    grid4,
)
from tt_depth_ros.api import MultiViewPredictor
from tt_depth_ros.api.multiview import w2c_to_c2w

API_PNGS = [ANYVIEW / f'api_small_3v_1280x720_img{i}.png' for i in range(3)]


@pytest.fixture(scope='module')
def small():
    p = MultiViewPredictor.from_pretrained('da3-small', dtype='float32', backend='torch-cpu',
                                           state_dict=anyview_state_dict('da3-small'))
    yield p
    p.close()


@pytest.fixture(scope='module')
def api_case(small):
    return small([str(p) for p in API_PNGS]), anyview_golden('api_small_3v_1280x720.npz')


def test_network_outputs_match_upstream_inference(api_case):
    r, g = api_case
    np.testing.assert_allclose(r.network['input'], g['input'], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(r.network['processed_images'], g['processed_images'])
    assert r.ref_view == int(g['ref_view']) == 1
    assert_anyview_close(grid4(r.network['depth'], g), g['depth'], 'depth')
    assert_anyview_close(grid4(r.network['conf'], g), g['conf'], 'conf')
    assert_anyview_close(r.network['extrinsics_w2c'], g['extrinsics'], 'extrinsics')
    assert_anyview_close(r.network['K'], g['intrinsics'], 'intrinsics')
    assert r.is_metric is False and r.depth_units == 'relative'


def test_outputs_are_mapped_to_the_original_size(api_case):
    r, g = api_case
    (H0, W0), (h, w) = g['orig_hw'][0], g['input'].shape[2:]
    assert [d.shape for d in r.depth] == [(H0, W0)] * 3 == [c.shape for c in r.conf]
    # K: row 0 scaled by W0/w, row 1 by H0/h (upstream leaves K at the processed size)
    want = g['intrinsics'].astype(np.float64) * np.array([W0 / w, H0 / h, 1.0])[None, :, None]
    np.testing.assert_allclose(r.K, want, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(r.K, r.K_estimated)
    assert abs(r.K[0, 0, 2] - W0 / 2) < 1e-9 and abs(r.K[0, 1, 2] - H0 / 2) < 1e-9
    # depth: the original-size map sampled at each network pixel centre gives that pixel's depth
    ys, xs = np.mgrid[4:h - 4:9, 4:w - 4:9]
    u = ((xs + 0.5) * W0 / w - 0.5).astype(np.float32)
    v = ((ys + 0.5) * H0 / h - 0.5).astype(np.float32)
    for i in range(3):
        back = cv2.remap(r.depth[i], u, v, cv2.INTER_LINEAR)
        np.testing.assert_allclose(back, r.network['depth'][i][ys, xs], rtol=0.02)
    # poses: camera-to-world inverse of upstream's world-to-camera
    for i in range(3):
        e = np.vstack([g['extrinsics'][i], [0, 0, 0, 1]]).astype(np.float64)
        np.testing.assert_allclose(r.poses_c2w[i] @ e, np.eye(4), atol=1e-4)


def test_fused_cloud_and_savers(api_case, tmp_path):
    r, _ = api_case
    pts, cols = r.fused_cloud(decimation=8)
    assert pts.shape[1] == 3 and cols.dtype == np.uint8 and len(pts) == len(cols)
    assert len(pts) == 3 * 90 * 160 and np.isfinite(pts).all()
    # a view's points seen from its own camera have that view's depth as z
    cam = (pts[:90 * 160] - r.poses_c2w[0][:3, 3]) @ r.poses_c2w[0][:3, :3]
    np.testing.assert_allclose(cam[:, 2], r.depth[0][::8, ::8].ravel(), rtol=1e-4)
    np.testing.assert_array_equal(cols[:90 * 160], r.images[0][::8, ::8].reshape(-1, 3))
    assert r.save_ply(tmp_path / 'c.ply', decimation=8) == len(pts)
    assert (tmp_path / 'c.ply').read_bytes().startswith(b'ply\nformat binary_little_endian')
    r.save_poses_json(tmp_path / 'p.json', names=[p.name for p in API_PNGS])
    j = json.loads((tmp_path / 'p.json').read_text())
    assert j['units'] == 'relative' and j['reference_view'] == 1
    assert 'camera-to-world' in j['convention'] and j['views'][2]['image'] == API_PNGS[2].name
    np.testing.assert_allclose(j['views'][1]['T_world_camera'], r.poses_c2w[1])
    r.save_npz(tmp_path / 'r.npz')
    with np.load(tmp_path / 'r.npz') as z:
        np.testing.assert_array_equal(z['depth_2'], r.depth[2])
        assert not bool(z['is_metric'])


@pytest.fixture(scope='module')
def tiny():
    p = MultiViewPredictor.from_pretrained('da3-anyview-tiny', dtype='float32', backend='torch-cpu',
                                           state_dict=anyview_state_dict())
    yield p
    p.close()


def test_views_of_different_sizes_are_centre_cropped(tiny):
    a = anyview_png('scene0_280x504_view0.png')
    b = anyview_png('scene0_378x504_view0.png')
    r = tiny([a, b], K=np.array([[400.0, 0, 252], [0, 400.0, 140], [0, 0, 1]]))
    assert r.network['input'].shape == (2, 3, 280, 504)
    np.testing.assert_array_equal(r.network['crop'], [[0, 0], [49, 0]])
    assert r.depth[1].shape == (378, 504)
    assert np.isnan(r.depth[1][:49]).all() and np.isnan(r.depth[1][-49:]).all()
    assert np.isfinite(r.depth[1][49:-49]).all()
    # estimated K of the cropped view: principal point shifted back by the crop
    assert abs(r.K_estimated[1, 1, 2] - (140 + 49)) < 1e-9
    np.testing.assert_array_equal(r.K[0], [[400.0, 0, 252], [0, 400.0, 140], [0, 0, 1]])


def test_bad_input(tiny):
    with pytest.raises(ValueError, match='non-empty list'):
        tiny([])
    with pytest.raises(ValueError, match='non-empty list'):
        tiny('a.png')
    img = anyview_png('scene0_280x504_view0.png')
    with pytest.raises(ValueError, match=r'K must be 3x3 or \(2, 3, 3\)'):
        tiny([img, img], K=np.eye(3)[None].repeat(3, 0))
    with pytest.raises(ValueError, match='MultiViewPredictor model'):
        MultiViewPredictor.from_pretrained('da3metric-large', dtype='float32')
    with pytest.raises(ValueError, match='torch-cpu'):
        MultiViewPredictor.from_pretrained('da3-small', backend='ttnn')


def test_w2c_to_c2w_inverts():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    e = np.hstack([q, rng.normal(size=(3, 1))])[None]
    T = w2c_to_c2w(e)[0]
    np.testing.assert_allclose(T @ np.vstack([e[0], [0, 0, 0, 1]]), np.eye(4), atol=1e-12)
