"""sensor_msgs/Image and CompressedImage -> uint8 RGB numpy arrays, without cv_bridge.

Mirrors the relevant part of cv_bridge's `imgmsg_to_cv2(msg, 'rgb8')`, vectorised: the message
buffer is viewed in place (`np.frombuffer` on the message's array is zero-copy), rows are sliced
by `step`, and colour conversion is one OpenCV call. Every malformed message raises
`ImageDecodeError` naming the problem; the node turns that into a throttled log line and a
skipped frame. Supported: rgb8, bgr8, rgba8, bgra8, mono8, mono16 (rounded to 8 bit like
cv_bridge's convertTo), yuv422 (= UYVY), yuv422_yuy2 (= YUYV), and JPEG/PNG compressed images.

Compressed images are bounded before decoding: the size declared in the header (PNG IHDR, JPEG
SOFn marker) is checked against the pixel limit first, so a small file declaring a huge image (a
"decompression bomb") never allocates its pixels. Other formats are refused (their size is not
checked here).
"""
from __future__ import annotations

import struct

import cv2
import numpy as np

# (bytes per pixel, numpy dtype, channels) per supported encoding.
ENCODINGS = {
    'rgb8': (3, np.uint8, 3), 'bgr8': (3, np.uint8, 3),
    'rgba8': (4, np.uint8, 4), 'bgra8': (4, np.uint8, 4),
    'mono8': (1, np.uint8, 1), 'mono16': (2, np.uint16, 1),
    'yuv422': (2, np.uint8, 2), 'uyvy': (2, np.uint8, 2), 'yuv422_yuy2': (2, np.uint8, 2),
}
_TO_RGB = {
    'bgr8': cv2.COLOR_BGR2RGB, 'rgba8': cv2.COLOR_RGBA2RGB, 'bgra8': cv2.COLOR_BGRA2RGB,
    'mono8': cv2.COLOR_GRAY2RGB, 'yuv422': cv2.COLOR_YUV2RGB_UYVY, 'uyvy': cv2.COLOR_YUV2RGB_UYVY,
    'yuv422_yuy2': cv2.COLOR_YUV2RGB_YUY2,
}
DEFAULT_MAX_PIXELS = 8192 * 8192  # larger images are rejected, not processed (memory safety)


class ImageDecodeError(ValueError):
    """A message that cannot be turned into an RGB image; the text names the problem."""


def image_msg_to_rgb(msg, max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Convert a sensor_msgs/Image to a C-contiguous (H, W, 3) uint8 RGB array.

    Args:
        msg: sensor_msgs/Image (or anything with the same fields).
        max_pixels: width*height above this is rejected (guards against absurd headers).

    Returns:
        A new (H, W, 3) uint8 RGB array (never a view of the message buffer).

    Raises:
        ImageDecodeError: unsupported encoding, zero or huge size, step/data size mismatch.
    """
    enc = msg.encoding
    if enc not in ENCODINGS:
        raise ImageDecodeError(
            f'unsupported encoding {enc!r}; supported: {", ".join(sorted(ENCODINGS))}')
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    if h <= 0 or w <= 0:
        raise ImageDecodeError(f'zero-size image {w}x{h}')
    if h * w > max_pixels:
        raise ImageDecodeError(f'image {w}x{h} exceeds the {max_pixels}-pixel limit')
    bpp, dtype, ch = ENCODINGS[enc]
    if enc in ('yuv422', 'uyvy', 'yuv422_yuy2') and w % 2:
        raise ImageDecodeError(f'{enc} needs an even width, got {w}')
    if step < w * bpp:
        raise ImageDecodeError(f'step {step} < width*{bpp} = {w * bpp} for {enc}')
    size = len(msg.data)
    if size != step * h:
        raise ImageDecodeError(f'data size {size} != step*height = {step}*{h} = {step * h}')
    buf = np.frombuffer(msg.data, dtype=np.uint8)
    rows = buf.reshape(h, step)[:, :w * bpp]
    if dtype == np.uint16:
        px = np.ascontiguousarray(rows).view('>u2' if msg.is_bigendian else '<u2').reshape(h, w)
        gray = ((px.astype(np.uint32) + 128) // 257).astype(np.uint8)   # round(v * 255 / 65535)
        return cv2.cvtColor(gray, cv2.COLOR_GRAY2RGB)
    img = rows.reshape(h, w, ch) if ch > 1 else rows.reshape(h, w)
    if enc == 'rgb8':
        return np.array(img, dtype=np.uint8, order='C', copy=True)
    return cv2.cvtColor(np.ascontiguousarray(img), _TO_RGB[enc])


PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
# JPEG start-of-frame markers (baseline, extended, progressive, lossless, arithmetic): not DHT
# (C4), JPG (C8) or DAC (CC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE = frozenset(range(0xD0, 0xD8)) | {0x01}   # RSTn, TEM: no length field


def compressed_image_size(data) -> tuple[int, int]:
    """(width, height) declared by a PNG or JPEG header, without decoding any pixel.

    Raises:
        ImageDecodeError: not PNG/JPEG, or a header that is truncated or malformed.
    """
    view = memoryview(np.frombuffer(data, dtype=np.uint8))   # zero-copy; indexing gives ints
    head = view[:24].tobytes()
    if head.startswith(PNG_SIGNATURE):
        if len(head) < 24 or head[12:16] != b'IHDR':
            raise ImageDecodeError('PNG without a leading IHDR chunk (truncated or corrupt)')
        width, height = struct.unpack('>II', head[16:24])
        return int(width), int(height)
    if head.startswith(b'\xff\xd8'):
        return _jpeg_size(view)
    raise ImageDecodeError(f'compressed data is neither PNG nor JPEG (starts with {head[:4]!r}); '
                           'only JPEG and PNG are accepted')


def _jpeg_size(view: memoryview) -> tuple[int, int]:
    """Walk JPEG marker segments from SOI to the first SOFn; return its (width, height)."""
    i, n = 2, len(view)
    while i + 4 <= n:
        if view[i] != 0xFF:
            raise ImageDecodeError(f'JPEG: expected a marker at byte {i}')
        marker = view[i + 1]
        if marker == 0xFF:            # fill byte
            i += 1
            continue
        if marker in _JPEG_STANDALONE:
            i += 2
            continue
        if marker in (0xD9, 0xDA):    # EOI / start of scan before any frame header
            break
        length = (view[i + 2] << 8) | view[i + 3]
        if length < 2:
            raise ImageDecodeError(f'JPEG: segment length {length} at byte {i}')
        if marker in _JPEG_SOF:
            if i + 9 > n:
                break
            height = (view[i + 5] << 8) | view[i + 6]
            width = (view[i + 7] << 8) | view[i + 8]
            if height == 0 or width == 0:
                raise ImageDecodeError(f'JPEG declares a {width}x{height} frame (height from a '
                                       'DNL marker is not supported)')
            return width, height
        i += 2 + length
    raise ImageDecodeError('JPEG without a frame header (SOFn) before the scan data')


def compressed_to_rgb(msg, max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Decode a sensor_msgs/CompressedImage (JPEG or PNG) to (H, W, 3) uint8 RGB.

    The header's declared size is checked against `max_pixels` before decoding.

    Raises:
        ImageDecodeError: empty, corrupt or other formats, depth-compressed formats, images over
            max_pixels (declared or decoded).
    """
    fmt = (msg.format or '').lower()
    if 'compresseddepth' in fmt:
        raise ImageDecodeError(f'format {msg.format!r} is a depth stream, not a camera image')
    data = np.frombuffer(msg.data, dtype=np.uint8)
    if data.size == 0:
        raise ImageDecodeError('empty compressed image')
    width, height = compressed_image_size(data)
    if width * height > max_pixels or width <= 0 or height <= 0:
        raise ImageDecodeError(f'compressed image declares {width}x{height}, zero or above the '
                               f'{max_pixels}-pixel limit; not decoded')
    img = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise ImageDecodeError(f'could not decode compressed image (format {msg.format!r}, '
                               f'{data.size} bytes)')
    if img.shape[0] * img.shape[1] > max_pixels:
        raise ImageDecodeError(f'decoded image {img.shape[1]}x{img.shape[0]} exceeds the '
                               f'{max_pixels}-pixel limit')
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
