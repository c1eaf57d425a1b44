"""DepthPredictor end to end with tiny DA3 weights.

Metric scale at several camera sizes and process resolutions with known intrinsics, sky/range
options, output grids, savers, bad input.
"""
import logging

import cv2
import numpy as np
import pytest
from PIL import Image

from support.da3_fixtures import load_png_rgb, tiny_state_dict
from tt_depth_ros.api import DepthPredictor, DepthResult


@pytest.fixture(scope='module')
def predictor():
    p = DepthPredictor.from_pretrained('da3metric-tiny', dtype='float32', backend='torch-cpu',
                                       state_dict=tiny_state_dict(), output='network')
    yield p
    p.close()


def _camera_image(w, h):
    return cv2.resize(load_png_rgb('preproc_1280x720.png'), (w, h), interpolation=cv2.INTER_AREA)


# (camera W, H, process_res, expected network H, W)
CASES = [(640, 480, 504, 378, 504), (1280, 720, 504, 280, 504), (1242, 375, 504, 154, 504),
         (480, 640, 504, 504, 378), (300, 200, 504, 336, 504), (1280, 720, 308, 168, 308),
         (848, 480, 392, 224, 392)]


@pytest.mark.parametrize('w,h,pr,net_h,net_w', CASES)
def test_metric_scale_uses_network_focal(predictor, w, h, pr, net_h, net_w):
    img = _camera_image(w, h)
    fx, fy, cx, cy = 0.9 * w, 0.93 * w, w / 2 - 3.5, h / 2 + 2.0
    predictor.process_res = pr
    try:
        r = predictor(img, fx=fx, fy=fy, cx=cx, cy=cy)
    finally:
        predictor.process_res = 504
    assert r.depth.shape == (net_h, net_w) and r.raw_depth.shape == (net_h, net_w)
    fxn, fyn = fx * net_w / w, fy * net_h / h       # focal at network resolution, by hand
    np.testing.assert_allclose(r.K_network[:2, :2], [[fxn, 0], [0, fyn]], rtol=1e-12)
    np.testing.assert_allclose(r.K_network[:2, 2], [cx * net_w / w, cy * net_h / h], rtol=1e-12)
    expected = r.raw_depth * np.float32((fxn + fyn) / 2 / 300)
    expected[r.sky_score >= 0.3] = np.inf
    np.testing.assert_allclose(r.depth, expected, rtol=1e-6)
    assert r.is_metric and not r.intrinsics_assumed
    # camera-resolution focal would be off by ~W/W_net: make sure that is not what happened
    assert not np.allclose(np.nanmedian(r.depth[np.isfinite(r.depth)]),
                           np.nanmedian(r.raw_depth) * (fx + fy) / 600, rtol=0.05)


def test_depth_scales_linearly_with_focal(predictor):
    img = _camera_image(640, 480)
    a = predictor(img, fx=500.0, fy=500.0)
    b = predictor(img, fx=1000.0, fy=1000.0)
    fin = np.isfinite(a.depth)
    np.testing.assert_allclose(b.depth[fin], 2 * a.depth[fin], rtol=1e-6)
    np.testing.assert_allclose(a.depth[fin], a.raw_depth[fin] * 393.75 / 300, rtol=1e-6)


def test_K_matrix_equals_fx_fy_and_inputs_agree(predictor, tmp_path):
    img = _camera_image(640, 480)
    K = np.array([[520.0, 0, 318.0], [0, 515.0, 241.0], [0, 0, 1]])
    a = predictor(img, K)
    path = tmp_path / 'cam.png'
    Image.fromarray(img).save(path)
    b = predictor(str(path), fx=520.0, fy=515.0, cx=318.0, cy=241.0)
    c = predictor(Image.fromarray(img), K)
    np.testing.assert_array_equal(a.depth, b.depth)
    np.testing.assert_array_equal(a.depth, c.depth)


def test_no_intrinsics_assumes_canonical_focal_and_warns(predictor, caplog):
    with caplog.at_level(logging.WARNING):
        r = predictor(_camera_image(640, 480))
    assert r.intrinsics_assumed and 'metric scale is unreliable' in caplog.text
    assert r.K_network[0, 0] == r.K_network[1, 1] == 300.0
    fin = np.isfinite(r.depth)
    np.testing.assert_allclose(r.depth[fin], r.raw_depth[fin], rtol=1e-6)


def test_camera_output_grid_and_sky_modes():
    eng_args = dict(backend='torch-cpu', state_dict=tiny_state_dict())
    with DepthPredictor.from_pretrained('da3metric-tiny', sky_mode='nan', max_depth_m=1.0,
                                        **eng_args) as p:
        img = _camera_image(1280, 720)
        K = np.array([[1152.0, 0, 636.5], [0, 1190.4, 362.0], [0, 0, 1]])
        r = p(img, K)
    assert isinstance(r, DepthResult)
    assert r.depth.shape == (720, 1280) and r.sky.shape == (720, 1280)
    np.testing.assert_array_equal(r.K, K)                      # camera grid: the camera's K
    assert r.image.shape == (720, 1280, 3)
    assert np.isnan(r.depth[r.sky]).all() and r.sky.any()
    assert np.isposinf(r.depth).any()                          # beyond 1 m -> +Inf
    fin = r.depth[np.isfinite(r.depth)]
    assert fin.size and fin.max() <= 1.0
    net_depth = r.raw_depth * np.float32((K[0, 0] * 504 / 1280 + K[1, 1] * 280 / 720) / 600)
    net_fin = net_depth[(r.sky_score < 0.3) & (net_depth <= 1.0)]
    assert fin.min() >= net_fin.min() - 1e-6 and fin.max() <= net_fin.max() + 1e-6


def test_savers(predictor, tmp_path):
    r = predictor(_camera_image(640, 480), fx=500.0, fy=500.0)
    r.save_png16_mm(tmp_path / 'd.png')
    mm = cv2.imread(str(tmp_path / 'd.png'), cv2.IMREAD_UNCHANGED)
    assert mm.dtype == np.uint16 and mm.shape == r.depth.shape
    fin = np.isfinite(r.depth)
    want = np.rint(r.depth[fin].astype(np.float64) * 1000).astype(np.uint16)
    np.testing.assert_array_equal(mm[fin], want)
    assert (mm[~fin] == 0).all() and (~fin).any()
    r.save_npz(tmp_path / 'd.npz')
    with np.load(tmp_path / 'd.npz') as z:
        np.testing.assert_array_equal(z['depth'], r.depth)
        np.testing.assert_array_equal(z['K'], r.K)
        assert bool(z['is_metric']) and not bool(z['intrinsics_assumed'])
    r.save_npy(tmp_path / 'd.npy')
    np.testing.assert_array_equal(np.load(tmp_path / 'd.npy'), r.depth)
    r.save_colorized(tmp_path / 'c.png')
    col = cv2.imread(str(tmp_path / 'c.png'))
    assert col.shape == r.depth.shape + (3,) and (col[~fin] == 0).all()
    n = r.save_ply(tmp_path / 'p.ply', decimation=2)
    data = (tmp_path / 'p.ply').read_bytes()
    header, body = data.split(b'end_header\n')
    assert f'element vertex {n}'.encode() in header and len(body) == n * 15
    pts = np.frombuffer(body, dtype=[('xyz', '<f4', 3), ('rgb', 'u1', 3)])['xyz']
    sub = r.depth[::2, ::2]
    assert n == int(np.isfinite(sub).sum())
    np.testing.assert_allclose(np.sort(pts[:, 2]), np.sort(sub[np.isfinite(sub)]), rtol=1e-6)


def test_mono_is_relative():
    from tt_depth_ros.engines.factory import build_engine
    eng = build_engine('da3metric-tiny', dtype='float32', backend='torch-cpu',
                       state_dict=tiny_state_dict())
    p = DepthPredictor(eng, is_metric=False, output='network', sky_mode='keep')
    r = p(_camera_image(640, 480), fx=500.0, fy=500.0)
    assert not r.is_metric
    np.testing.assert_array_equal(r.depth, r.raw_depth)         # no focal scaling
    with pytest.raises(ValueError, match='relative'):
        r.save_png16_mm('/nonexistent/x.png')
    with pytest.raises(ValueError, match='relative'):
        r.points()
    p.close()


@pytest.mark.parametrize('kwargs,match', [
    ({'image': np.zeros((48, 64, 3), np.float32)}, 'uint8'),
    ({'image': np.zeros((48, 64), np.uint8)}, r'\(H, W, 3\)'),
    ({'image': np.zeros((48, 64, 4), np.uint8)}, r'\(H, W, 3\)'),
    ({'image': 'no/such/file.png'}, 'does not exist'),
    ({'image': np.zeros((4, 4000, 3), np.uint8)}, 'smaller than one 14 px patch'),
    ({'fx': float('nan'), 'fy': 500.0}, 'NaN'),
    ({'fx': 500.0, 'fy': 0.0}, 'focal'),
    ({'fx': 500.0}, 'together'),
    ({'K': np.eye(3), 'fx': 1.0, 'fy': 1.0}, 'not both'),
    ({'K': np.eye(2)}, '3x3'),
])
def test_bad_input(predictor, kwargs, match):
    image = kwargs.pop('image', np.zeros((48, 64, 3), np.uint8))
    with pytest.raises(ValueError, match=match):
        predictor(image, **kwargs)


def test_bad_input_types_and_options(predictor, tmp_path):
    with pytest.raises(TypeError, match='path, PIL image or numpy array'):
        predictor(12345)
    bad = tmp_path / 'x.png'
    bad.write_bytes(b'not an image')
    with pytest.raises(ValueError, match='cannot read image'):
        predictor(bad)
    with pytest.raises(ValueError, match='sky_mode'):
        DepthPredictor(predictor.engine, sky_mode='fill')
    with pytest.raises(ValueError, match='multiples of 14'):
        DepthPredictor(predictor.engine, fixed_size=(100, 100))
    with pytest.raises(ValueError, match='model='):
        DepthPredictor.from_pretrained('dust3r-vitl-512-dpt', dtype='float32')


def test_fixed_size(predictor):
    predictor.fixed_size = (518, 518)
    try:
        r = predictor(_camera_image(1242, 375), fx=700.0, fy=700.0)
    finally:
        predictor.fixed_size = None
    assert r.depth.shape == (518, 518)
    np.testing.assert_allclose([r.K_network[0, 0], r.K_network[1, 1]],
                               [700 * 518 / 1242, 700 * 518 / 375])


# ---------------------------------------------------------------------------------------------
# the rest of the family on one image: any-view (relative + conf + intrinsics) and NESTED (metres)
# ---------------------------------------------------------------------------------------------
def test_anyview_model_gives_relative_depth_conf_and_intrinsics(tmp_path):
    from support.da3_fixtures import anyview_golden, anyview_png, anyview_state_dict

    g = anyview_golden('tiny_1v_280x504.npz')
    img = anyview_png('scene0_280x504_view0.png')
    big = cv2.resize(img, (1008, 560), interpolation=cv2.INTER_CUBIC)
    with DepthPredictor.from_pretrained('da3-anyview-tiny', dtype='float32', backend='torch-cpu',
                                        state_dict=anyview_state_dict()) as p:
        r = p(img)
        rb = p(big)
    assert not r.is_metric and r.depth_units == 'relative' and not r.intrinsics_assumed
    np.testing.assert_allclose(r.depth, g['depth'][0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r.conf, g['depth_conf'][0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r.K_estimated, g['intrinsics'][0], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(r.K, r.K_estimated)           # no K given: the estimate
    assert not r.sky.any()
    # camera output at 2x: K scaled to the camera grid, maps resampled to it
    assert rb.depth.shape == rb.conf.shape == (560, 1008)
    kb, kn = rb.K_estimated, rb.K_network
    np.testing.assert_allclose([kb[0, 0] / kn[0, 0], kb[0, 2] / kn[0, 2], kb[1, 1] / kn[1, 1],
                                kb[1, 2] / kn[1, 2]], 2.0, rtol=1e-9)
    with pytest.raises(ValueError, match='relative'):
        r.save_png16_mm(tmp_path / 'x.png')
    r.save_npz(tmp_path / 'r.npz')
    with np.load(tmp_path / 'r.npz') as z:
        assert str(z['depth_units']) == 'relative' and z['conf'].shape == r.depth.shape


def test_nested_model_gives_metres_without_calibration(monkeypatch):
    """NESTED with tiny branches stands in for the full model (licence opt-in needed)."""
    from support.da3_fixtures import anyview_png, anyview_state_dict
    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.engines.licence import ACCEPT_ENV, LicenseNotAcceptedError
    from tt_depth_ros.models.da3.config import ANYVIEW_TINY, TINY

    sd = {'model.da3.' + k[6:]: v for k, v in anyview_state_dict().items()}
    sd.update({'model.da3_metric.' + k[6:]: v for k, v in tiny_state_dict().items()})
    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    kw = dict(backend='torch-cpu', state_dict=sd, config=(ANYVIEW_TINY, TINY))
    with pytest.raises(LicenseNotAcceptedError, match='CC-BY-NC-4.0'):
        build_engine('da3nested-giant-large-1.1', **kw)
    eng = build_engine('da3nested-giant-large-1.1', accept_license=True, **kw)
    assert eng.info.details == {**eng.info.details, 'kind': 'nested', 'is_metric': True}
    img = anyview_png('scene0_280x504_view0.png')
    raw = eng.infer(img)
    p = DepthPredictor(eng, kind='nested', output='network', sky_mode='keep')
    r = p(img, fx=300.0, fy=300.0)          # given K: reported, does not change the metres
    assert r.is_metric and r.depth_units == 'm'
    np.testing.assert_array_equal(r.depth, raw['depth'])
    assert float(raw['scale_factor']) > 0 and r.K[0, 0] == 300.0
    assert r.K_estimated is not None and r.K_estimated[0, 0] != 300.0
    p.close()
