"""The pair node's alternative to DUSt3R: one DA3 any-view (or NESTED) forward over both views.

Same interface as `PairPipeline` (plans, `run`, scales, the result's depth / points / pose), so the
pair node keeps its topics, frames, TF rules and failure semantics; only the engine differs.

Per pair: each view resized to the DA3 grid (process_res = the node's `network_size`; both views
must land on the same grid) -> one engine call with both views -> per view depth, confidence,
intrinsics and world-to-camera extrinsics E_i (3x4, OpenCV camera axes, the network's world frame,
the depth's unit). The pose of camera 2 in camera 1 - the node's convention, x1 = R x2 + t - is

    T_1<-2 = E_1 @ inv(E_2)            (4x4 forms of the extrinsics)

so the network's world frame drops out (`pose_source` 'auto' / 'camera_decoder'). With 'pnp' it
comes from the ray head instead, by one PnP-RANSAC per view on its ray points with the K below
(geometry/pose/ray_pnp.py); a failed solve is a failed pose, never the decoder's.

Points: each view's depth back-projected with its K on the network grid (the CameraInfo K
mapped to the grid when known, else the model's estimate), view 2 moved into camera 1 with
T_1<-2. Units: the any-view models' own relative unit (the node's `baseline` / `depth` scale
sources make metres of it, as for DUSt3R); NESTED predicts metres (scale source 'model'). For
NESTED with a known K the metres are re-focused like the depth node does
(pipelines/depth.py `FrameOptions.nested_focal_rescale`):
depth and translation times the mean over views of f_used / f_est.
Confidence: DA3's (>= 1), masked by the node's `conf_threshold` like DUSt3R's.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from tt_depth_ros.engines import registry
from tt_depth_ros.geometry.depth.depth_cloud import organized_points
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.geometry.pose.pnp import PoseResult
from tt_depth_ros.geometry.pose.ray_pnp import relative_pose_from_rays
from tt_depth_ros.geometry.pose.se3 import invert_T
from tt_depth_ros.geometry.preprocess.da3_preprocess import (
    network_size,
    resize_to_network,
    scale_intrinsics,
)
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import Dust3rPlan
from tt_depth_ros.models.kind import MULTI_VIEW_KINDS, ModelKind
from tt_depth_ros.pipelines.depth import mean_focal
from tt_depth_ros.pipelines.pair_dust3r import PairGeometry, PairPipeline, PairSettings

ANYVIEW_PAIR_MODELS = registry.names(kinds=MULTI_VIEW_KINDS)
"""Models the pair node runs through this pipeline (any-view and NESTED)."""


def is_anyview_engine(engine) -> bool:
    """Whether an engine is a DA3 any-view / NESTED multi-view engine (its registry kind)."""
    return engine is not None and engine.info.details.get('kind') in MULTI_VIEW_KINDS


def _T44(E: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :4] = np.asarray(E, dtype=np.float64)
    return T


def decoder_pose(extrinsics, focal_source: str) -> PoseResult:
    """Camera 2 -> camera 1 from the camera decoder's two world-to-camera extrinsics."""
    T_12 = _T44(extrinsics[0]) @ invert_T(_T44(extrinsics[1]))
    if np.all(np.isfinite(T_12)) and abs(np.linalg.det(T_12[:3, :3]) - 1.0) < 1e-3:
        return PoseResult(True, R=T_12[:3, :3].copy(), t=T_12[:3, 3].copy(), inlier_ratio=1.0,
                          focal_source=focal_source)
    return PoseResult(False, 'the camera decoder returned no valid rotation',
                      focal_source=focal_source)


class AnyviewPair(PairGeometry):
    """One pair on the DA3 network grid, with the attributes the pair node reads (Dust3rPair's)."""

    def __init__(self, plans, images, K_net, depth, conf, pose: PoseResult, conf_threshold,
                 focal_source, timings):
        self.plan1, self.plan2 = plans
        self.net1, self.net2 = images
        self.K1_net, self.K2_net = K_net
        self.depth_1, self.depth_2 = depth
        self.conf1, self.conf2 = conf
        self.conf_threshold = conf_threshold
        self.focal_source = focal_source    # the pair node reports it in diagnostics
        self.timings = timings
        self.api = self        # PairPipeline.stereo_scale reads result.api.depth_1
        self.pose = pose
        self.pts1 = organized_points(self.depth_1, self.K1_net)
        cam2 = organized_points(self.depth_2, self.K2_net).astype(np.float64)
        if pose.success:       # without a pose view 2 cannot be placed in camera 1
            T_12 = pose.T
            self.pts2 = (cam2 @ T_12[:3, :3].T + T_12[:3, 3]).astype(np.float32)
        else:
            self.pts2 = np.full_like(cam2, np.nan, dtype=np.float32)
        self.mask1 = (self.conf1 > conf_threshold) & np.isfinite(self.pts1).all(-1)
        self.mask2 = (self.conf2 > conf_threshold) & np.isfinite(self.pts2).all(-1)

    def depth1(self, scale: float) -> np.ndarray:
        """View-1 planar depth times `scale`; NaN where not confident."""
        return np.where(self.mask1, self.depth_1 * scale, np.nan).astype(np.float32)

    def depth2(self, scale: float) -> np.ndarray:
        """View-2 planar depth in camera 2 times `scale`; NaN where not confident."""
        return np.where(self.mask2, self.depth_2 * scale, np.nan).astype(np.float32)


class AnyviewPairPipeline(PairPipeline):
    """PairPipeline with a DA3 any-view engine of 2 views (see the module docstring)."""

    def __init__(self, engine, settings: PairSettings):
        self.s = settings
        # 'camera_decoder': the pnp_* diagnostics stay 0 (no RANSAC runs)
        self.pose_source = 'pnp' if settings.pose_source == 'pnp' else 'camera_decoder'
        self._plans: dict[tuple[int, int], Dust3rPlan] = {}
        self.predictor = None
        self.engine = engine
        self.metric_model = (engine is not None
                             and engine.info.details.get('kind') == ModelKind.NESTED)
        self.units = 'metres' if self.metric_model else 'model units (relative)'
        name = engine.info.model if engine is not None else 'DA3'
        self.engine_label = (f'DA3 any-view {name}: one forward over both views, pose from the '
                             + ('ray head by PnP-RANSAC' if self.pose_source == 'pnp' else
                                'camera decoder'))

    def set_conf_threshold(self, value: float) -> None:
        """Apply a new confidence threshold (a runtime parameter)."""
        if value != self.s.conf_threshold:
            self.s = dataclasses.replace(self.s, conf_threshold=float(value))

    def plan_for(self, width: int, height: int) -> Dust3rPlan:
        """The DA3 resize of a camera size as a plan (whole resized image = network window)."""
        key = (int(width), int(height))
        if key not in self._plans:
            h, w = network_size(key[0], key[1], self.s.network_size)
            self._plans[key] = Dust3rPlan(key, (w, h), (0, 0, w, h), 'crop', 'DA3')
        return self._plans[key]

    def run(self, rgb1, rgb2, K1, K2, context=(), same_camera: bool = True) -> AnyviewPair:
        """One pair; ValueError when the views do not map to one network grid.

        Args:
            rgb1: (H, W, 3) uint8 view 1 (the reference / keyframe).
            rgb2: (H, W, 3) uint8 view 2 (camera 2 / the current frame).
            K1: view-1 intrinsics at its image size, None = the model's estimate.
            K2: view-2 intrinsics at its image size, None = the model's estimate.
            context: RGB images of extra views (temporal window: earlier keyframes) that go
                through the same forward between view 1 and view 2; padded with repeats of the
                oldest one (or of view 1) to the engine's view count, so one engine shape serves
                every window fill.
            same_camera: unused: the camera decoder estimates each view's intrinsics itself
                (the DUSt3R pipeline's argument, kept so both pipelines run alike).
        """
        t0 = time.perf_counter()
        extra = list(context)
        n_extra = self.engine.num_views - 2
        if len(extra) > n_extra:
            raise ValueError(f'{len(extra)} context views for a {self.engine.num_views}-view '
                             'engine')
        extra += [extra[-1] if extra else rgb1] * (n_extra - len(extra))
        views = [rgb1, *extra, rgb2]
        plans = [self.plan_for(r.shape[1], r.shape[0]) for r in views]
        if len({p.net_hw for p in plans}) != 1:
            raise ValueError(f'the views map to different DA3 grids {plans[0].net_hw} and '
                             f'{plans[-1].net_hw}; give both cameras the same aspect ratio')
        net_hw = plans[0].net_hw
        nets = [resize_to_network(r, net_hw, self.s.network_size) for r in views]
        t1 = time.perf_counter()
        out = self.engine.infer(*nets)
        t2 = time.perf_counter()
        pick = [0, len(views) - 1]
        keys = ('depth', 'conf', 'intrinsics', 'extrinsics') + (
            ('ray', 'ray_conf') if self.pose_source == 'pnp' else ())
        missing = [k for k in keys if k not in out]
        if missing:
            raise ValueError(f'the engine returned no {missing}; pose_source=pnp needs the ray '
                             'head outputs (ray, ray_conf) of a DA3 any-view engine')
        origin_scale = float(np.asarray(out.get('scale_factor', 1.0)))   # NESTED: metres
        out = {k: np.asarray(out[k])[pick] for k in keys}
        plans, nets = [plans[0], plans[-1]], [nets[0], nets[-1]]
        net_wh = (net_hw[1], net_hw[0])
        K_est = [np.asarray(k, np.float64) for k in out['intrinsics']]
        Ks = [K_est[i] if K is None else scale_intrinsics(K, plans[i].src_wh, net_wh)
              for i, K in enumerate((K1, K2))]
        source = 'intrinsics' if K1 is not None and K2 is not None else 'estimated'
        depth = [np.asarray(d, np.float32) for d in out['depth']]
        conf = [np.asarray(c, np.float32) for c in out['conf']]
        if self.pose_source == 'pnp':
            pose = relative_pose_from_rays(
                out['ray'], out['ray_conf'], depth, conf, Ks,
                conf_threshold=self.s.conf_threshold, origin_scale=origin_scale,
                reproj_px=self.s.pnp_reproj_px, iterations=self.s.pnp_iterations,
                min_inliers=self.s.pnp_min_inliers, min_inlier_ratio=self.s.pnp_min_inlier_ratio,
                focal_source=source)
        else:
            pose = decoder_pose(out['extrinsics'], source)
        if self.metric_model:
            c = float(np.mean([mean_focal(Ks[i]) / mean_focal(K_est[i]) for i in range(2)]))
            depth = [d * np.float32(c) for d in depth]
            if pose.success:
                pose = dataclasses.replace(pose, t=pose.t * c)
        t3 = time.perf_counter()
        timings = {'preprocess': t1 - t0, 'engine': t2 - t1}
        timings.update({f'engine_{k}': v for k, v in self.engine.last_timings.items()})
        if self.pose_source == 'pnp':
            timings['pnp'] = t3 - t2
        result = AnyviewPair(plans, nets, Ks, depth, conf, pose, self.s.conf_threshold,
                                   source, timings)
        result.timings['postprocess'] = time.perf_counter() - t2
        return result

    def stereo_scale(self, result, metric_depth1=None) -> ScaleResult:
        """As PairPipeline; NESTED without a configured source is metres ('model')."""
        if self.metric_model and self.s.scale_source == 'none':
            return ScaleResult('model', 1.0, support=int(result.mask1.sum()))
        return super().stereo_scale(result, metric_depth1)

    def chain_scale(self, scale: ScaleResult) -> ScaleResult:
        """A temporal chaining scale: NESTED's own unit is metres."""
        if self.metric_model and scale.ok and scale.source == 'none':
            return dataclasses.replace(scale, source='model')
        return scale


def make_pair_pipeline(engine, settings: PairSettings) -> PairPipeline:
    """The pipeline for an engine: DA3 any-view / NESTED, else DUSt3R."""
    if is_anyview_engine(engine):
        return AnyviewPairPipeline(engine, settings)
    if settings.pose_source == 'camera_decoder':
        raise ValueError("pose_source='camera_decoder' needs a DA3 any-view engine; this one "
                         "has no camera decoder (DUSt3R's pose is always PnP)")
    return PairPipeline(engine, settings)
