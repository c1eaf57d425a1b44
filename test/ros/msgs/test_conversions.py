"""Message conversions against independent implementations: rosbags-image and pointcloud2.

Every supported encoding (with row padding and both endiannesses for mono16), compressed JPEG/PNG,
depth encodings and both cloud layouts; malformed messages raise ImageDecodeError.
"""
import array

import cv2
import numpy as np
import pytest
from pointcloud2 import read_points
from rosbags.image import message_to_cvimage
from sensor_msgs.msg import CompressedImage, Image, PointCloud2, PointField
from std_msgs.msg import Header

from tt_depth_ros.geometry.depth.depth_cloud import organized_points
from tt_depth_ros.ros.msgs.camera_info import (
    CameraInfoError,
    camera_info_for,
    intrinsics_from_camera_info,
)
from tt_depth_ros.ros.msgs.cloud import CloudBuffer, depth_cloud_msg, pointcloud2_msg
from tt_depth_ros.ros.msgs.depth import (
    depth_image_msg,
    image_msg_to_depth,
    no_copy_kwargs,
    rgb_image_msg,
)
from tt_depth_ros.ros.msgs.image_codec import ImageDecodeError, compressed_to_rgb, image_msg_to_rgb

pytestmark = pytest.mark.ros
RNG = np.random.default_rng(0)
H, W = 7, 10
CHANNELS = {'rgb8': 3, 'bgr8': 3, 'rgba8': 4, 'bgra8': 4, 'mono8': 1, 'mono16': 1,
            'yuv422': 2, 'yuv422_yuy2': 2}


def _msg(encoding, pad=0, bigendian=False):
    ch = CHANNELS[encoding]
    if encoding == 'mono16':
        px = RNG.integers(0, 65536, (H, W), dtype=np.uint16)
        raw = px.astype('>u2' if bigendian else '<u2').view(np.uint8).reshape(H, W * 2)
    else:
        raw = RNG.integers(0, 256, (H, W * ch), dtype=np.uint8)
    step = raw.shape[1] + pad
    buf = np.zeros((H, step), np.uint8)
    buf[:, :raw.shape[1]] = raw
    msg = Image(height=H, width=W, encoding=encoding, step=step, is_bigendian=int(bigendian))
    msg.data = array.array('B', buf.tobytes())
    return msg


def _reference_rgb(msg):
    """rosbags-image (which ignores step padding): feed it an unpadded copy."""
    ch_bytes = {'mono16': 2}.get(msg.encoding, CHANNELS[msg.encoding])
    rows = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.step)[:, :msg.width * ch_bytes]
    tight = Image(height=msg.height, width=msg.width, encoding=msg.encoding,
                  step=msg.width * ch_bytes, is_bigendian=msg.is_bigendian)
    tight.data = array.array('B', rows.tobytes())
    if msg.encoding == 'mono16':
        px = message_to_cvimage(tight)          # uint16, byte order handled by rosbags
        return np.repeat(np.rint(px / 257.0).astype(np.uint8)[..., None], 3, axis=2)
    return message_to_cvimage(tight, 'rgb8')


@pytest.mark.parametrize('encoding', sorted(CHANNELS))
@pytest.mark.parametrize('pad', [0, 6])
def test_encodings_match_rosbags_image(encoding, pad):
    for big in ([False, True] if encoding == 'mono16' else [False]):
        msg = _msg(encoding, pad, big)
        out = image_msg_to_rgb(msg)
        assert out.shape == (H, W, 3) and out.dtype == np.uint8 and out.flags.c_contiguous
        np.testing.assert_array_equal(out, _reference_rgb(msg))


def test_yuv_conversion_is_bt601_like():
    """Independent of OpenCV: a grey UYVY image (U=V=128) decodes to the same grey levels."""
    msg = Image(height=2, width=4, encoding='yuv422', step=8)
    y = [16, 60, 128, 235]
    uyvy = np.array([[128, y[0], 128, y[1], 128, y[2], 128, y[3]]] * 2, np.uint8)
    msg.data = array.array('B', uyvy.tobytes())
    out = image_msg_to_rgb(msg)
    assert np.all(out[..., 0] == out[..., 1]) and np.all(out[..., 1] == out[..., 2])
    assert np.all(np.diff(out[0, :, 0].astype(int)) > 0)


@pytest.mark.parametrize('mutate,match', [
    (lambda m: setattr(m, 'encoding', '32FC1'), 'unsupported encoding'),
    (lambda m: setattr(m, 'encoding', 'bayer_rggb8'), 'unsupported encoding'),
    (lambda m: setattr(m, 'step', m.step - 1), 'step'),
    (lambda m: setattr(m, 'data', m.data[:-1]), 'data size'),
    (lambda m: setattr(m, 'height', 0), 'zero-size'),
    (lambda m: (setattr(m, 'encoding', 'yuv422'), setattr(m, 'width', 9)), 'even'),
])
def test_malformed_images_raise(mutate, match):
    msg = _msg('rgb8')
    mutate(msg)
    with pytest.raises(ImageDecodeError, match=match):
        image_msg_to_rgb(msg)
    with pytest.raises(ImageDecodeError, match='pixel limit'):
        image_msg_to_rgb(_msg('rgb8'), max_pixels=H * W - 1)


@pytest.mark.parametrize('ext', ['.png', '.jpg'])
def test_compressed_decode(ext):
    rgb = RNG.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    ok, enc = cv2.imencode(ext, rgb[..., ::-1])
    assert ok
    msg = CompressedImage(format=ext[1:])
    msg.data = array.array('B', enc.tobytes())
    out = compressed_to_rgb(msg)
    ref = message_to_cvimage(msg, 'rgb8')
    np.testing.assert_array_equal(out, ref)
    if ext == '.png':
        np.testing.assert_array_equal(out, rgb)
    bad = CompressedImage(format='jpeg', data=array.array('B', enc.tobytes()[: len(enc) // 3]))
    bad.data[:4] = array.array('B', b'junk')
    with pytest.raises(ImageDecodeError):
        compressed_to_rgb(bad)
    with pytest.raises(ImageDecodeError):
        compressed_to_rgb(CompressedImage(format='jpeg'))
    with pytest.raises(ImageDecodeError, match='depth'):
        compressed_to_rgb(CompressedImage(format='16UC1; compressedDepth png', data=msg.data))


def test_depth_messages_roundtrip_and_traits():
    depth = np.array([[1.2344, np.nan, np.inf], [-np.inf, 0.0, 70.0]], np.float32)
    hdr = Header(frame_id='cam_optical_frame')
    hdr.stamp.sec, hdr.stamp.nanosec = 12, 345
    m = depth_image_msg(depth, hdr, '32FC1')
    assert (m.encoding, m.step, m.height, m.width) == ('32FC1', 12, 2, 3)
    assert m.header.frame_id == 'cam_optical_frame' and m.header.stamp.nanosec == 345
    np.testing.assert_array_equal(message_to_cvimage(m), depth)
    np.testing.assert_array_equal(image_msg_to_depth(m), depth)
    m16 = depth_image_msg(depth, hdr, '16UC1')
    assert (m16.encoding, m16.step) == ('16UC1', 6)
    assert message_to_cvimage(m16).tolist() == [[1234, 0, 0], [0, 0, 0]]
    with pytest.raises(ValueError):
        depth_image_msg(depth, hdr, 'mono8')
    rgb = RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8)
    np.testing.assert_array_equal(message_to_cvimage(rgb_image_msg(rgb, hdr)), rgb)


@pytest.mark.parametrize('with_rgb', [False, True])
@pytest.mark.parametrize('dec', [1, 3])
def test_cloud_layout_matches_pointcloud2(with_rgb, dec):
    K = np.array([[50.0, 0, 9.5], [0, 52.0, 6.5], [0, 0, 1]])
    depth = RNG.uniform(1, 5, (14, 20)).astype(np.float32)
    depth[0, 0] = np.nan
    depth[3, 3] = np.inf
    rgb = RNG.integers(0, 256, (14, 20, 3), dtype=np.uint8) if with_rgb else None
    msg = depth_cloud_msg(depth, K, Header(frame_id='f'), rgb, dec)
    h, w = (14 + dec - 1) // dec, (20 + dec - 1) // dec
    assert (msg.height, msg.width, msg.is_dense, msg.is_bigendian) == (h, w, False, False)
    assert msg.point_step == (32 if with_rgb else 16) and msg.row_step == w * msg.point_step
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == \
        [(n, o, PointField.FLOAT32, 1) for n, o in zip('xyz', (0, 4, 8))] + \
        ([('rgb', 16, PointField.FLOAT32, 1)] if with_rgb else [])
    pts = read_points(msg, field_names=['x', 'y', 'z'], skip_nans=False)
    xyz = np.stack([pts['x'], pts['y'], pts['z']], -1).reshape(h, w, 3)
    np.testing.assert_array_equal(xyz, organized_points(depth, K, dec))
    assert np.isnan(xyz[0, 0]).all()
    if with_rgb:
        packed = read_points(msg, field_names=['rgb'], skip_nans=False)['rgb']
        bits = np.asarray(packed, np.float32).view(np.uint32).reshape(h, w)
        sub = rgb[::dec, ::dec].astype(np.uint32)
        np.testing.assert_array_equal(bits, (sub[..., 0] << 16) | (sub[..., 1] << 8) | sub[..., 2])
    generic = pointcloud2_msg(organized_points(depth, K, dec), None if rgb is None
                              else rgb[::dec, ::dec], Header(frame_id='f'))
    assert bytes(generic.data) == bytes(msg.data)


def test_cloud_buffer_reuse_gives_the_fresh_bytes():
    K = np.array([[50.0, 0, 9.5], [0, 52.0, 6.5], [0, 0, 1]])
    buf = CloudBuffer()
    first = None
    for with_rgb, dec in [(False, 1), (False, 1), (True, 1), (True, 2), (False, 1)]:
        depth = RNG.uniform(1, 5, (14, 20)).astype(np.float32)
        depth[2:4] = np.inf
        rgb = RNG.integers(0, 256, (14, 20, 3), dtype=np.uint8) if with_rgb else None
        reused = depth_cloud_msg(depth, K, Header(frame_id='f'), rgb, dec, buffer=buf)
        fresh = depth_cloud_msg(depth, K, Header(frame_id='f'), rgb, dec)
        assert bytes(reused.data) == bytes(fresh.data)       # padding zero after a layout change
        assert (reused.height, reused.width, reused.point_step) == \
            (fresh.height, fresh.width, fresh.point_step)
        first = first or reused
    assert first.data is not reused.data       # the layout changed: new memory
    again = depth_cloud_msg(depth, K, Header(), None, 1, buffer=buf)
    assert again.data is reused.data           # same layout: the documented shared memory


@pytest.mark.parametrize('msg_type', [Image, PointCloud2])
def test_no_copy_kwargs_keep_the_assigned_array(msg_type):
    data = array.array('B', bytes(64))
    msg = msg_type(**no_copy_kwargs(msg_type))
    msg.data = data
    assert msg.data is data


def test_camera_info_roundtrip_binning_roi_and_errors():
    K = np.array([[500.0, 0, 319.5], [0, 500.0, 239.5], [0, 0, 1]])
    info = camera_info_for(K, 640, 480, Header(frame_id='c'), tx=-25.0)
    assert list(info.p) == [500.0, 0, 319.5, -25.0, 0, 500.0, 239.5, 0, 0, 0, 1, 0]
    np.testing.assert_array_equal(intrinsics_from_camera_info(info, (640, 480)), K)
    np.testing.assert_allclose(intrinsics_from_camera_info(info, (320, 240)),
                               [[250, 0, 159.75], [0, 250, 119.75], [0, 0, 1]])
    info.binning_x = info.binning_y = 2
    info.roi.x_offset, info.roi.y_offset, info.roi.width, info.roi.height = 40, 20, 400, 300
    np.testing.assert_allclose(intrinsics_from_camera_info(info, (200, 150)),
                               [[250, 0, 139.75], [0, 250, 109.75], [0, 0, 1]])
    info.p[0] = 0.0
    with pytest.raises(CameraInfoError):
        intrinsics_from_camera_info(info, (200, 150))
    info.p = [0.0] * 12
    info.k[4] = float('nan')
    with pytest.raises(CameraInfoError):
        intrinsics_from_camera_info(info, (200, 150))
