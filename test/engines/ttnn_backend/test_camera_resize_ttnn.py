"""The upstream resize on the ttnn device (`prepare_camera` / `infer_camera`), on the CPU stand-in.

The trace of a (network, camera) key starts from the camera-size uint8 input and resizes it with
the matrices of geometry/preprocess/resize_map.py (engines/ttnn/layers/camera_resize.py):
the device's network image must be the host bytes but for near-ties (one level on under 1 % of
the values, with the FPU's TF32 operand reading modelled), the depth must match `infer` on
the host-resized image, a camera key and a network key of the same network size must live side
by side and be evicted cleanly, and the refusals must name the problem. That the real library
accepts these ops is the dry run's part (devtools/ttnn/dryrun, driver.py --camera).
"""
import numpy as np
import pytest
import torch

from support.da3_fixtures import load_png_rgb
from tt_depth_ros.engines.parity import compare_maps
from tt_depth_ros.engines.ttnn import build_ttnn_engine
from tt_depth_ros.engines.ttnn.layers.camera_resize import TtCameraResize
from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size, resize_to_network
from tt_depth_ros.geometry.preprocess.resize_map import resize_map


def _camera_frame(w, h):
    """A camera image with real texture: a golden network image resampled to (w, h)."""
    import cv2
    return cv2.resize(load_png_rgb('tiny_280x504.png'), (w, h),
                      interpolation=cv2.INTER_CUBIC)


@pytest.mark.parametrize('wh', [(640, 480), (700, 400)])   # area (one step); area + snap
def test_device_network_image_is_the_host_bytes_but_tf32(ttnn, da3_tiny_sd, wh):
    w, h = wh
    img = _camera_frame(w, h)
    net = network_size(w, h, 504)
    rmap = resize_map((h, w), net, 504)
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd) as eng:
        camera = TtCameraResize(eng.ctx, rmap)
        x = ttnn.from_torch(torch.from_numpy(img).reshape(1, 1, h * w, 3), dtype=ttnn.uint8,
                            layout=ttnn.ROW_MAJOR_LAYOUT, device=eng.ctx.device)
        tile = camera(x)
        assert tile.dtype == ttnn.bfloat16 and tile.layout == ttnn.TILE_LAYOUT
        ours = ttnn.to_torch(tile).float().numpy().reshape(*net, 3)
        for t in (x, tile):
            ttnn.deallocate(t)
        camera.release()
    host = resize_to_network(img, net, 504).astype(np.float32)
    diff = np.abs(ours - host)
    print(f'{w}x{h} -> {net}: {(diff > 0).mean():.2%} of the values differ, max {diff.max()}')
    assert np.array_equal(ours, np.round(ours))                  # integers: the uint8 store
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01


@pytest.mark.parametrize('wh', [(320, 240), (700, 400)])   # cubic up (one step); area + snap
def test_camera_key_matches_the_host_resized_image(ttnn, da3_tiny_sd, wh):
    w, h = wh
    img = _camera_frame(w, h)
    net = network_size(w, h, 168)
    rmap = resize_map((h, w), net, 168)
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, dtype='float32') as eng:
        assert eng.resizes_on_device
        eng.prepare_camera(rmap)
        out = eng.infer_camera(img, rmap)
        ref = eng.infer(resize_to_network(img, net, 168))      # prepares the network key
        assert eng.info.details['camera_sizes'] == [[h, w], None]
        assert eng.info.details['shapes'] == [list(net), list(net)]
    assert out['depth'].shape == ref['depth'].shape == net
    a = compare_maps(ref['depth'], out['depth'])
    print(f'{w}x{h} -> {net}: depth {a}')
    # the tiny random-weight network spreads each one-level input difference over the image
    assert a.pcc >= 0.99999 and a.median_rel < 2e-3 and a.p99_rel < 1e-2


def test_camera_keys_evict_and_refuse_cleanly(ttnn, da3_tiny_sd):
    rmaps = [resize_map((240, 320), network_size(320, 240, 168), 168),
             resize_map((300, 400), network_size(400, 300, 168), 168)]
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd,
                           max_traced_shapes=1) as eng:
        live0 = len(eng.ctx.device.live_tensors())
        eng.infer_camera(_camera_frame(320, 240), rmaps[0])     # prepared on demand
        one = len(eng.ctx.device.live_tensors())
        eng.infer_camera(_camera_frame(400, 300), rmaps[1])     # evicts the first key
        assert eng.info.details['camera_sizes'] == [[300, 400]]
        assert len(eng.ctx.device._traces) == 1
        eng.prepare(rmaps[1].net_hw)                             # the network key evicts it too
        assert eng.info.details['camera_sizes'] == [None]
        eng.infer_camera(_camera_frame(320, 240), rmaps[0])
        assert len(eng.ctx.device.live_tensors()) == one        # nothing left behind
        assert one > live0
        with pytest.raises(ValueError, match=r"camera size \(240, 320\)"):
            eng.infer_camera(_camera_frame(400, 300), rmaps[0])
