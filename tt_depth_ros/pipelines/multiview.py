"""Multi-view depth and cameras for Python users: `MultiViewPredictor` and `MultiViewResult`.

N images of one scene -> the DA3 any-view (or NESTED) network -> per view depth, confidence,
camera-to-world pose and intrinsics **at each original image size**, plus a fused coloured point
cloud. Upstream's API returns everything at the processed (network) size; here the maps are
resampled back and K is mapped back:

* preprocessing as upstream (test/data/da3_anyview/README.md): each view resized on its own
  (geometry.preprocess.da3_preprocess), then, if the processed sizes differ, every view is
  centre-cropped to the smallest height and width (offsets (h - h_min)//2, (w - w_min)//2);
* K (network, h x w crop) -> cx += left, cy += top (the resized view h1 x w1) -> row 0 x W0/w1,
  row 1 x H0/h1 (the original W0 x H0);
* depth / confidence: the network map is placed at its crop offset in an h1 x w1 canvas (NaN
  outside the crop) and resampled to H0 x W0 (geometry.depth.metric_depth.resize_depth: never mixes
  valid and NaN pixels); depth values are planar and do not change with resolution.

Poses: `poses_c2w` (N, 4, 4) camera-to-world, OpenCV camera axes (x right, y down, z forward), in
the network's world frame (close to, but not exactly, the reference view's camera). Units: metres
for NESTED, an arbitrary common scale for the any-view models (`depth_units` says which; relative
depth is never labelled metres). Known intrinsics replace the estimated ones in the outputs and the
cloud; the network does not take them (pose-conditioned inference is not implemented).

    from tt_depth_ros.api import MultiViewPredictor
    with MultiViewPredictor.from_pretrained('da3-small') as mv:
        r = mv(['a.png', 'b.png', 'c.png'])
        r.save_ply('scene.ply'); r.save_poses_json('poses.json')
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.base import ANY_VIEWS, Engine
from tt_depth_ros.geometry.depth.depth_cloud import organized_points
from tt_depth_ros.geometry.depth.metric_depth import resize_depth
from tt_depth_ros.geometry.preprocess.da3_preprocess import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    network_size,
    normalize,
    resize_to_network,
)
from tt_depth_ros.models.kind import MULTI_VIEW_KINDS
from tt_depth_ros.pipelines.engine_owner import EngineOwner
from tt_depth_ros.pipelines.io import load_rgb, write_ply

POSE_CONVENTION = ('T_world_camera: 4x4 camera-to-world, row-major; camera axes OpenCV (x right, '
                   'y down, z forward); world = the network frame; K: 3x3 pixels of the original '
                   'image (pixel centres at integer coordinates)')


@dataclass
class MultiViewResult:
    """One multi-view prediction; lists / arrays indexed by input view.

    Attributes:
        depth: Per view (H0, W0) float32 planar depth at the original size; NaN where the network
            saw nothing (outside a centre crop). Units: `depth_units`.
        conf: Per view (H0, W0) float32 confidence (>= 1; NESTED sky pixels 1.0).
        K: (N, 3, 3) float64 intrinsics at the original sizes (given ones, else estimated).
        K_estimated: (N, 3, 3) the network's intrinsics mapped to the original sizes.
        poses_c2w: (N, 4, 4) float64 camera-to-world poses (module docstring).
        is_metric: True (metres) for NESTED, False for the any-view models (relative scale).
        images: The original RGB images.
        ref_view: The reference view the network selected (input order).
        network: Network-size outputs: 'depth', 'conf' (N, h, w), 'K' (N, 3, 3),
            'extrinsics_w2c' (N, 3, 4), 'input' (N, 3, h, w) normalised, 'processed_images'
            (N, h, w, 3) uint8 as upstream returns them, 'crop' (N, 2) top/left, 'resized_hw'
            (N, 2).
        model: Model name.
        timings: Seconds per stage.
    """

    depth: list
    conf: list
    K: np.ndarray
    K_estimated: np.ndarray
    poses_c2w: np.ndarray
    is_metric: bool
    images: list
    ref_view: int
    network: dict
    model: str = ''
    timings: dict = field(default_factory=dict)

    @property
    def depth_units(self) -> str:
        """'m' (metric) or 'relative' (one arbitrary scale shared by all views)."""
        return 'm' if self.is_metric else 'relative'

    def points(self, view: int, decimation: int = 1) -> np.ndarray:
        """(h, w, 3) float32 world points of one view (NaN invalid), in `depth_units`."""
        cam = organized_points(self.depth[view], self.K[view], decimation=decimation)
        T = self.poses_c2w[view]
        return (cam @ T[:3, :3].T.astype(np.float32) + T[:3, 3].astype(np.float32))

    def fused_cloud(self, decimation: int = 1,
                    min_conf: Optional[float] = None) -> tuple[np.ndarray, np.ndarray]:
        """All views' finite world points (P, 3) float32 and their colours (P, 3) uint8.

        Args:
            decimation: Every n-th pixel in x and y.
            min_conf: Keep only pixels with confidence >= this (None: all).
        """
        d = max(int(decimation), 1)
        pts, cols = [], []
        for i in range(len(self.depth)):
            p = self.points(i, d)
            keep = np.all(np.isfinite(p), axis=-1)
            if min_conf is not None:
                keep &= self.conf[i][::d, ::d][:p.shape[0], :p.shape[1]] >= min_conf
            pts.append(p[keep])
            cols.append(self.images[i][::d, ::d][:p.shape[0], :p.shape[1]][keep])
        return np.concatenate(pts), np.concatenate(cols)

    def save_ply(self, path: str | Path, decimation: int = 1,
                 min_conf: Optional[float] = None) -> int:
        """Fused coloured cloud as binary PLY (world frame, `depth_units`); returns the count."""
        pts, cols = self.fused_cloud(decimation, min_conf)
        return write_ply(path, pts, cols)

    def poses_json(self, names: Optional[Sequence[str]] = None) -> dict:
        """Poses and intrinsics as a JSON-ready dict (convention in 'convention')."""
        names = list(names) if names is not None else [f'view{i}' for i in range(len(self.depth))]
        return {'convention': POSE_CONVENTION, 'units': self.depth_units, 'model': self.model,
                'reference_view': self.ref_view,
                'views': [{'image': names[i], 'width': int(self.depth[i].shape[1]),
                           'height': int(self.depth[i].shape[0]), 'K': self.K[i].tolist(),
                           'T_world_camera': self.poses_c2w[i].tolist()}
                          for i in range(len(self.depth))]}

    def save_poses_json(self, path: str | Path, names: Optional[Sequence[str]] = None) -> None:
        """Write `poses_json` to a file."""
        Path(path).write_text(json.dumps(self.poses_json(names), indent=2))

    def save_npz(self, path: str | Path) -> None:
        """Per-view depth_i / conf_i, K, K_estimated, poses_c2w, is_metric, ref_view as .npz."""
        arrays = {f'depth_{i}': d for i, d in enumerate(self.depth)}
        arrays.update({f'conf_{i}': c for i, c in enumerate(self.conf)})
        np.savez_compressed(path, K=self.K, K_estimated=self.K_estimated,
                            poses_c2w=self.poses_c2w, is_metric=self.is_metric,
                            ref_view=self.ref_view, **arrays)


@dataclass(frozen=True)
class SceneInput:
    """The views of one scene on the network grid and how each was cut from its image.

    Attributes:
        views: Per view (h, w, 3) uint8 RGB, all one size (the engine's input).
        crops: Per view (top, left) of the centre crop in the resized view.
        resized_hw: Per view (h1, w1) after the upstream resize, before the crop.
    """

    views: list
    crops: list
    resized_hw: list


def processed_images(x: np.ndarray) -> np.ndarray:
    """Upstream's `processed_images` from the network input (N, 3, h, w): (N, h, w, 3) uint8.

    uint8(clip(x * std + mean, 0, 1) * 255) in float64 with truncation (not rounding), as upstream
    returns them (about a fifth of the values are 1 below the image fed to the network).
    """
    hwc = np.transpose(x.astype(np.float64), (0, 2, 3, 1))
    rgb = hwc * np.asarray(IMAGENET_STD, np.float64) + np.asarray(IMAGENET_MEAN, np.float64)
    return (np.clip(rgb, 0.0, 1.0) * 255).astype(np.uint8)


def w2c_to_c2w(extrinsics: np.ndarray) -> np.ndarray:
    """(N, 3, 4) world-to-camera [R | t] -> (N, 4, 4) camera-to-world [R^T | -R^T t]."""
    e = np.asarray(extrinsics, dtype=np.float64)
    out = np.tile(np.eye(4), (e.shape[0], 1, 1))
    rt = np.transpose(e[:, :, :3], (0, 2, 1))
    out[:, :3, :3] = rt
    out[:, :3, 3] = -(rt @ e[:, :, 3:])[..., 0]
    return out


def net_to_original_K(K_net: np.ndarray, crop: tuple[int, int], resized_hw: tuple[int, int],
                      orig_hw: tuple[int, int]) -> np.ndarray:
    """Map K of the network crop to the original image (module docstring)."""
    K = np.array(K_net, dtype=np.float64)
    K[0, 2] += crop[1]
    K[1, 2] += crop[0]
    K[0] *= orig_hw[1] / resized_hw[1]
    K[1] *= orig_hw[0] / resized_hw[0]
    K[2] = (0.0, 0.0, 1.0)
    return K


def net_to_original_map(m: np.ndarray, crop: tuple[int, int], resized_hw: tuple[int, int],
                        orig_hw: tuple[int, int]) -> np.ndarray:
    """A network-size map back to the original size, NaN outside the crop."""
    h, w = m.shape
    if (h, w) != tuple(resized_hw):
        canvas = np.full(resized_hw, np.nan, dtype=np.float32)
        canvas[crop[0]:crop[0] + h, crop[1]:crop[1] + w] = m
        m = canvas
    return resize_depth(m, orig_hw)


class MultiViewPredictor(EngineOwner):
    """Images of one scene in, per-view depth and cameras out (torch backends).

    Args:
        engine: A DA3 any-view / NESTED engine built with `num_views=ANY_VIEWS`
            (engines/torch/da3.py: one forward over however many views a call brings).
        process_res: Long-side target of the upstream resize (default 504).
    """

    def __init__(self, engine: Engine, process_res: int = 504) -> None:
        if engine.info.details.get('kind') not in MULTI_VIEW_KINDS:
            raise ValueError(f'{engine.info.model}: MultiViewPredictor needs an any-view or '
                             'NESTED model; use DepthPredictor for single-view metric/mono models')
        if engine.num_views != ANY_VIEWS:
            raise ValueError(f'{engine.info.model}: MultiViewPredictor needs an engine built with '
                             f'num_views=ANY_VIEWS, not {engine.num_views}')
        self.engine = engine
        self.name = engine.info.model
        self.process_res = int(process_res)
        self.is_metric = bool(engine.info.details['is_metric'])

    @classmethod
    def from_pretrained(cls, model: str = 'da3-small', weights: Optional[str] = None,
                        revision: Optional[str] = None, backend: str = 'auto',
                        device_id: int = 0, dtype: Any = 'auto',
                        state_dict: Optional[Mapping[str, Any]] = None,
                        accept_license: Optional[bool] = None,
                        process_res: int = 504) -> 'MultiViewPredictor':
        """Build the engine and the predictor.

        Args:
            model: 'da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1',
                'da3nested-giant-large-1.1' ('da3-anyview-tiny' for tests).
            weights: Explicit weights file; else Hugging Face cache, else download.
            revision: Hub revision.
            backend: 'auto', 'torch-cpu' or 'torch-cuda' (these models have no ttnn engine).
            device_id: CUDA device index.
            dtype: Precision preset, 'auto' by default as everywhere (engines/factory.py
                `build_engine`); 'float32' is exact.
            state_dict: Checkpoint tensors (upstream key names) instead of a file.
            accept_license: Opt-in for CC-BY-NC-4.0 models (else TT_DEPTH_ACCEPT_NC_LICENSE).
            process_res: Long-side target of the upstream resize.
        """
        from tt_depth_ros.engines.factory import build_engine

        models = registry.names(kinds=MULTI_VIEW_KINDS)
        if model not in models:
            raise ValueError(f'MultiViewPredictor model={model!r}; known: {models}')
        engine = build_engine(model, weights=weights, revision=revision, backend=backend,
                              device_id=device_id, dtype=dtype, state_dict=state_dict,
                              accept_license=accept_license, num_views=ANY_VIEWS)
        return cls(engine, process_res=process_res)

    def preprocess(self, rgbs: Sequence[np.ndarray]) -> SceneInput:
        """Upstream multi-view preprocessing: resize each view, centre-crop to the smallest."""
        nets, sizes = [], []
        for rgb in rgbs:
            hw = network_size(rgb.shape[1], rgb.shape[0], self.process_res)
            nets.append(resize_to_network(rgb, hw, self.process_res))
            sizes.append(hw)
        h_min, w_min = min(s[0] for s in sizes), min(s[1] for s in sizes)
        crops = [((h - h_min) // 2, (w - w_min) // 2) for h, w in sizes]
        views = [np.ascontiguousarray(im[top:top + h_min, left:left + w_min])
                 for im, (top, left) in zip(nets, crops)]
        return SceneInput(views=views, crops=crops, resized_hw=sizes)

    def __call__(self, images: Sequence[Any],
                 K: Optional[np.ndarray | Sequence[np.ndarray]] = None) -> MultiViewResult:
        """Predict one scene.

        Args:
            images: >= 1 paths / PIL images / uint8 (H, W, 3) arrays (sizes may differ).
            K: Optional known intrinsics of the original images: one 3x3 for all or (N, 3, 3).
        """
        if self.engine is None:
            raise RuntimeError('MultiViewPredictor is closed')
        if isinstance(images, (str, Path, np.ndarray)) or len(images) < 1:
            raise ValueError('images must be a non-empty list of images')
        t0 = time.perf_counter()
        rgbs = [load_rgb(im) for im in images]
        n = len(rgbs)
        known = None
        if K is not None:
            known = np.asarray(K, dtype=np.float64)
            known = np.broadcast_to(known, (n, 3, 3)) if known.shape == (3, 3) else known
            if known.shape != (n, 3, 3):
                raise ValueError(f'K must be 3x3 or ({n}, 3, 3), got {known.shape}')
        scene = self.preprocess(rgbs)
        crops, sizes = scene.crops, scene.resized_hw
        x = np.stack([normalize(v) for v in scene.views])   # what the engine feeds the network
        t1 = time.perf_counter()
        net = self.engine.infer(*scene.views)
        t2 = time.perf_counter()
        origs = [im.shape[:2] for im in rgbs]
        K_est = np.stack([net_to_original_K(net['intrinsics'][i], crops[i], sizes[i], origs[i])
                          for i in range(n)])
        depth = [net_to_original_map(net['depth'][i], crops[i], sizes[i], origs[i])
                 for i in range(n)]
        conf = [net_to_original_map(net['conf'][i], crops[i], sizes[i], origs[i])
                for i in range(n)]
        t3 = time.perf_counter()
        return MultiViewResult(
            depth=depth, conf=conf, K=K_est if known is None else np.array(known),
            K_estimated=K_est, poses_c2w=w2c_to_c2w(net['extrinsics']), is_metric=self.is_metric,
            images=rgbs, ref_view=int(net['ref_view']), model=self.name,
            network={'depth': net['depth'], 'conf': net['conf'], 'K': net['intrinsics'],
                     'extrinsics_w2c': net['extrinsics'], 'input': x,
                     'processed_images': processed_images(x),
                     'crop': np.array(crops), 'resized_hw': np.array(sizes)},
            timings={'preprocess': t1 - t0, 'network': t2 - t1, 'postprocess': t3 - t2,
                     'total': t3 - t0})
