"""The per-pair work both modes share (worker thread): view, pipeline run, PnP and scale outcomes.

Each mode (ros/pair/stereo.py, ros/pair/temporal.py) strings these together with its own pairing
and publishing; every step that ends a pair reports one reject reason and returns None.
"""
from __future__ import annotations

from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.ros.pair.figures import PairFigures
from tt_depth_ros.ros.pair.host import PairHost
from tt_depth_ros.ros.pair.outputs import drop_borders
from tt_depth_ros.ros.pair.params import DUST3R_MODELS
from tt_depth_ros.ros.runtime.inputs.camera_views import CameraView


class PairSteps:
    """Steps of one pair on the configured pipeline.

    Args:
        node: the node it runs on (ros/pair/host.py `PairHost`).
        pipeline: the pair pipeline the node chose for its engine (pipelines/pair_dust3r.py or
            pipelines/pair_anyview.py).
        figures: where PnP and scale outcomes are recorded.
    """

    def __init__(self, node: PairHost, pipeline, figures: PairFigures) -> None:
        self._node, self.pipeline, self.figures = node, pipeline, figures
        self._fallback = ('the focal is estimated from the pointmap'
                          if node.params.model in DUST3R_MODELS else
                          "the model's estimated intrinsics are used")

    def view(self, msg, key: str) -> CameraView | None:
        """Decoded, rectified when D != 0, K of its stamp's CameraInfo (None: rejected)."""
        rgb = self._node.decode_image(msg, key)
        if rgb is None:
            return None
        return self._node.camera_view(key, rgb, msg.header.stamp, fallback=self._fallback)

    def run(self, view1: CameraView, view2: CameraView, context=()):
        """The pipeline on two views (+ earlier keyframes as `context`), borders masked out."""
        node = self._node
        rgb1 = view1.rgb
        try:
            plan = self.pipeline.plan_for(rgb1.shape[1], rgb1.shape[0])
        except ValueError as exc:
            node.reject('size', str(exc))
            return None
        node.ensure_prepared(plan.net_hw)
        self.pipeline.set_conf_threshold(node.params.conf_threshold)   # runtime parameter
        try:
            result = self.pipeline.run(rgb1, view2.rgb, view1.K, view2.K, context,
                                       same_camera=node.params.mode == 'temporal')
        except ValueError as exc:
            node.reject('pair', str(exc))
            return None
        return drop_borders(result, (view1.border, view2.border))

    def pose_ok(self, result, skips_frame: bool) -> bool:
        """Record the PnP outcome; a failure is a skipped frame only when `skips_frame`."""
        pose = result.pose
        self.figures.record('pnp_ok' if pose.success else 'pnp_failures',
                             pnp_inliers=pose.inliers,
                             pnp_inlier_ratio=round(pose.inlier_ratio, 4),
                             pnp_reproj_px=round(pose.reproj_error_px, 3),
                             focal_source=result.focal_source,
                             **({} if pose.success else {'last_pnp_failure': pose.reason}))
        if not pose.success and skips_frame:
            self._node.reject('pnp', f'no pose for this frame (nothing published): {pose.reason}')
        elif not pose.success:
            self._node.warn_throttled(
                'pnp', f'no pose/TF for this pair (cloud still published): {pose.reason}')
        return pose.success

    def scale_ok(self, scale: ScaleResult) -> bool:
        """Record the scale outcome; no scale is a skipped pair."""
        self.figures.record(None if scale.ok else 'scale_failures',
                             scale_source=scale.source, scale=scale.value,
                             scale_support=scale.support,
                             units='metres' if scale.metric else self.pipeline.units)
        if not scale.ok:
            self._node.reject('scale', f'no {scale.source} scale for this pair: {scale.reason}')
        return scale.ok
