"""An independent decoder of image_transport's compressedDepth messages, for the tests.

Written from the format description (compressed_depth_image_transport's codec), not from the
product's encoder, and without OpenCV: the PNG is parsed here with zlib (signature, CRC-checked
chunks, IHDR, IDAT inflate, the five scanline filters), so the byte layout itself is checked.

Format: CompressedImage.format = "<encoding>; compressedDepth png"; data = 12-byte ConfigHeader
(little-endian int32 compression format, 0 = INV_DEPTH; float32 depthQuantA, depthQuantB) + a
16-bit greyscale PNG. 32FC1: depth = A / (q - B) for q > 0, NaN for q = 0. 16UC1: the PNG is the
millimetre image itself.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


@dataclass
class Decoded:
    encoding: str
    compression_format: int
    quant_a: float
    quant_b: float
    plane: np.ndarray        # (H, W) uint16 as stored in the PNG
    depth_m: np.ndarray      # (H, W) float64 metres, NaN where no depth


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(raw: bytes, width: int, height: int, bpp: int) -> bytes:
    stride = width * bpp
    if len(raw) != height * (stride + 1):
        raise ValueError(f'inflated IDAT has {len(raw)} bytes, expected {height * (stride + 1)}')
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            upleft = prev[i - bpp] if i >= bpp else 0
            if ftype == 0:
                pred = 0
            elif ftype == 1:
                pred = left
            elif ftype == 2:
                pred = up
            elif ftype == 3:
                pred = (left + up) // 2
            elif ftype == 4:
                pred = _paeth(left, up, upleft)
            else:
                raise ValueError(f'row {y}: unknown PNG filter type {ftype}')
            line[i] = (line[i] + pred) & 0xFF
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return bytes(out)


def read_png_gray16(png: bytes) -> np.ndarray:
    """A non-interlaced 16-bit greyscale PNG -> (H, W) uint16."""
    if png[:8] != PNG_SIGNATURE:
        raise ValueError(f'no PNG signature: {png[:8]!r}')
    pos, ihdr, idat, chunks = 8, None, b'', []
    while pos < len(png):
        (length,) = struct.unpack('>I', png[pos:pos + 4])
        ctype, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack('>I', png[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(ctype + body) & 0xFFFFFFFF != crc:
            raise ValueError(f'bad CRC in chunk {ctype!r}')
        chunks.append(ctype)
        if ctype == b'IHDR':
            ihdr = struct.unpack('>IIBBBBB', body)
        elif ctype == b'IDAT':
            idat += body
        elif ctype == b'IEND':
            break
        pos += 12 + length
    if chunks[0] != b'IHDR' or chunks[-1] != b'IEND':
        raise ValueError(f'chunk order {chunks}')
    width, height, bit_depth, colour, comp, filt, interlace = ihdr
    if (bit_depth, colour, comp, filt, interlace) != (16, 0, 0, 0, 0):
        raise ValueError(f'not a plain 16-bit grey PNG: IHDR {ihdr}')
    data = _unfilter(zlib.decompress(idat), width, height, 2)
    return np.frombuffer(data, dtype='>u2').reshape(height, width).astype(np.uint16)


def decode_compressed_depth(fmt: str, data: bytes) -> Decoded:
    """Decode one compressedDepth message's `format` and `data`."""
    encoding, sep, codec = fmt.partition(';')
    if not sep or codec.strip() != 'compressedDepth png':
        raise ValueError(f'not a compressedDepth png format string: {fmt!r}')
    data = bytes(data)
    if len(data) <= 12:
        raise ValueError(f'{len(data)} bytes: no room for the 12-byte ConfigHeader and a PNG')
    kind, a, b = struct.unpack('<iff', data[:12])
    plane = read_png_gray16(data[12:])
    if encoding == '32FC1':
        q = plane.astype(np.float64)
        with np.errstate(divide='ignore'):
            depth = np.where(plane > 0, a / (q - b), np.nan)
    elif encoding == '16UC1':
        depth = np.where(plane > 0, plane / 1000.0, np.nan)
    else:
        raise ValueError(f'unexpected depth encoding {encoding!r}')
    return Decoded(encoding, kind, a, b, plane, depth)
