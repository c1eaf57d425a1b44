"""The upstream resize on the engine's device (`resizes_on_device`, `infer_camera`), torch engine.

On CUDA the torch engine takes camera-size frames and runs the resize as matmuls; the same code
runs here on the CPU with `resize_on_device=True`. Checked: the device's network image equals the
host chain's bytes (to within rounding ties), the network outputs equal `infer` on the host-resized
image, the DA3 frame path hands camera images to such an engine (and not for the network-grid
output), and the refusals name the problem.
"""
import numpy as np
import pytest
import torch

from support.da3_fixtures import load_png_rgb, tiny_state_dict
from tt_depth_ros.engines.parity import compare_maps
from tt_depth_ros.engines.torch.da3 import build_torch_engine
from tt_depth_ros.geometry.preprocess.da3_preprocess import network_size, resize_to_network
from tt_depth_ros.geometry.preprocess.resize_map import resize_map
from tt_depth_ros.pipelines.depth import DA3FramePath, FrameOptions

K_CAM = np.array([[500.0, 0, 319.5], [0, 505.0, 239.5], [0, 0, 1]])


@pytest.fixture(scope='module')
def engines():
    sd = tiny_state_dict()
    device = build_torch_engine('da3metric-tiny', state_dict=sd, dtype='float32',
                                resize_on_device=True)
    host = build_torch_engine('da3metric-tiny', state_dict=sd, dtype='float32')
    yield device, host
    device.close()
    host.close()


def _camera_frame():
    """A 640x480 camera image made from a golden network image (real texture), upscaled."""
    import cv2
    return cv2.resize(load_png_rgb('tiny_378x504.png'), (640, 480),
                      interpolation=cv2.INTER_CUBIC)


def test_capability_is_off_on_cpu_by_default_and_reported(engines):
    device, host = engines
    assert device.resizes_on_device and device.info.details['resize_on_device'] is True
    assert not host.resizes_on_device and host.info.details['resize_on_device'] is False


@pytest.mark.parametrize('wh', [(640, 480), (1280, 720)])   # one step; two steps
def test_device_resize_gives_the_host_network_image(engines, wh):
    device, _ = engines
    import cv2
    w, h = wh
    img = cv2.resize(_camera_frame(), (w, h), interpolation=cv2.INTER_LINEAR)
    net = network_size(w, h, 504)
    rmap = resize_map((h, w), net, 504)
    ours = device._resample(torch.from_numpy(img), rmap).numpy()
    host = resize_to_network(img, net, 504)
    diff = np.abs(ours.astype(int) - host.astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01


def test_infer_camera_equals_infer_on_the_host_resized_image(engines):
    device, host = engines
    img = _camera_frame()
    rmap = resize_map((480, 640), (378, 504), 504)
    out = device.infer_camera(img, rmap)
    assert 'resample' in device.last_timings and 'upload' in device.last_timings
    # the network itself: what infer gives on the device's own network image
    same_input = host.infer(device._resample(torch.from_numpy(img), rmap).numpy())
    assert set(out) == set(same_input)
    for name in same_input:
        assert out[name].shape == (378, 504)
        np.testing.assert_allclose(out[name], same_input[name], rtol=1e-5, atol=1e-6)
    # against the host chain: a few input values differ by one level (rounding ties)
    # (the tiny random-weight network spreads each one over the image through attention)
    _assert_near(out['depth'], host.infer(resize_to_network(img, (378, 504), 504))['depth'])


def _assert_near(ours, ref):
    """Within the rounding-tie effect: median 1e-3, worst 1e-2 relative, same invalid pixels."""
    fin = np.isfinite(ref)
    assert np.array_equal(fin, np.isfinite(ours)) and fin.mean() > 0.99
    a = compare_maps(ref, ours)
    rel = np.abs(ours[fin] / ref[fin] - 1)
    assert a.median_rel < 1e-3 and rel.max() < 1e-2 and a.pcc > 0.9999, str(a)


def test_frame_path_sends_camera_frames_to_a_resizing_engine(engines, monkeypatch):
    device, host = engines
    img = _camera_frame()
    calls = []
    real = device.infer_camera
    monkeypatch.setattr(device, 'infer_camera', lambda *a: calls.append(a) or real(*a))
    on_device = DA3FramePath(device, 'metric')
    on_host = DA3FramePath(host, 'metric')
    a = on_device(img, on_device.intrinsics(K_CAM), FrameOptions())
    b = on_host(img, on_host.intrinsics(K_CAM), FrameOptions())
    assert len(calls) == 1 and calls[0][0] is img and calls[0][1].net_hw == (378, 504)
    assert a.depth.shape == b.depth.shape == (480, 640)
    np.testing.assert_array_equal(a.K, b.K)
    _assert_near(a.depth, b.depth)
    assert 'engine_resample' in a.timings and 'engine_resample' not in b.timings
    # the network-grid output needs the network image on the host: the host resizes
    net = on_device(img, on_device.intrinsics(K_CAM), FrameOptions(output='network'))
    assert len(calls) == 1 and net.image.shape == (378, 504, 3)


def test_refusals_name_the_problem(engines):
    device, host = engines
    rmap = resize_map((480, 640), (378, 504), 504)
    with pytest.raises(NotImplementedError, match='resizes_on_device is False'):
        host.infer_camera(_camera_frame(), rmap)
    with pytest.raises(ValueError, match=r"camera size \(480, 640\)"):
        device.infer_camera(np.zeros((240, 320, 3), np.uint8), rmap)
    with pytest.raises(ValueError, match='uint8'):
        device.infer_camera(np.zeros((480, 640, 3), np.float32), rmap)
