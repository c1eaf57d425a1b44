"""Depth -> sensor_msgs/CompressedImage in image_transport's `compressedDepth` PNG format.

What `compressed_depth_image_transport` (and so `ros2 bag` users, RViz2 and Foxglove with that
plugin) decodes, byte for byte:

- `format`: `"<encoding>; compressedDepth png"`, the encoding being the depth image's (`32FC1`
  or `16UC1`);
- `data`: a 12-byte ConfigHeader, little-endian - int32 compression format (0 = INV_DEPTH) and
  float32 depthQuantA, depthQuantB - followed by a 16-bit grey PNG.
- 32FC1: the PNG holds the quantised inverse depth of geometry/depth/inverse_depth_quant.py
  (q = A/d + B, 0 = no depth); 16UC1: the millimetres themselves, those beyond `depth_max` set to
  0, and the two floats are 0 (the decoder does not read them for 16-bit images).

A 640x480 32FC1 image (1.2 MB) became 0.15-0.32 MB at png_level 1 (smooth to noisy depth).
"""
from __future__ import annotations

import array
import struct

import cv2
import numpy as np
from sensor_msgs.msg import CompressedImage

from tt_depth_ros.geometry.depth.inverse_depth_quant import quant_params, quantize_inverse_depth
from tt_depth_ros.ros.msgs.depth import depth_to_millimetres

INV_DEPTH = 0
"""compressed_depth_image_transport's compressionFormat enum value for inverse-depth coding."""
HEADER = struct.Struct('<iff')


def compressed_depth_msg(depth_m: np.ndarray, header, encoding: str = '32FC1',
                         depth_max_m: float = 10.0, quantization: float = 100.0,
                         png_level: int = 1) -> CompressedImage:
    """Encode (H, W) metres as a compressedDepth CompressedImage with the given header.

    Args:
        depth_m: depth in metres (NaN invalid, +Inf no return).
        header: std_msgs/Header of the depth image.
        encoding: the depth topic's encoding: '32FC1' (inverse-depth PNG) or '16UC1' (mm PNG).
        depth_max_m: image_transport's `depth_max`: depth at and beyond it is stored as 0.
        quantization: image_transport's `depth_quantization` (A = Q (Q + 1)).
        png_level: zlib level 0-9 of the PNG (image_transport's `png_level`).
    """
    if depth_m.ndim != 2:
        raise ValueError(f'depth must be (H, W), got shape {depth_m.shape}')
    if not 0 <= int(png_level) <= 9:
        raise ValueError(f'png_level must be 0..9, got {png_level!r}')
    if encoding == '32FC1':
        a, b = quant_params(depth_max_m, quantization)
        plane = quantize_inverse_depth(depth_m, a, b, depth_max_m)
    elif encoding == '16UC1':
        a = b = 0.0
        plane = depth_to_millimetres(depth_m)
        plane[plane > np.uint32(round(depth_max_m * 1000.0))] = 0
    else:
        raise ValueError(f"compressedDepth takes a '32FC1' or '16UC1' depth, got {encoding!r}")
    ok, png = cv2.imencode('.png', plane, [cv2.IMWRITE_PNG_COMPRESSION, int(png_level)])
    if not ok:
        raise RuntimeError(f'PNG encoding of a {plane.shape} depth image failed')
    data = array.array('B', HEADER.pack(INV_DEPTH, a, b))
    data.frombytes(memoryview(png).cast('B'))
    return CompressedImage(header=header, format=f'{encoding}; compressedDepth png', data=data)
