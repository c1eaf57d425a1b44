"""The messages of one DA3 frame, in the depth node's publish order (no rclpy node needed).

The depth node publishes them live (ros/depth/node.py) and `tt-depth-batch` writes them into a
bag (tools/batch/depth_bag.py): both build them here, from the node's parameter values and the
frame's depth products (pipelines/depth_scale.py `ScaledDepth`), so a bag made offline holds the
bytes the node would have sent. Optional topics are built only when enabled by the parameters and
`listening(topic)` says someone wants them (the node: a subscriber exists; the batch tool: always).
Messages are yielded one at a time: a cloud built into a reused CloudBuffer must be sent before
the next one is built.

What each kind publishes (all with the input header; sizes follow `output_resolution`):

* metric (DA3METRIC): `depth` (32FC1 m / 16UC1 mm), `depth/camera_info`, `points`,
  `depth/colorized`, `depth/compressedDepth`.
* relative (any-view, mono), every frame: `depth_relative` (the model's own unit, NaN invalid,
  +Inf sky for mono) with `depth_relative/camera_info`, and `points_relative`. A frame with a
  metric scale (`scale_source`) also gets `depth`, `depth/camera_info` and `points` in metres.
  Relative depth never goes on `depth`, nor on compressedDepth (its unit changes per frame: a
  fixed depth_max in metres would mean nothing for it).
* NESTED: metric `depth`, `depth/camera_info`, `points`.
* any-view and NESTED also: `confidence` (32FC1, >= 1) and `camera_info_estimated` (the model's
  intrinsics on the published grid).
* every kind with a `scale_source`: `depth/scale`, a geometry_msgs/Vector3Stamped per frame -
  x the scale applied (NaN: none), y its 1-sigma (relative), z the state code (0 unscaled,
  1 measured, 2 predicted, 3 reset: pipelines/scale_filter.py). A metric model's `depth` is
  its metres refined by that scale.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

import numpy as np
from geometry_msgs.msg import Vector3, Vector3Stamped
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from tt_depth_ros.geometry.depth.colorize import colorize_depth
from tt_depth_ros.models.kind import ModelKind
from tt_depth_ros.pipelines.depth_scale import ScaledDepth
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.cloud import CloudBuffer, depth_cloud_msg
from tt_depth_ros.ros.msgs.compressed_depth import compressed_depth_msg
from tt_depth_ros.ros.msgs.depth import depth_image_msg, rgb_image_msg

DEPTH, COMPRESSED, INFO = 'depth', 'depth/compressedDepth', 'depth/camera_info'
POINTS, COLORIZED = 'points', 'depth/colorized'
DEPTH_RELATIVE, INFO_RELATIVE = 'depth_relative', 'depth_relative/camera_info'
POINTS_RELATIVE = 'points_relative'
CONFIDENCE, INFO_ESTIMATED = 'confidence', 'camera_info_estimated'
SCALE = 'depth/scale'


def depth_topics(p, kind: ModelKind) -> dict[str, type]:
    """{relative topic: message class} the depth node advertises for `kind` (module docstring).

    Every topic that a runtime parameter may switch on is advertised (points, colorized).
    """
    scale = {SCALE: Vector3Stamped} if p.scale_source != 'none' else {}
    if kind is ModelKind.METRIC:
        topics = {DEPTH: Image}
        if p.compressed_depth:
            topics[COMPRESSED] = CompressedImage
        return {**topics, INFO: CameraInfo, POINTS: PointCloud2, COLORIZED: Image, **scale}
    topics = {COLORIZED: Image, **scale}
    if kind.is_relative_depth:
        topics.update({DEPTH_RELATIVE: Image, INFO_RELATIVE: CameraInfo,
                       POINTS_RELATIVE: PointCloud2})
    if kind.is_metric or p.scale_source != 'none':
        topics.update({DEPTH: Image, INFO: CameraInfo, POINTS: PointCloud2})
        if p.compressed_depth:
            topics[COMPRESSED] = CompressedImage
    if kind.estimates_intrinsics:
        topics.update({CONFIDENCE: Image, INFO_ESTIMATED: CameraInfo})
    return topics


def metric_output_types(p) -> dict[str, type]:
    """{relative topic: message class} of a metric model's frame with parameter values `p`."""
    out = {DEPTH: Image}
    if p.compressed_depth:
        out[COMPRESSED] = CompressedImage
    out[INFO] = CameraInfo
    if p.points_enable:
        out[POINTS] = PointCloud2
    if p.colorized_enable:
        out[COLORIZED] = Image
    return out


def compressed_depth_for(p, depth, header) -> CompressedImage:
    """The compressedDepth twin of a metric depth image, per the compressed_depth_* parameters."""
    return compressed_depth_msg(depth, header, p.depth_encoding, p.compressed_depth_max_m,
                                p.compressed_depth_quantization,
                                p.compressed_depth_png_level)


def depth_output_msgs(p, header, scaled: ScaledDepth,
                      listening: Callable[[str], bool] = lambda t: True,
                      cloud_buffer: CloudBuffer | None = None) -> Iterator[tuple[str, object]]:
    """Yield (relative topic, message) for one frame of any DA3 kind, all with `header`.

    Args:
        p: the depth node's parameter values.
        header: std_msgs/Header of the input image (stamp, optical frame).
        scaled: the frame's depth products (pipelines/depth_scale.py).
        listening: whether an optional topic (compressedDepth, points, colorized) is wanted.
        cloud_buffer: reuse its memory for the metric model's cloud (send it before the next).
    """
    if scaled.kind is ModelKind.METRIC:
        frame = scaled.frame
        if scaled.metric is not frame.depth:       # refined by its scale source
            frame = replace(frame, depth=scaled.metric)
        yield from metric_output_msgs(p, header, frame, listening, cloud_buffer)
        yield from _scale_msg(header, scaled)
        return
    frame = scaled.frame
    K, tx = frame.K, frame.tx
    h, w = frame.depth.shape
    if frame.conf is not None:
        yield CONFIDENCE, depth_image_msg(frame.conf.astype(np.float32), header)
    if frame.K_estimated is not None:
        yield INFO_ESTIMATED, camera_info_for(frame.K_estimated, w, h, header)
    if scaled.relative is not None:
        yield DEPTH_RELATIVE, depth_image_msg(scaled.relative, header)
        yield INFO_RELATIVE, camera_info_for(K, w, h, header, tx)
        if p.points_enable and listening(POINTS_RELATIVE):
            yield POINTS_RELATIVE, _masked_cloud(p, scaled.relative, scaled.mask, K, header,
                                                 frame.image)
    metric = scaled.metric
    if metric is not None:
        yield DEPTH, depth_image_msg(metric, header, p.depth_encoding)
        if p.compressed_depth and listening(COMPRESSED):
            yield COMPRESSED, compressed_depth_for(p, metric, header)
        yield INFO, camera_info_for(K, w, h, header, tx)
        if p.points_enable and listening(POINTS):
            yield POINTS, _masked_cloud(p, metric, scaled.mask, K, header, frame.image)
    if p.colorized_enable and listening(COLORIZED):
        shown = metric if metric is not None else scaled.relative
        preview = colorize_depth(shown, None, p.colorized_max_m or None)
        yield COLORIZED, rgb_image_msg(preview, header)
    yield from _scale_msg(header, scaled)


def _scale_msg(header, scaled: ScaledDepth) -> Iterator[tuple[str, object]]:
    """The frame's depth/scale message when it has a scale source (module docstring)."""
    values = scaled.scale_message_values()
    if values is not None:
        x, y, z = values
        yield SCALE, Vector3Stamped(header=header, vector=Vector3(x=x, y=y, z=z))


def metric_output_msgs(p, header, frame, listening: Callable[[str], bool] = lambda t: True,
                       cloud_buffer: CloudBuffer | None = None) -> Iterator[tuple[str, object]]:
    """Yield (relative topic, message) for one DA3METRIC frame (`depth_output_msgs`' arguments).

    `frame` is the frame path's DepthFrame (depth, K, tx and image on the output grid).
    """
    depth, K = frame.depth, frame.K
    h, w = depth.shape
    yield DEPTH, depth_image_msg(depth, header, p.depth_encoding)
    if p.compressed_depth and listening(COMPRESSED):
        yield COMPRESSED, compressed_depth_for(p, depth, header)
    yield INFO, camera_info_for(K, w, h, header, tx=frame.tx)
    if p.points_enable and listening(POINTS):
        rgb = frame.image if p.points_format == 'xyzrgb' else None
        yield POINTS, depth_cloud_msg(depth, K, header, rgb, p.points_decimation,
                                      p.points_max_range_m or None, buffer=cloud_buffer)
    if p.colorized_enable and listening(COLORIZED):
        preview = colorize_depth(depth, None, p.colorized_max_m or None)
        yield COLORIZED, rgb_image_msg(preview, header)


def _masked_cloud(p, depth: np.ndarray, mask: np.ndarray, K: np.ndarray, header,
                  image: np.ndarray) -> PointCloud2:
    """The cloud of the confident pixels (sky's +Inf kept: REP 117 no return)."""
    kept = np.where(mask | np.isposinf(depth), depth, np.float32(np.nan))
    rgb = image if p.points_format == 'xyzrgb' else None
    return depth_cloud_msg(kept, K, header, rgb, p.points_decimation,
                           p.points_max_range_m or None)
