"""Depth-node parameters for the DA3 models beyond the metric ones (ros/depth/kind_rules.py).

Appended to the depth node's table (ros/depth/node.py), with the scale's sources and filter
(ros/depth/scale_params.py); `config/depth.yaml` mirrors the defaults.
"""
from __future__ import annotations

from tt_depth_ros.ros.depth.scale_params import CLOUD_TOPIC, SCALE_PARAMS, SCALE_TOPIC
from tt_depth_ros.ros.runtime.params import ParamSpec

FOCAL_SOURCES = ('auto', 'camera_info', 'estimated')
SCALE_SOURCES = ('none', 'depth', 'camera_height', 'cloud', 'temporal')

FAMILY_DEPTH_PARAMS = (
    ParamSpec('focal_source', 'auto', "Intrinsics of models that estimate a camera (any-view, "
              "NESTED): 'auto' = the CameraInfo once a valid one arrived, else the model's "
              "estimate; 'camera_info' = CameraInfo only (camera_info_mode applies); 'estimated' "
              '= always the estimate (published on camera_info_estimated either way).',
              choices=FOCAL_SOURCES, runtime=True),
    ParamSpec('scale_source', 'none', "Where the metric scale comes from (README 'Stable metric "
              "scale'). Relative models publish depth_relative/points_relative every frame and "
              "depth/points in metres on frames with a scale; metric models' metres are refined "
              "by it. 'none': relative models publish nothing on depth, metric ones the "
              "network's metres; 'depth': median ratio to a metric image on 'metric_depth' "
              "with the same stamp; 'camera_height' (relative): the ground plane "
              f"(camera_height_m); 'cloud': a LiDAR PointCloud2 on '{CLOUD_TOPIC}' (TF to the "
              "image's frame); 'temporal' (metric, scale_filter kalman): the previous frame "
              f"moved with the camera (scale_fixed_frame). Each frame's scale on {SCALE_TOPIC}.",
              choices=SCALE_SOURCES),
    ParamSpec('metric_depth_wait_s', 0.5, "scale_source=depth: how long the worker waits for "
              'the metric depth image with the frame stamp, seconds.', float_range=(0.0, 10.0),
              runtime=True),
    ParamSpec('min_scale_support', 20, 'scale_source depth / cloud / temporal: fewest valid '
              'pixels for a scale.',
              int_range=(1, 1 << 24), runtime=True),
    ParamSpec('camera_height_m', 0.0, 'scale_source=camera_height: height of the optical centre '
              'above the flat ground, metres (> 0).', float_range=(0.0, 1e3), runtime=True),
    ParamSpec('camera_height_frame', '', "camera_height: ground frame (z up, ground at z = 0, "
              "e.g. 'base_footprint') whose TF to the image's frame_id gives the height; '' = "
              'camera_height_m.'),
    ParamSpec('ground_max_tilt_deg', 35.0, 'camera_height: largest angle between the ground '
              "normal and the camera's up axis (-y optical); covers the camera's pitch and roll.",
              float_range=(1.0, 89.0), runtime=True),
    ParamSpec('ground_tolerance', 0.05, 'camera_height: inlier band around the plane as a '
              'fraction of its distance from the camera.', float_range=(1e-4, 1.0),
              runtime=True),
    ParamSpec('ground_min_inlier_ratio', 0.15, 'camera_height: smallest fraction of valid '
              'pixels on the plane; fewer = ground not visible, no scale for the frame.',
              float_range=(0.0, 1.0), runtime=True),
    ParamSpec('min_confidence', 0.0, 'Models with a confidence map: points (and the scale fit) '
              'drop pixels whose confidence is below this; 0 keeps all (any-view confidence '
              'is >= 1).', float_range=(0.0, 1e6), runtime=True),
) + SCALE_PARAMS
