"""The upstream DA3 resize as matrices (geometry/preprocess/resize_map.py) against the host chain.

The map is what an engine that `resizes_on_device` runs; it must give the bytes of
`resize_to_network` (the upstream cv2 chain) except where float summation order moves a value
across a rounding tie: by one level, on a small fraction of pixels.
"""
import numpy as np
import pytest

from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size, resize_to_network
from tt_depth_ros.geometry.preprocess.resize_map import resize_map


def _frame(h, w, seed=0):
    """A textured frame: smooth gradients (the ties of a natural image) plus noise."""
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:h, 0:w]
    base = np.stack([u * 255 / max(w - 1, 1), v * 255 / max(h - 1, 1),
                     (u + v) % 256], axis=-1)
    return np.clip(base + rng.normal(0, 20, (h, w, 3)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize('wh, process_res, fixed, steps', [
    ((640, 480), 504, None, 1),        # the common camera: one INTER_AREA step (504x378)
    ((1280, 720), 504, None, 2),       # area down to 504x284, then the snap to 280
    ((320, 240), 504, None, 1),        # INTER_CUBIC up
    ((1242, 375), 504, None, 2),       # KITTI: area down, then the snap
    ((700, 500), 504, None, 2),
    ((640, 480), 504, (280, 504), 1),  # a fixed network size: one direct resize
    ((504, 378), 504, None, 0),        # already the network size: nothing to do
])
def test_map_gives_the_host_chain_bytes(wh, process_res, fixed, steps):
    w, h = wh
    net = fixed or network_size(w, h, process_res)
    img = _frame(h, w)
    host = resize_to_network(img, net, process_res)
    rmap = resize_map((h, w), tuple(net), process_res)
    assert len(rmap.steps) == steps
    assert rmap.src_hw == (h, w) and rmap.net_hw == tuple(net)
    ours = rmap.apply(img)
    assert ours.shape == host.shape and ours.dtype == np.uint8
    diff = np.abs(ours.astype(int) - host.astype(int))
    assert diff.max() <= 1, f'{wh}: a pixel differs by {diff.max()} levels'
    assert (diff > 0).mean() < 0.01, f'{wh}: {(diff > 0).mean():.2%} of the values differ'


def test_rows_and_cols_are_interpolation_weights():
    rmap = resize_map((480, 640), (378, 504), 504)
    (step,) = rmap.steps
    assert step.rows.shape == (378, 480) and step.cols.shape == (504, 640)
    np.testing.assert_allclose(step.rows.sum(axis=1), 1.0, atol=1e-6)   # weights sum to one
    np.testing.assert_allclose(step.cols.sum(axis=1), 1.0, atol=1e-6)
    assert (step.rows >= 0).all() and (step.cols >= 0).all()             # area: no negative lobe
    assert not step.rows.flags.writeable                                 # cached: shared


def test_map_is_cached_per_size_and_rejects_another_size():
    a = resize_map((480, 640), (378, 504), 504)
    assert resize_map((480, 640), (378, 504), 504) is a
    with pytest.raises(ValueError, match=r"camera size \(480, 640\)"):
        a.apply(np.zeros((240, 320, 3), np.uint8))
