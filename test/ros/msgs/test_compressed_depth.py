"""compressedDepth messages: byte layout and round trip through an independent decoder.

The decoder (support/compressed_depth_decoder.py) is written from image_transport's format
description with zlib only; the bound is computed here from the header's A: a rounded q returns
depth d within 0.5 d^2 / (A - d/2).
"""
import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import Header

from support.compressed_depth_decoder import decode_compressed_depth
from tt_depth_ros.ros.msgs.compressed_depth import compressed_depth_msg


def _header():
    h = Header(frame_id='cam_optical_frame')
    h.stamp.sec, h.stamp.nanosec = 7, 11
    return h


def _scene(h=48, w=64):
    """Depths from 0.16 m to 9.9 m, plus every kind of 'no depth' in the first row."""
    yy, xx = np.mgrid[0:h, 0:w]
    depth = (0.16 + 9.74 * (yy * w + xx) / (h * w - 1)).astype(np.float32)
    depth[0, :6] = [np.nan, np.inf, -np.inf, 0.0, -1.0, 12.0]
    depth[0, 6] = 0.05            # nearer than A / (65535.5 - B): q would not fit in 16 bits
    return depth


@pytest.mark.parametrize('quant, dmax', [(100.0, 10.0), (50.0, 20.0)])
def test_32fc1_layout_and_round_trip_within_the_bound(quant, dmax):
    depth = _scene()
    msg = compressed_depth_msg(depth, _header(), '32FC1', dmax, quant, png_level=6)
    assert isinstance(msg, CompressedImage)
    assert msg.format == '32FC1; compressedDepth png'
    assert (msg.header.stamp.sec, msg.header.frame_id) == (7, 'cam_optical_frame')
    dec = decode_compressed_depth(msg.format, msg.data)
    a_want = np.float32(quant) * np.float32(quant + 1)
    assert dec.compression_format == 0                       # INV_DEPTH
    assert dec.quant_a == a_want
    assert dec.quant_b == np.float32(1.0) - a_want / np.float32(dmax)
    assert dec.plane.shape == depth.shape
    with np.errstate(divide='ignore', invalid='ignore'):
        fits = dec.quant_a / depth.astype(np.float64) + dec.quant_b < 65535.5   # q in 16 bits
    valid = np.isfinite(depth) & (depth > 0) & (depth < dmax) & fits
    assert valid[0, 6] == (quant == 50.0)      # 0.05 m: too near for Q = 100, not for Q = 50
    assert np.all(dec.plane[~valid] == 0) and np.all(np.isnan(dec.depth_m[~valid]))
    assert np.all(dec.plane[valid] > 0)
    d = depth[valid].astype(np.float64)
    err = np.abs(dec.depth_m[valid] - d)
    bound = 0.5 * d * d / (dec.quant_a - 0.5 * d)
    assert np.all(err <= bound * (1 + 1e-6) + 1e-9), float(np.max(err / bound))
    assert np.max(err / bound) > 0.5      # the bound is tight: really Q (Q + 1) levels
    # inverse depth: near depths are finer than far ones
    near, far = d < 1.0, d > 8.0
    assert err[near].max() < err[far].max()


def test_16uc1_is_millimetres_with_depth_max_cut():
    depth = _scene()
    msg = compressed_depth_msg(depth, _header(), '16UC1', depth_max_m=5.0)
    assert msg.format == '16UC1; compressedDepth png'
    dec = decode_compressed_depth(msg.format, msg.data)
    assert (dec.quant_a, dec.quant_b) == (0.0, 0.0)
    ok = np.isfinite(depth) & (depth > 0) & (np.rint(depth * 1000) <= 5000)
    assert np.array_equal(dec.plane[ok], np.rint(depth[ok] * 1000).astype(np.uint16))
    assert np.all(dec.plane[~ok] == 0)


def test_smaller_than_float_depth():
    yy, xx = np.mgrid[0:480, 0:640]
    depth = (1.0 + 3.0 * yy / 480 + 0.3 * np.sin(xx / 20)).astype(np.float32)
    msg = compressed_depth_msg(depth, _header())
    assert len(msg.data) < depth.nbytes / 4


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="'32FC1' or '16UC1'"):
        compressed_depth_msg(np.ones((4, 4), np.float32), _header(), 'mono8')
    with pytest.raises(ValueError, match=r'\(H, W\)'):
        compressed_depth_msg(np.ones((4, 4, 1), np.float32), _header())
    with pytest.raises(ValueError, match='depth_max'):
        compressed_depth_msg(np.ones((4, 4), np.float32), _header(), depth_max_m=0.0)
    with pytest.raises(ValueError, match='png_level'):
        compressed_depth_msg(np.ones((4, 4), np.float32), _header(), png_level=10)
