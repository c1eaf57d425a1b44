"""The pair node's per-pair work, free of rclpy so it is tested without ROS.

Two camera images (+ intrinsics) -> DUSt3R network grid (geometry/dust3r_preprocess) -> one engine
call -> pointmaps of both views in camera 1 -> PnP of camera 2 from view 2's pointmap and K2 at
network resolution (geometry/pnp, spec/dust3r.md §7.2) -> scale (geometry/scale) -> scaled fused
cloud and depth maps. Nothing here decides what is published; `PairResult` says what is known and
why something is not (the node turns that into messages and diagnostics).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from tt_depth_ros.geometry.dust3r_preprocess import (
    Dust3rPlan,
    map_intrinsics,
    network_size,
    preprocess,
)
from tt_depth_ros.geometry.focal import estimate_focal
from tt_depth_ros.geometry.keyframes import frame_depth_in_own_camera
from tt_depth_ros.geometry.pnp import PoseResult, solve_relative_pose
from tt_depth_ros.geometry.scale import (
    ScaleResult,
    baseline_scale,
    median_ratio_scale,
    resample_depth_to_grid,
    unit_scale,
)


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


@dataclass
class PairResult:
    """Everything one forward gave, in DUSt3R units unless a scale is applied by the caller."""

    plan1: Dust3rPlan
    plan2: Dust3rPlan
    net1: np.ndarray                 # (H, W, 3) uint8 network image of view 1
    net2: np.ndarray
    K1_net: np.ndarray | None
    K2_net: np.ndarray
    pts1: np.ndarray                 # (H, W, 3) view-1 points in camera 1
    pts2: np.ndarray                 # (H, W, 3) view-2 points in camera 1
    conf1: np.ndarray
    conf2: np.ndarray
    mask1: np.ndarray                # confident, finite, not padding
    mask2: np.ndarray
    pose: PoseResult
    timings: dict = field(default_factory=dict)

    @property
    def T_units(self) -> np.ndarray | None:
        """4x4 camera 2 -> camera 1 in DUSt3R units, None when PnP failed."""
        return self.pose.T if self.pose.success else None

    def depth1(self, scale: float) -> np.ndarray:
        """View-1 planar depth in camera 1 times `scale`; NaN where not confident."""
        return np.where(self.mask1, self.pts1[..., 2] * scale, np.nan).astype(np.float32)

    def depth2(self, scale: float) -> np.ndarray:
        """View-2 planar depth in camera 2 (needs the pose) times `scale`; NaN if not confident."""
        z = frame_depth_in_own_camera(self.pts2, self.pose.T)
        return np.where(self.mask2, z * scale, np.nan).astype(np.float32)

    def fused_points(self, scale: float, T_out_cam1: np.ndarray | None = None):
        """Confident points of both views, (N, 3) float32 and (N, 3) uint8 colours.

        Args:
            scale: multiplies DUSt3R-unit lengths.
            T_out_cam1: optional 4x4 (output units) taking camera-1 points to the output frame.
        """
        xyz = np.concatenate([self.pts1[self.mask1], self.pts2[self.mask2]]).astype(np.float64)
        rgb = np.concatenate([self.net1[self.mask1], self.net2[self.mask2]])
        xyz *= scale
        if T_out_cam1 is not None:
            xyz = xyz @ T_out_cam1[:3, :3].T + T_out_cam1[:3, 3]
        return xyz.astype(np.float32), rgb


class PairPipeline:
    """Runs pairs through an engine (anything with `infer(img1, img2) -> dict`) and PnP.

    Args:
        engine: a two-view Engine returning 'pts3d_1', 'pts3d_2', 'conf_1', 'conf_2'.
        settings: processing options.
    """

    def __init__(self, engine, settings: PairSettings):
        self.engine = engine
        self.s = settings
        self._plans: dict[tuple[int, int], Dust3rPlan] = {}

    def plan_for(self, width: int, height: int) -> Dust3rPlan:
        """Resize/crop plan of a camera size (cached: a stream keeps its resolution)."""
        key = (int(width), int(height))
        if key not in self._plans:
            self._plans[key] = network_size(key[0], key[1], self.s.network_size,
                                            self.s.preprocess_mode)
        return self._plans[key]

    def run(self, rgb1: np.ndarray, rgb2: np.ndarray, K1: np.ndarray | None,
            K2: np.ndarray | None) -> PairResult:
        """One pair: preprocess, infer, PnP. Raises ValueError for unusable inputs.

        Args:
            rgb1: (H1, W1, 3) uint8 image of camera 1 (the reference).
            rgb2: (H2, W2, 3) uint8 image of camera 2.
            K1: camera-1 intrinsics at its image size (None: unknown).
            K2: camera-2 intrinsics at its image size (None: focal estimated from view 1,
                valid when both views come from one camera).
        """
        t0 = time.perf_counter()
        plan1 = self.plan_for(rgb1.shape[1], rgb1.shape[0])
        plan2 = self.plan_for(rgb2.shape[1], rgb2.shape[0])
        if plan1.net_hw != plan2.net_hw:
            raise ValueError(f'the two cameras map to different network sizes {plan1.net_hw} and '
                             f'{plan2.net_hw}; use cameras of one aspect ratio')
        net1, net2 = preprocess(rgb1, plan1), preprocess(rgb2, plan2)
        t1 = time.perf_counter()
        out = self.engine.infer(net1, net2)
        t2 = time.perf_counter()
        pts1, pts2 = out['pts3d_1'], out['pts3d_2']
        conf1, conf2 = out['conf_1'], out['conf_2']
        valid1 = plan1.valid_mask() if plan1.mode == 'pad' else np.ones(plan1.net_hw, bool)
        valid2 = plan2.valid_mask() if plan2.mode == 'pad' else np.ones(plan2.net_hw, bool)
        mask1 = (conf1 > self.s.conf_threshold) & np.isfinite(pts1).all(-1) & valid1
        mask2 = (conf2 > self.s.conf_threshold) & np.isfinite(pts2).all(-1) & valid2
        K1_net = None if K1 is None else map_intrinsics(K1, plan1)
        focal_source = 'intrinsics'
        if K2 is not None:
            K2_net = map_intrinsics(K2, plan2)
        else:  # one camera, unknown K: DUSt3R's own focal of view 1 (spec/dust3r.md §7.2)
            h, w = plan2.net_hw
            f = estimate_focal(pts1)
            K2_net = np.array([[f, 0.0, w / 2.0], [0.0, f, h / 2.0], [0.0, 0.0, 1.0]])
            focal_source = 'estimated'
        pose = solve_relative_pose(pts2, conf2, K2_net, conf_threshold=self.s.conf_threshold,
                                   reproj_px=self.s.pnp_reproj_px,
                                   iterations=self.s.pnp_iterations, valid_mask=valid2,
                                   min_inliers=self.s.pnp_min_inliers,
                                   min_inlier_ratio=self.s.pnp_min_inlier_ratio,
                                   focal_source=focal_source)
        t3 = time.perf_counter()
        timings = {'preprocess': t1 - t0, 'infer': t2 - t1, 'pnp': t3 - t2}
        return PairResult(plan1, plan2, net1, net2, K1_net, K2_net, pts1, pts2, conf1, conf2,
                          mask1, mask2, pose, timings)

    def stereo_scale(self, result: PairResult, metric_depth1: np.ndarray | None = None
                     ) -> ScaleResult:
        """Scale of one stereo pair from the configured source.

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
        return self.depth_scale(result, metric_depth1)

    def depth_scale(self, result: PairResult, metric_depth1: np.ndarray | None) -> ScaleResult:
        """Median ratio of camera-1 metric depth (camera resolution) to view-1 pointmap depth."""
        if metric_depth1 is None:
            return ScaleResult('depth', None, 'no metric depth image with the stamp of view 1')
        grid = self.metric_on_grid(result.plan1, metric_depth1)
        return median_ratio_scale(grid, result.pts1[..., 2], result.mask1,
                                  min_support=self.s.min_scale_support)

    @staticmethod
    def metric_on_grid(plan: Dust3rPlan, metric_depth: np.ndarray) -> np.ndarray:
        """A camera-resolution metric depth image resampled onto the view's network grid."""
        h1, w1 = metric_depth.shape
        if (w1, h1) != plan.src_wh:
            # a depth image of another resolution: map via its own resize factors
            sx, sy = w1 / plan.src_wh[0], h1 / plan.src_wh[1]
            if abs(sx - sy) > 1e-3 * max(sx, sy):
                raise ValueError(f'metric depth {w1}x{h1} has another aspect than the image '
                                 f'{plan.src_wh[0]}x{plan.src_wh[1]}')
        return resample_depth_to_grid(metric_depth, plan.resized_wh, plan.box_ltrb)
