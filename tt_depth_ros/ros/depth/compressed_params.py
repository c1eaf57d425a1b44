"""Parameters of the depth node's optional `depth/compressedDepth` (ros/msgs/compressed_depth.py).

Named after compressed_depth_image_transport's own (`depth_max`, `depth_quantization`,
`png_level`) so a user who knows that plugin can carry its settings over; `config/depth.yaml`
mirrors the defaults.
"""
from __future__ import annotations

from tt_depth_ros.ros.runtime.params import ParamSpec

COMPRESSED_DEPTH_PARAMS = (
    ParamSpec('compressed_depth', False, "Also publish metric depth on depth/compressedDepth "
              "(sensor_msgs/CompressedImage, image_transport's compressedDepth PNG format: "
              'small enough for bags). Relative depth is never compressed (its unit changes per '
              'frame).'),
    ParamSpec('compressed_depth_max_m', 10.0, 'compressedDepth: depth at or beyond this, and '
              "+Inf, is stored as 'no depth' (decoded as NaN); image_transport depth_max.",
              float_range=(0.01, 1e4), runtime=True),
    ParamSpec('compressed_depth_quantization', 100.0, 'compressedDepth 32FC1: inverse-depth '
              'quantization Q, image_transport depth_quantization; decoded depth is within '
              '0.5 d^2 / (Q (Q + 1) - d/2) m; depths nearer than Q (Q + 1) / (65535.5 - 1 + '
              "Q (Q + 1) / compressed_depth_max_m) are stored as 'no depth'.",
              float_range=(1.0, 1000.0), runtime=True),
    ParamSpec('compressed_depth_png_level', 1, 'compressedDepth: PNG zlib level 0-9 '
              '(image_transport png_level defaults to 9: about 10x slower for ~30 % smaller '
              'messages).', int_range=(0, 9), runtime=True),
)
