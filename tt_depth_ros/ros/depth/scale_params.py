"""Depth-node parameters of the scale's LiDAR, temporal sources and filter; their settings.

Appended to the depth node's table after the family parameters (ros/depth/family_params.py holds
scale_source itself); `config/depth.yaml` mirrors the defaults. `scale_settings` turns parameter
values into the pipeline's settings (pipelines/relative_scale.py, pipelines/scale_filter.py):
the node and tt-depth-batch both call it.
"""
from __future__ import annotations

from tt_depth_ros.pipelines.relative_scale import RelativeScaleSettings
from tt_depth_ros.pipelines.scale_filter import FILTERS, ScaleFilterSettings
from tt_depth_ros.pipelines.sensor_scale import FITS
from tt_depth_ros.ros.runtime.params import ParamSpec

CLOUD_TOPIC = 'metric_cloud'
SCALE_TOPIC = 'depth/scale'

SCALE_PARAMS = (
    ParamSpec('scale_fit', 'scale', "scale_source depth / cloud: 'scale' = MAD-gated median of "
              "the ratios; 'affine_inverse' = scale and shift in inverse depth (affine-invariant "
              'outputs).', choices=FITS, runtime=True),
    ParamSpec('metric_cloud_tolerance_s', 0.05, "scale_source=cloud: the scan on "
              f"'{CLOUD_TOPIC}' nearest the image stamp is used when within this, seconds.",
              float_range=(0.0, 10.0), runtime=True),
    ParamSpec('metric_cloud_wait_s', 0.1, 'scale_source=cloud: how long a frame waits for a '
              'scan stamped after it, seconds.', float_range=(0.0, 10.0), runtime=True),
    ParamSpec('scale_fixed_frame', '', "cloud: a world-fixed frame (e.g. 'odom') that moves a "
              "scan from its stamp to the image's (tf2 time travel); '' = TF at the image "
              "stamp. temporal: the frame the camera moves in (odometry); '' = a static "
              'camera.'),
    ParamSpec('scale_filter', 'none', "'kalman' filters the log-scale over time (gated, with "
              "resets and a hold); 'none' applies each frame's measurement as it is.",
              choices=FILTERS, runtime=True),
    ParamSpec('scale_process_noise', 0.5, 'kalman: how fast the scale may move, log-scale '
              'sigma per sqrt(second); temporal: the drift its camera-motion ratio misses '
              '(small, e.g. 0.01).', float_range=(0.0, 100.0), runtime=True),
    ParamSpec('scale_gate_sigma', 3.0, 'kalman: a measurement this many sigma from the '
              'prediction is rejected (counted).', float_range=(0.5, 1000.0), runtime=True),
    ParamSpec('scale_reset_count', 3, 'kalman: after this many rejections in a row the filter '
              'restarts at the measurement (a real change).', int_range=(1, 1000), runtime=True),
    ParamSpec('scale_hold_s', 1.0, 'kalman: frames without an accepted measurement keep the '
              'predicted scale this long, seconds; later ones are unscaled.',
              float_range=(0.0, 1e4), runtime=True),
    ParamSpec('scale_model_sigma', 0.1, "scale_source=temporal: the network's own frame-to-frame "
              'scale error, relative sigma (0.1 = 10 %).', float_range=(1e-4, 10.0),
              runtime=True),
)


def scale_settings(p) -> RelativeScaleSettings:
    """The scale source, fit and filter options from depth node values `p`."""
    return RelativeScaleSettings(
        p.scale_source, p.min_scale_support, p.camera_height_m, p.ground_max_tilt_deg,
        p.ground_tolerance, p.ground_min_inlier_ratio, p.scale_fit,
        ScaleFilterSettings(p.scale_filter, p.scale_process_noise, p.scale_gate_sigma,
                            p.scale_reset_count, p.scale_hold_s, p.scale_model_sigma))


def needs_tf(p) -> bool:
    """Whether the scale reads TF: a scan's frame, odometry, a ground frame."""
    return (p.scale_source == 'cloud' or (p.scale_source == 'temporal' and p.scale_fixed_frame)
            or (p.scale_source == 'camera_height' and bool(p.camera_height_frame)))
