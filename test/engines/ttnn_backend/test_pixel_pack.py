"""Few-channel head maps packed k pixels to a tile row: the k rule, the lane masks, the order.

The packed forward itself is checked by the golden parity tests of both families (test_da3_ttnn,
test_dust3r_ttnn); here the pieces those rely on.
"""
import numpy as np
import pytest
import torch

from tt_depth_ros.engines.ttnn.dust3r.dpt_head import unpack_rows
from tt_depth_ros.engines.ttnn.layers.pixel_pack import lane_pattern, pack, pixels_per_row


@pytest.mark.parametrize('hw,channels,k', [
    (518 * 518, 2, 14),     # 268324 = 4 * 7^2 * 37^2: 28 of 32 lanes
    (280 * 504, 2, 16),     # all 32 lanes
    (384 * 512, 4, 8),
    (7 * 5, 4, 7),
    (37, 2, 1)])            # a prime: one pixel a row, as unpacked
def test_pixels_per_row_is_the_largest_divisor_that_fits_a_tile_row(hw, channels, k):
    assert pixels_per_row(hw, channels) == k
    assert hw % k == 0 and k * channels <= 32


def test_lane_pattern_repeats_per_pixel():
    m = lane_pattern((1.0, 0.0), 3)
    assert m.shape == (1, 1, 1, 6) and m.flatten().tolist() == [1, 0, 1, 0, 1, 0]


def test_pack_keeps_the_row_major_order(ttnn):
    dev = ttnn.open_device(device_id=0)
    x = torch.arange(518 * 518 * 2, dtype=torch.float32).reshape(1, 1, 518 * 518, 2)
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=dev)
    k = pixels_per_row(518 * 518, 2)
    p = pack(ttnn, t, 518 * 518, 2, k)
    assert tuple(p.shape) == (1, 1, 518 * 518 // k, 2 * k)
    got = ttnn.to_torch(p)
    np.testing.assert_array_equal(got.reshape(518, 518, 2).numpy(), x.reshape(518, 518, 2))
    ttnn.deallocate(p)
    ttnn.close_device(dev)


def test_dust3r_rows_unpack_to_pixels():
    """Row r of a view: k pixels' [xyz, conf], then the same pixels' raw values."""
    views, h, w = 2, 4, 6
    k = pixels_per_row(h * w, 4)
    act = np.random.default_rng(0).normal(size=(views, h * w, 4)).astype(np.float32)
    raw = np.random.default_rng(1).normal(size=(views, h * w, 4)).astype(np.float32)
    rows = np.concatenate([act.reshape(views, h * w // k, 4 * k),
                           raw.reshape(views, h * w // k, 4 * k)], axis=2)
    a, r = unpack_rows(rows.reshape(views * h * w // k, 8 * k), views, h, w)
    np.testing.assert_array_equal(a, act.reshape(views, h, w, 4))
    np.testing.assert_array_equal(r, raw.reshape(views, h, w, 4))
