"""The side inputs of a relative model's metric scale: metric images by stamp, a TF height.

The depth node subscribes `metric_depth` and /tf, /tf_static and feeds them here; tt-depth-batch
feeds them from the bag. `for_frame` gathers what one frame's scale needs
(pipelines/depth_scale.py `ScaleInputs`), so the node and the batch tool scale alike.
"""
from __future__ import annotations

from tt_depth_ros.pipelines.depth_scale import ScaleInputs
from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthImages
from tt_depth_ros.ros.runtime.tf.tf_buffer import TfBuffer
from tt_depth_ros.ros.runtime.tf.tf_height import camera_height


class ScaleSideInputs:
    """Metric depth images (scale_source 'depth') and the TF tree (a 'camera_height' frame)."""

    def __init__(self, tf: TfBuffer | None = None) -> None:
        """`tf`: a TF buffer shared with the node's other cameras (the TF tree is one)."""
        self.metric_depth = MetricDepthImages()
        self.tf = tf if tf is not None else TfBuffer()

    def clear(self) -> None:
        """Activate: forget earlier images and transforms."""
        self.metric_depth.clear()
        self.tf.clear()

    def for_frame(self, p, header, metric_wait_s: float) -> ScaleInputs:
        """The scale inputs of the frame with `header`.

        Waits up to `metric_wait_s` for the metric image of its stamp (0 offline: the bag's
        look-ahead already delivered it).
        """
        if p.scale_source == 'depth':
            return ScaleInputs(metric_depth=self.metric_depth.image_for(
                stamp_to_ns(header.stamp), metric_wait_s))
        if p.scale_source == 'camera_height' and p.camera_height_frame:
            height = camera_height(self.tf, p.camera_height_frame, header.frame_id)
            if height.metres is None:
                return ScaleInputs(camera_height_missing=height.why_not)
            return ScaleInputs(camera_height_m=height.metres)
        return ScaleInputs()
