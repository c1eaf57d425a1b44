"""The side inputs of a frame's metric scale: metric images, LiDAR scans, TF poses and heights.

The depth node subscribes `metric_depth`, `metric_cloud` and /tf, /tf_static and feeds them here;
tt-depth-batch feeds them from the bag. `for_frame` gathers what one frame's scale needs
(pipelines/depth_scale.py `ScaleInputs`), so the node and the batch tool scale alike:

- 'cloud': the scan nearest the image stamp (ros/runtime/inputs/metric_cloud_input.py) and the
  transform from its frame to the image's optical frame - TF at the image stamp, or with
  `scale_fixed_frame` tf2's time travel: the scan's frame at its own stamp into the fixed frame,
  then into the camera at the image stamp (a moving robot's scan and image are not simultaneous);
- 'temporal': the camera's pose in `scale_fixed_frame` at the image stamp (odometry; identity
  without one: a static camera).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from tt_depth_ros.pipelines.depth_scale import ScaleInputs
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.metric_cloud_input import MetricClouds
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthImages
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer, TfLookupError
from tt_depth_ros.ros.runtime.tf.tf_height import camera_height

NS = 1_000_000_000


class ScaleSideInputs:
    """Metric depth images, LiDAR scans and the TF tree of one camera's scale."""

    def __init__(self, tf: TfBuffer | None = None) -> None:
        """`tf`: a TF buffer shared with the node's other cameras (the TF tree is one)."""
        self.metric_depth = MetricDepthImages()
        self.clouds = MetricClouds()
        self.tf = tf if tf is not None else TfBuffer()

    def clear(self) -> None:
        """Activate: forget earlier images, scans and transforms."""
        self.metric_depth.clear()
        self.clouds.clear()
        self.tf.clear()

    def for_frame(self, p, header, bag_time_ns: Optional[int] = None) -> ScaleInputs:
        """The scale inputs of the frame with `header`.

        Live (`bag_time_ns` None) the worker waits up to metric_depth_wait_s for the metric
        image of its stamp and metric_cloud_wait_s for a scan stamped after it. Offline there
        is no wait: the bag's look-ahead delivered what the node would have waited for, and
        the scans are those that had arrived by the frame's bag time plus metric_cloud_wait_s.
        """
        stamp = stamp_to_ns(header.stamp)
        live = bag_time_ns is None
        if p.scale_source == 'depth':
            return ScaleInputs(stamp_ns=stamp, metric_depth=self.metric_depth.image_for(
                stamp, p.metric_depth_wait_s if live else 0.0))
        if p.scale_source == 'camera_height' and p.camera_height_frame:
            height = camera_height(self.tf, p.camera_height_frame, header.frame_id)
            if height.metres is None:
                return ScaleInputs(stamp_ns=stamp, camera_height_missing=height.why_not)
            return ScaleInputs(stamp_ns=stamp, camera_height_m=height.metres)
        if p.scale_source == 'cloud':
            arrived_by = None if live else bag_time_ns + int(p.metric_cloud_wait_s * NS)
            scan, why = self.clouds.nearest(stamp, int(p.metric_cloud_tolerance_s * NS),
                                            p.metric_cloud_wait_s if live else 0.0, arrived_by)
            if scan is None:
                return ScaleInputs(stamp_ns=stamp, cloud_missing=why)
            try:
                T = self.cloud_to_camera(header.frame_id, stamp, scan.frame_id, scan.stamp_ns,
                                         p.scale_fixed_frame)
            except TfLookupError as exc:
                return ScaleInputs(stamp_ns=stamp, cloud_missing=f'no TF for the scan: {exc}')
            return ScaleInputs(stamp_ns=stamp, cloud=scan.points, cloud_to_camera=T)
        if p.scale_source == 'temporal':
            if not p.scale_fixed_frame:
                return ScaleInputs(stamp_ns=stamp, camera_pose=np.eye(4))
            try:
                pose = self.tf.lookup(p.scale_fixed_frame, header.frame_id, stamp)
            except TfLookupError as exc:
                return ScaleInputs(stamp_ns=stamp, camera_pose_missing=f'no camera pose: {exc}')
            return ScaleInputs(stamp_ns=stamp, camera_pose=pose)
        return ScaleInputs(stamp_ns=stamp)

    def cloud_to_camera(self, optical: str, stamp_ns: int, cloud_frame: str,
                        cloud_stamp_ns: int, fixed_frame: str) -> np.ndarray:
        """T_optical_cloud: TF at the image stamp, or through `fixed_frame` (time travel).

        Raises:
            TfLookupError: a transform TF does not have at that stamp.
        """
        if not optical:
            raise TfLookupError('the image has no frame_id to look up in TF')
        if not fixed_frame:
            return self.tf.lookup(optical, cloud_frame, stamp_ns)
        return (self.tf.lookup(optical, fixed_frame, stamp_ns)
                @ self.tf.lookup(fixed_frame, cloud_frame, cloud_stamp_ns))
