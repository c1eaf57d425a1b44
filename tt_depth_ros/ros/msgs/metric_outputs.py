"""The messages of one metric DA3 frame, in the depth node's publish order (no rclpy node needed).

The depth node publishes them live (ros/depth/node.py) and `tt-depth-batch` writes them into a
bag (tools/batch/): both build them here, from the node's parameter values, so a bag made offline
holds the bytes the node would have sent. Optional topics are built only when enabled by the
parameters and `listening(topic)` says someone wants them (the node: a subscriber exists; the
batch tool: always). Messages are yielded one at a time: a cloud built into a reused CloudBuffer
must be sent before the next one is built.
"""
from __future__ import annotations

from typing import Callable, Iterator

from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from tt_depth_ros.geometry.depth.colorize import colorize_depth
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.cloud import CloudBuffer, depth_cloud_msg
from tt_depth_ros.ros.msgs.compressed_depth import compressed_depth_msg
from tt_depth_ros.ros.msgs.depth import depth_image_msg, rgb_image_msg

DEPTH, COMPRESSED, INFO = 'depth', 'depth/compressedDepth', 'depth/camera_info'
POINTS, COLORIZED = 'points', 'depth/colorized'


def metric_output_types(p: dict) -> dict[str, type]:
    """{relative topic: message class} a metric depth node publishes with parameter values `p`."""
    out = {DEPTH: Image}
    if p['compressed_depth']:
        out[COMPRESSED] = CompressedImage
    out[INFO] = CameraInfo
    if p['points_enable']:
        out[POINTS] = PointCloud2
    if p['colorized_enable']:
        out[COLORIZED] = Image
    return out


def compressed_depth_for(p: dict, depth, header) -> CompressedImage:
    """The compressedDepth twin of a metric depth image, per the compressed_depth_* parameters."""
    return compressed_depth_msg(depth, header, p['depth_encoding'], p['compressed_depth_max_m'],
                                p['compressed_depth_quantization'],
                                p['compressed_depth_png_level'])


def metric_output_msgs(p: dict, header, frame, listening: Callable[[str], bool] = lambda t: True,
                       cloud_buffer: CloudBuffer | None = None) -> Iterator[tuple[str, object]]:
    """Yield (relative topic, message) for one metric frame, all with the input `header`.

    Args:
        p: the depth node's parameter values.
        header: std_msgs/Header of the input image (stamp, optical frame).
        frame: pipelines.depth.DepthFrame (depth, K, tx and image on the output grid).
        listening: whether an optional topic (compressedDepth, points, colorized) is wanted.
        cloud_buffer: reuse its memory for the cloud (send it before the next build).
    """
    depth, K = frame.depth, frame.K
    h, w = depth.shape
    yield DEPTH, depth_image_msg(depth, header, p['depth_encoding'])
    if p['compressed_depth'] and listening(COMPRESSED):
        yield COMPRESSED, compressed_depth_for(p, depth, header)
    yield INFO, camera_info_for(K, w, h, header, tx=frame.tx)
    if p['points_enable'] and listening(POINTS):
        rgb = frame.image if p['points_format'] == 'xyzrgb' else None
        yield POINTS, depth_cloud_msg(depth, K, header, rgb, p['points_decimation'],
                                      p['points_max_range_m'] or None, buffer=cloud_buffer)
    if p['colorized_enable'] and listening(COLORIZED):
        preview = colorize_depth(depth, None, p['colorized_max_m'] or None)
        yield COLORIZED, rgb_image_msg(preview, header)
