"""The pair node's per-pair work on top of the Python API (pipelines/dust3r.py), free of rclpy.

`Dust3rPredictor` does the model work once for every user (preprocessing, engine, K mapping, PnP
of camera 2, focal fallback); this module adds what a streaming node needs on top: a cached plan
per camera, the node's confidence masks, the stereo scale per configured source
(geometry/pointmap/scale.py, reported as a ScaleResult that can say "no scale for this pair" instead
of silently keeping DUSt3R units) and the scaled outputs (depth maps, fused cloud in any frame).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from tt_depth_ros.geometry.pointmap.focal import estimate_focal
from tt_depth_ros.geometry.pointmap.scale import (
    ScaleResult,
    baseline_scale,
    median_ratio_scale,
    resample_depth_to_grid,
    unit_scale,
)
from tt_depth_ros.geometry.pose.pnp import PoseResult
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import (
    Dust3rPlan,
    image_centre_on_grid,
    network_size,
    unmap_intrinsics,
)
from tt_depth_ros.pipelines.dust3r import Dust3rPredictor
from tt_depth_ros.pipelines.dust3r import PairResult as ApiPairResult


@dataclass(frozen=True)
class PairSettings:
    """Per-pair processing options (node parameters of the same names)."""

    network_size: int = 512
    preprocess_mode: str = 'crop'
    conf_threshold: float = 3.0
    pnp_reproj_px: float = 5.0
    pnp_iterations: int = 100
    pnp_min_inliers: int = 50
    pnp_min_inlier_ratio: float = 0.1
    scale_source: str = 'none'
    baseline_m: float = 0.0
    min_scale_support: int = 20
    pose_source: str = 'auto'


class PairGeometry:
    """What every pair result shares: the pose in model units and the fused cloud of both views.

    Subclasses set pose, pts1/pts2 (view points in camera 1), mask1/mask2 and net1/net2 (the
    network-grid images that colour the points).
    """

    @property
    def T_units(self) -> np.ndarray | None:
        """4x4 camera 2 -> camera 1 in the model's units (DUSt3R's, DA3's), None without a pose."""
        return self.pose.T if self.pose.success else None

    def fused_points(self, scale: float, T_out_cam1: np.ndarray | None = None):
        """Points of both views' masks (view 1 first): (N, 3) float32, (N, 3) uint8 colours.

        Args:
            scale: multiplies model-unit lengths.
            T_out_cam1: optional 4x4 (output units) taking camera-1 points to the output frame.
        """
        xyz = np.concatenate([self.pts1[self.mask1], self.pts2[self.mask2]]).astype(np.float64)
        rgb = np.concatenate([self.net1[self.mask1], self.net2[self.mask2]])
        xyz = xyz * scale
        if T_out_cam1 is not None:
            xyz = xyz @ T_out_cam1[:3, :3].T + T_out_cam1[:3, 3]
        return xyz.astype(np.float32), rgb


class Dust3rPair(PairGeometry):
    """One pair in DUSt3R units (the API result) plus the node's masks and scaled views of it."""

    def __init__(self, api: ApiPairResult, conf_threshold: float):
        self.api = api
        self.plan1, self.plan2 = api.plans
        self.net1, self.net2 = api.image_1, api.image_2
        self.K1_net, self.K2_net = api.K1_net, api.K2_net
        self.pts1, self.pts2 = api.pts3d_1, api.pts3d_2
        self.conf1, self.conf2 = api.conf_1, api.conf_2
        self.pose: PoseResult = api.pose
        self.focal_source = api.pose.focal_source if api.pose is not None else 'intrinsics'
        self.timings = dict(api.timings)
        self.conf_threshold = conf_threshold
        # confident, finite, not padding (the API puts NaN on padded pixels)
        self.mask1 = (api.conf_1 > conf_threshold) & np.isfinite(self.pts1).all(-1)
        self.mask2 = (api.conf_2 > conf_threshold) & np.isfinite(self.pts2).all(-1)

    def depth1(self, scale: float) -> np.ndarray:
        """View-1 planar depth in camera 1 times `scale`; NaN where not confident."""
        return np.where(self.mask1, self.api.depth_1 * scale, np.nan).astype(np.float32)

    def depth2(self, scale: float) -> np.ndarray:
        """View-2 planar depth in camera 2 (needs the pose) times `scale`; NaN if not confident."""
        if self.api.depth_2 is None:
            raise ValueError(f'no view-2 depth without a pose ({self.pose.reason})')
        return np.where(self.mask2, self.api.depth_2 * scale, np.nan).astype(np.float32)

class PairPipeline:
    """Runs pairs through a DUSt3R engine via `Dust3rPredictor` and applies the scale source.

    Args:
        engine: a two-view Engine returning 'pts3d_1', 'pts3d_2', 'conf_1', 'conf_2'
            (None only to plan shapes before an engine exists).
        settings: processing options.
    """

    metric_model = False            # DUSt3R lengths are unit-free until a scale source
    units = 'dust3r-units'
    engine_label = 'DUSt3R two-view, pose from PnP-RANSAC'
    pose_source = 'pnp'

    def __init__(self, engine, settings: PairSettings):
        self.s = settings
        self._plans: dict[tuple[int, int], Dust3rPlan] = {}
        self.predictor = None if engine is None else Dust3rPredictor(
            engine, mode=settings.preprocess_mode, size=settings.network_size,
            conf_threshold=settings.conf_threshold, reproj_px=settings.pnp_reproj_px,
            iterations=settings.pnp_iterations, min_inliers=settings.pnp_min_inliers,
            min_inlier_ratio=settings.pnp_min_inlier_ratio)

    def set_conf_threshold(self, value: float) -> None:
        """Apply a new confidence threshold (a runtime parameter) to the masks and PnP."""
        if value != self.s.conf_threshold:
            self.s = dataclasses.replace(self.s, conf_threshold=float(value))
            if self.predictor is not None:
                self.predictor.pnp['conf_threshold'] = float(value)

    def plan_for(self, width: int, height: int) -> Dust3rPlan:
        """Resize/crop plan of a camera size (cached: a stream keeps its resolution)."""
        key = (int(width), int(height))
        if key not in self._plans:
            self._plans[key] = network_size(key[0], key[1], self.s.network_size,
                                            self.s.preprocess_mode)
        return self._plans[key]

    def run(self, rgb1: np.ndarray, rgb2: np.ndarray, K1: np.ndarray | None,
            K2: np.ndarray | None, context=(), same_camera: bool = True) -> Dust3rPair:
        """One pair in DUSt3R units with camera 2's PnP pose. ValueError for unusable inputs.

        Args:
            rgb1: (H1, W1, 3) uint8 image of camera 1 (the reference).
            rgb2: (H2, W2, 3) uint8 image of camera 2.
            K1: camera-1 intrinsics at its image size (None: estimated from its pointmap).
            K2: camera-2 intrinsics at its image size (None: estimated; from view 1 when
                `same_camera`, else from camera 2's own pointmap by a second, reversed pass).
            context: extra views (multi-view engines only; DUSt3R takes exactly two).
            same_camera: both views come from one camera (temporal mode).
        """
        if len(context):
            raise ValueError('DUSt3R takes two views; window_size > 2 needs an any-view model')
        t0 = time.perf_counter()
        own_focal = K2 is None and not same_camera
        if own_focal:   # a stereo partner has its own lens: never borrow camera 1's focal
            K2 = self.estimated_K(rgb2, rgb1)
        reverse_s = time.perf_counter() - t0
        result = Dust3rPair(self.predictor(rgb1, rgb2, K1, K2, pose=True),
                            self.s.conf_threshold)
        if own_focal:
            result.focal_source = 'estimated per camera'
            result.timings['focal_pass'] = reverse_s
        if result.K1_net is None:
            result.K1_net = self._focal_K_net(result.pts1, result.mask1, result.plan1)
        return result

    def estimated_K(self, rgb: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Intrinsics of `rgb`'s camera at its image size from its own pointmap (pair rgb-other).

        Focal by Weiszfeld (geometry/pointmap/focal.py) with the principal point at the image
        centre.
        """
        api = self.predictor(rgb, other, None, None, pose=False)
        mask = (api.conf_1 > self.s.conf_threshold) & np.isfinite(api.pts3d_1).all(-1)
        plan = api.plans[0]
        return unmap_intrinsics(self._focal_K_net(api.pts3d_1, mask, plan), plan)

    @staticmethod
    def _focal_K_net(pts: np.ndarray, mask: np.ndarray, plan: Dust3rPlan) -> np.ndarray:
        cx, cy = image_centre_on_grid(plan)
        f = estimate_focal(np.nan_to_num(pts, nan=0.0), (cx, cy), mask=mask)
        if not f > 0:
            raise ValueError('no focal length can be estimated from this pointmap')
        return np.array([[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]])

    def stereo_scale(self, result: Dust3rPair, metric_depth1: np.ndarray | None = None
                     ) -> ScaleResult:
        """Scale of one stereo pair from the configured source (value None = not available).

        Args:
            result: the pair.
            metric_depth1: camera-1 metric depth at camera resolution (source 'depth').
        """
        source = self.s.scale_source
        if source == 'none':
            return unit_scale()
        if source == 'baseline':
            if not result.pose.success:
                return ScaleResult('baseline', None, f'no pose ({result.pose.reason})')
            return baseline_scale(result.pose.t, self.s.baseline_m)
        if metric_depth1 is None:
            return ScaleResult('depth', None, 'no metric depth image with the stamp of view 1')
        grid = self.metric_on_grid(result.plan1, metric_depth1)
        return median_ratio_scale(grid, result.api.depth_1, result.mask1,
                                  min_support=self.s.min_scale_support)

    def chain_scale(self, scale: ScaleResult) -> ScaleResult:
        """A temporal chaining scale as reported (any-view pipelines relabel a metric model's)."""
        return scale

    @staticmethod
    def metric_on_grid(plan: Dust3rPlan, metric_depth: np.ndarray) -> np.ndarray:
        """A metric depth image of the view (any resolution of the same aspect) on its grid."""
        h1, w1 = metric_depth.shape
        sx, sy = w1 / plan.src_wh[0], h1 / plan.src_wh[1]
        if abs(sx - sy) > 1e-3 * max(sx, sy):
            raise ValueError(f'metric depth {w1}x{h1} has another aspect than the image '
                             f'{plan.src_wh[0]}x{plan.src_wh[1]}')
        return resample_depth_to_grid(metric_depth, plan.resized_wh, plan.box_ltrb)
