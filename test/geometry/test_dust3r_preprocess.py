"""DUSt3R preprocessing vs upstream load_images fixtures (test/data/dust3r/README.md §4): exact."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from support.dust3r_data import DATA, fixture, normalise
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import (
    map_intrinsics,
    network_size,
    preprocess,
)


@pytest.mark.parametrize('wh', ['640x480', '1920x1080', '480x640', '300x200'])
def test_reproduces_upstream_exactly(wh):
    ref = fixture(f'prep_{wh}')
    u8 = np.asarray(Image.open(DATA / f'prep_{wh}.png').convert('RGB'))
    plan = network_size(u8.shape[1], u8.shape[0])
    assert plan.src_wh == tuple(ref['orig_size_wh'])
    assert plan.resized_wh == tuple(ref['resized_size_wh'])
    assert plan.box_ltrb == tuple(ref['crop_box_ltrb'])
    assert plan.net_hw == tuple(ref['true_shape'][0])
    np.testing.assert_array_equal(normalise(preprocess(u8, plan)), ref['img'])
    np.testing.assert_allclose(map_intrinsics(ref['K_in'], plan), ref['K_net'], rtol=1e-12, atol=0)
    assert plan.valid_mask().all()


@pytest.mark.parametrize('wh,net_wh', [((640, 480), (512, 384)), ((4032, 3024), (512, 384)),
                                       ((1000, 1000), (512, 384)), ((1920, 1080), (512, 288)),
                                       ((848, 480), (512, 288)), ((1280, 800), (512, 320)),
                                       ((752, 480), (512, 320)), ((2000, 900), (512, 224)),
                                       ((1241, 376), (512, 144)), ((300, 200), (512, 336)),
                                       ((480, 640), (384, 512))])
def test_network_size_table(wh, net_wh):
    """docs/dust3r.md §5 table, portrait kept as portrait."""
    assert network_size(*wh).net_wh == net_wh


def test_pad_mode_letterboxes_and_maps_back():
    rng = np.random.default_rng(0)
    u8 = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    plan = network_size(640, 480, mode='pad', pad_value=128)
    assert plan.net_hw == (512, 512) and plan.box_ltrb == (0, -64, 512, 448)
    net = preprocess(u8, plan)
    mask = plan.valid_mask()
    assert mask.sum() == 512 * 384 and not mask[:64].any() and not mask[448:].any()
    assert (net[~mask] == 128).all()
    # the content equals crop mode's resize (same filter, same resized size)
    crop = preprocess(u8, network_size(640, 480))
    np.testing.assert_array_equal(net[64:448], crop)
    # a camera point projects onto the network pixel the mapped K predicts, and maps back
    K = np.array([[500.0, 0, 319.5], [0, 505.0, 239.5], [0, 0, 1]])
    Kn = map_intrinsics(K, plan)
    X = np.array([0.3, -0.2, 2.0])
    u, v = (K @ X)[:2] / X[2]
    x, y = (Kn @ X)[:2] / X[2]
    su, sv = plan.net_to_src(x, y)
    assert su == pytest.approx(u, abs=1e-9) and sv == pytest.approx(v, abs=1e-9)
    assert y == pytest.approx((v + 0.5) * 384 / 480 - 0.5 + 64, abs=1e-9)


def test_portrait_pad_is_centred_horizontally():
    plan = network_size(480, 640, mode='pad')
    assert plan.resized_wh == (384, 512) and plan.box_ltrb == (-64, 0, 448, 512)
    assert plan.valid_mask()[:, 64:448].all() and not plan.valid_mask()[:, :64].any()


@pytest.mark.parametrize('args', [(10, 480), (640, 0), (640.5, 480)])
def test_tiny_or_bad_sizes_raise(args):
    with pytest.raises(ValueError, match='too small'):
        network_size(*args)


def test_thin_image_in_crop_mode_raises():
    with pytest.raises(ValueError, match='pad'):
        network_size(4000, 20)


def test_bad_inputs_raise():
    plan = network_size(640, 480)
    with pytest.raises(ValueError, match='mode'):
        network_size(640, 480, mode='stretch')
    with pytest.raises(ValueError, match='plan is for'):
        preprocess(np.zeros((480, 600, 3), np.uint8), plan)
    with pytest.raises(ValueError, match='uint8'):
        preprocess(np.zeros((480, 640, 3), np.float32), plan)
    K = np.eye(3)
    K[0, 2] = np.nan
    with pytest.raises(ValueError, match='NaN'):
        map_intrinsics(K, plan)
    with pytest.raises(ValueError, match='positive'):
        map_intrinsics(np.diag([-1.0, 1.0, 1.0]), plan)
    with pytest.raises(ValueError, match='3x3'):
        map_intrinsics(np.eye(4), plan)
