"""Two-view reconstruction for Python users: `Dust3rPredictor` and `PairResult`.

Two images in, two pointmaps in camera 1's frame out, plus camera 2's pose in camera 1:

    from tt_depth_ros.api import Dust3rPredictor
    with Dust3rPredictor.from_pretrained('dust3r-vitl-512-dpt', backend='auto') as predictor:
        r = predictor('left.png', 'right.png', K1=K, K2=K, baseline_m=0.12)
        r.save_npz('pair.npz'); r.save_ply('pair.ply'); r.save_json('pair.json')

Pipeline: upstream preprocessing (or letterboxing, mode='pad') -> engine -> PnP-RANSAC on view 2's
pointmap with K2 mapped to the network grid (focal estimated from view 1 when no K2) -> optional
scale. DUSt3R is scale-free: lengths are in arbitrary units unless a scale is applied, and the
result says which (`scale_source`: 'none', 'baseline', 'depth' or a caller's label).
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.base import Engine
from tt_depth_ros.geometry.pointmap import scale as scl
from tt_depth_ros.geometry.pointmap.focal import estimate_focal
from tt_depth_ros.geometry.pointmap.pair_cloud import DEFAULT_CONF_THRESHOLD, fuse_pair_cloud
from tt_depth_ros.geometry.pose.pnp import PoseResult, solve_relative_pose
from tt_depth_ros.geometry.pose.se3 import frame_depth_in_own_camera
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import (
    Dust3rPlan,
    image_centre_on_grid,
    map_intrinsics,
    network_size,
    preprocess,
)
from tt_depth_ros.pipelines.engine_owner import EngineOwner
from tt_depth_ros.pipelines.io import load_rgb, write_ply

_log = logging.getLogger(__name__)
MODELS = registry.names(family='dust3r')


@dataclass
class PairResult:
    """One pair at network resolution; every length is multiplied by `scale`.

    Attributes:
        pts3d_1: (H, W, 3) float32 view-1 points, camera-1 frame (OpenCV optical axes).
        pts3d_2: (H, W, 3) float32 view-2 points, also camera-1 frame.
        conf_1: (H, W) head-1 confidence (>= 1; > 3 is upstream's "confident").
        conf_2: (H, W) head-2 confidence.
        depth_1: (H, W) z of view 1 in camera 1 (NaN on padding).
        depth_2: (H, W) z of view 2 in camera 2 (needs the pose; None without one).
        valid_1: (H, W) bool, False on padded pixels (pad mode).
        valid_2: (H, W) bool.
        image_1: (H, W, 3) uint8 network image 1 (colours).
        image_2: (H, W, 3) uint8 network image 2.
        K1_net: 3x3 intrinsics of view 1 on the network grid, or None if not given.
        K2_net: 3x3 intrinsics of view 2 used for PnP (given or from the estimated focal).
        pose: camera-2 -> camera-1 PoseResult (t scaled), or None when not requested.
        scale: factor applied to all lengths (1.0 = DUSt3R units).
        scale_source: 'none', 'baseline', 'depth' or the caller's label.
        scale_note: why a requested scale was not applied, else ''.
        plans: the preprocessing plans of both views (map network pixels back to cameras).
        timings: seconds per stage.
        backend: engine backend.
    """

    pts3d_1: np.ndarray
    pts3d_2: np.ndarray
    conf_1: np.ndarray
    conf_2: np.ndarray
    depth_1: np.ndarray
    depth_2: Optional[np.ndarray]
    valid_1: np.ndarray
    valid_2: np.ndarray
    image_1: np.ndarray
    image_2: np.ndarray
    K1_net: Optional[np.ndarray]
    K2_net: Optional[np.ndarray]
    pose: Optional[PoseResult]
    scale: float = 1.0
    scale_source: str = 'none'
    scale_note: str = ''
    plans: tuple[Dust3rPlan, Dust3rPlan] | None = None
    timings: dict = field(default_factory=dict)
    backend: str = ''

    @property
    def metric(self) -> bool:
        """True when lengths are metres (scale from a baseline or metric depth)."""
        return self.scale_source in scl.METRIC_SOURCES

    def cloud(self, threshold: float | None = None,
              percentile: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Fused coloured cloud (xyz (N, 3) float32, rgb (N, 3) uint8) in camera 1's frame."""
        return fuse_pair_cloud(self.pts3d_1, self.pts3d_2, self.image_1, self.image_2,
                               self.conf_1, self.conf_2, threshold, percentile,
                               self.valid_1, self.valid_2)

    def save_ply(self, path: str | Path, threshold: float | None = None,
                 percentile: float | None = None) -> int:
        """Binary PLY of the fused cloud; returns the number of points."""
        xyz, rgb = self.cloud(threshold, percentile)
        return write_ply(path, xyz, rgb)

    def save_npz(self, path: str | Path) -> None:
        """All maps, intrinsics, pose (R, t, success) and scale as a compressed .npz."""
        arrays = dict(pts3d_1=self.pts3d_1, pts3d_2=self.pts3d_2, conf_1=self.conf_1,
                      conf_2=self.conf_2, depth_1=self.depth_1, valid_1=self.valid_1,
                      valid_2=self.valid_2, image_1=self.image_1, image_2=self.image_2,
                      scale=np.float64(self.scale), scale_source=self.scale_source)
        if self.depth_2 is not None:
            arrays['depth_2'] = self.depth_2
        if self.K1_net is not None:
            arrays['K1_net'] = self.K1_net
        if self.K2_net is not None:
            arrays['K2_net'] = self.K2_net
        if self.pose is not None:
            arrays['pose_success'] = np.bool_(self.pose.success)
            if self.pose.success:
                arrays['T_cam1_cam2'] = self.pose.T
        np.savez_compressed(path, **arrays)

    def summary(self) -> dict:
        """JSON-friendly summary: sizes, pose, scale, focal source, confidence stats, timings."""
        h, w = self.conf_1.shape
        d = {'network_hw': [h, w], 'backend': self.backend,
             'frame': 'camera 1 (OpenCV optical: x right, y down, z forward)',
             'units': 'metres' if self.metric else 'DUSt3R units (scale-free)',
             'scale': self.scale, 'scale_source': self.scale_source,
             'scale_note': self.scale_note,
             'confident_fraction': {
                 'view1': float((self.conf_1[self.valid_1] > DEFAULT_CONF_THRESHOLD).mean()),
                 'view2': float((self.conf_2[self.valid_2] > DEFAULT_CONF_THRESHOLD).mean())},
             'pose': None if self.pose is None else self.pose.to_dict(),
             'K2_net': None if self.K2_net is None else self.K2_net.tolist(),
             'timings_s': self.timings}
        if self.plans is not None:
            d['preprocess'] = [{'src_wh': list(p.src_wh), 'resized_wh': list(p.resized_wh),
                                'box_ltrb': list(p.box_ltrb), 'mode': p.mode,
                                'resample': p.resample} for p in self.plans]
        return d

    def save_json(self, path: str | Path) -> None:
        """Write `summary()` as JSON."""
        Path(path).write_text(json.dumps(self.summary(), indent=2) + '\n')


def _check_scale(scale: Any) -> float:
    try:
        value = float(scale)
    except (TypeError, ValueError) as e:
        raise ValueError(f'scale must be a positive number, got {scale!r}') from e
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f'scale must be a positive finite number, got {scale!r}')
    return value


def load_image(image: Any) -> np.ndarray:
    """uint8 (H, W, 3) RGB; files get their EXIF orientation applied first, as upstream does."""
    import os

    if isinstance(image, (str, os.PathLike)) and Path(image).is_file():
        from PIL import Image, ImageOps, UnidentifiedImageError

        try:
            with Image.open(image) as im:
                return np.asarray(ImageOps.exif_transpose(im).convert('RGB')).copy()
        except (UnidentifiedImageError, OSError) as e:
            raise ValueError(f'cannot read image {image}: {e}') from e
    return load_rgb(image)


class Dust3rPredictor(EngineOwner):
    """Two images in, pointmaps + pose out, on any engine backend.

    Args:
        engine: a DUSt3R engine (`engines.factory.build_engine('dust3r-...')`).
        mode: 'crop' (upstream preprocessing) or 'pad' (letterbox to a square; views of
            different sizes then share the network size).
        size: long side of the network input (512).
        pad_value: grey level of padding in pad mode.
        conf_threshold: PnP confidence mask (conf > 3 upstream).
        reproj_px: PnP RANSAC threshold in network pixels (5).
        iterations: RANSAC iterations (100).
        pnp_confidence: RANSAC confidence (0.99).
        min_inliers: fewer RANSAC inliers is a failed pose (geometry.pose.pnp default 12).
        min_inlier_ratio: a smaller inlier fraction is a failed pose (default 0.1).
        logger: anything with `.info`/`.warning`.
    """

    def __init__(self, engine: Engine, *, mode: str = 'crop', size: int = 512,
                 pad_value: int = 0, conf_threshold: float = 3.0, reproj_px: float = 5.0,
                 iterations: int = 100, pnp_confidence: float = 0.99, min_inliers: int = 12,
                 min_inlier_ratio: float = 0.1, logger: Optional[Any] = None) -> None:
        network_size(640, 480, size, mode, pad_value)  # validates the options
        if getattr(engine, 'num_views', 2) != 2:
            raise ValueError('Dust3rPredictor needs a two-view (DUSt3R) engine')
        self.engine = engine
        self.mode, self.size, self.pad_value = mode, int(size), int(pad_value)
        self.pnp = dict(conf_threshold=float(conf_threshold), reproj_px=float(reproj_px),
                        iterations=int(iterations), confidence=float(pnp_confidence),
                        min_inliers=int(min_inliers), min_inlier_ratio=float(min_inlier_ratio))
        self._log = logger if logger is not None else _log

    @classmethod
    def from_pretrained(cls, model: str = 'dust3r-vitl-512-dpt', weights: Optional[str] = None,
                        revision: Optional[str] = None, backend: str = 'auto',
                        device_id: int = 0, dtype: Any = 'auto',
                        state_dict: Optional[Mapping[str, Any]] = None,
                        logger: Optional[Any] = None, **options: Any) -> 'Dust3rPredictor':
        """Build engine and predictor.

        Args:
            model: 'dust3r-vitl-512-dpt' or 'dust3r-tiny' (tests).
            weights: explicit weights file; else Hugging Face cache, else pinned download.
            revision: hub revision.
            backend: 'auto', 'ttnn', 'torch-cuda' or 'torch-cpu'.
            device_id: accelerator index.
            dtype: Precision preset, 'auto' by default as everywhere (engines/factory.py
                `build_engine`); 'float32' is exact.
            state_dict: checkpoint tensors (upstream key names) instead of a file.
            logger: anything with `.info`/`.warning`.
            **options: Dust3rPredictor options (mode, size, pad_value, conf_threshold, ...).
        """
        from tt_depth_ros.engines.factory import build_engine

        if model not in MODELS:
            raise ValueError(f'Dust3rPredictor model={model!r}; known: {MODELS}')
        engine = build_engine(model, weights=weights, backend=backend, device_id=device_id,
                              dtype=dtype, revision=revision, state_dict=state_dict,
                              logger=logger)
        return cls(engine, logger=logger, **options)

    def _prepare(self, image: Any, name: str) -> tuple[np.ndarray, Dust3rPlan]:
        rgb = load_image(image)
        h, w = rgb.shape[:2]
        try:
            plan = network_size(w, h, self.size, self.mode, self.pad_value)
        except ValueError as e:
            raise ValueError(f'{name}: {e}') from e
        return preprocess(rgb, plan), plan

    def __call__(self, img1: Any, img2: Any, K1: Optional[np.ndarray] = None,
                 K2: Optional[np.ndarray] = None, scale: Optional[float] = None,
                 scale_source: Optional[str] = None, *, baseline_m: Optional[float] = None,
                 metric_depth_1: Optional[np.ndarray] = None, pose: bool = True) -> PairResult:
        """Reconstruct one pair.

        Args:
            img1: view 1 (reference camera): path (EXIF orientation applied), PIL image or
                uint8 (H, W, 3) RGB.
            img2: view 2.
            K1: 3x3 intrinsics of image 1 (pixels of the given image); optional.
            K2: 3x3 intrinsics of image 2; without it the focal is estimated (Weiszfeld) from
                view 1's pointmap, assuming both views share one camera.
            scale: a known factor from DUSt3R units to the target unit.
            scale_source: label for `scale` (default 'user').
            baseline_m: known camera distance (stereo rig): scale = baseline_m / |t| (needs pose).
            metric_depth_1: metric depth of image 1 at its resolution (e.g. DA3): scale =
                median ratio over confident pixels.
            pose: run PnP-RANSAC for camera 2's pose.

        Returns:
            PairResult.

        Raises:
            ValueError: bad images or intrinsics, views resizing to different network sizes,
                more than one scale source, or a non-positive scale.
        """
        given = [s is not None for s in (scale, baseline_m, metric_depth_1)]
        if sum(given) > 1:
            raise ValueError('give at most one of scale, baseline_m and metric_depth_1')
        if baseline_m is not None and not pose:
            raise ValueError('baseline_m needs the pose (pose=True)')
        if scale is not None:
            scale = _check_scale(scale)
        t0 = time.perf_counter()
        net1, plan1 = self._prepare(img1, 'image 1')
        net2, plan2 = self._prepare(img2, 'image 2')
        if plan1.net_hw != plan2.net_hw:
            raise ValueError(f'image 1 ({plan1.src_wh[0]}x{plan1.src_wh[1]}) and image 2 '
                             f'({plan2.src_wh[0]}x{plan2.src_wh[1]}) map to different network '
                             f'sizes {plan1.net_hw} vs {plan2.net_hw}; use images of one aspect '
                             "or mode='pad'")
        K1_net = None if K1 is None else map_intrinsics(K1, plan1)
        K2_net = None if K2 is None else map_intrinsics(K2, plan2)
        t1 = time.perf_counter()
        raw = self.engine.infer(net1, net2)
        t2 = time.perf_counter()
        valid1, valid2 = plan1.valid_mask(), plan2.valid_mask()
        pts1 = raw['pts3d_1'].astype(np.float32)
        pts2 = raw['pts3d_2'].astype(np.float32)
        pts1[~valid1] = np.nan
        pts2[~valid2] = np.nan
        pose_res, focal_source = None, 'intrinsics'
        if pose:
            if K2_net is None:
                # principal point = the mapped image centre, not the grid centre
                f = estimate_focal(np.nan_to_num(pts1, nan=0.0), image_centre_on_grid(plan1),
                                   mask=valid1)
                cx, cy = image_centre_on_grid(plan2)
                K2_net = np.array([[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]])
                focal_source = 'estimated'
                self._log.info(f'no K2: focal {f:.1f} px (network grid) estimated from view 1')
            pose_res = solve_relative_pose(pts2, raw['conf_2'], K2_net, valid_mask=valid2,
                                           focal_source=focal_source, **self.pnp)
            if not pose_res.success:
                self._log.warning(f'pose failed: {pose_res.reason}')
        depth1 = pts1[..., 2].copy()
        s, src, note = 1.0, 'none', ''
        if scale is not None:
            s, src = scale, scale_source or 'user'
        elif baseline_m is not None:
            if pose_res.success:
                res = scl.baseline_scale(pose_res.t, baseline_m)
            else:
                res = scl.ScaleResult('baseline', None, f'pose failed ({pose_res.reason})')
            s, src, note = (res.value, 'baseline', '') if res.ok else (1.0, 'none', res.reason)
        elif metric_depth_1 is not None:
            ref = scl.resample_depth_to_grid(np.asarray(metric_depth_1, dtype=np.float64),
                                             plan1.resized_wh, plan1.box_ltrb)
            mask = valid1 & (raw['conf_1'] > self.pnp['conf_threshold'])
            res = scl.median_ratio_scale(ref, depth1, mask)
            s, src, note = (res.value, 'depth', '') if res.ok else (1.0, 'none', res.reason)
        if note:
            self._log.warning(f'scale not applied: {note}')
        depth2 = None
        if pose_res is not None and pose_res.success:
            depth2 = frame_depth_in_own_camera(pts2, pose_res.T)
        if s != 1.0:
            pts1, pts2, depth1 = pts1 * s, pts2 * s, depth1 * s
            depth2 = None if depth2 is None else depth2 * s
            if pose_res is not None and pose_res.success:
                pose_res = replace(pose_res, t=pose_res.t * s)
        t3 = time.perf_counter()
        timings = {'preprocess': t1 - t0}
        timings.update({f'engine_{k}': v for k, v in self.engine.last_timings.items()})
        timings.update({'engine': t2 - t1, 'postprocess': t3 - t2, 'total': t3 - t0})
        return PairResult(
            pts3d_1=pts1.astype(np.float32), pts3d_2=pts2.astype(np.float32),
            conf_1=raw['conf_1'], conf_2=raw['conf_2'], depth_1=depth1.astype(np.float32),
            depth_2=depth2, valid_1=valid1, valid_2=valid2, image_1=net1, image_2=net2,
            K1_net=K1_net, K2_net=K2_net, pose=pose_res, scale=float(s), scale_source=src,
            scale_note=note, plans=(plan1, plan2), timings=timings,
            backend=self.engine.info.backend)
