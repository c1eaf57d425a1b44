"""THE DA3 frame path, and `DepthPredictor` / `DepthResult`, its Python API.

One camera image through any DA3 model (docs/design.md §2). `DA3FramePath` is the only
implementation: `DepthPredictor` wraps it for Python users (files, fx/fy arguments), the depth node
calls it for every kind (ros/depth/node.py; the metric scale of relative frames is
pipelines/depth_scale.py). Per frame: network size (upstream upper-bound resize, or a fixed
size) -> upstream DA3 resize (on the engine's device when it `resizes_on_device` and the output
is the camera grid: the camera image and the resize as matrices go to `infer_camera`) -> engine
-> intrinsics at network resolution (the caller's, the model's estimate, or the default focal)
-> geometry.depth.depth_postprocess.finish_depth (metres = raw * ((fx'+fy')/2)/300 with fx', fy'
at network resolution for DA3METRIC, sky as +Inf / NaN / kept, optional max range, the
rectification border invalid, optional resample to the camera resolution that never blends valid
with NaN/Inf pixels) -> confidence, K, tx and the estimated K on the output grid, with per-stage
timings.

    from tt_depth_ros.api import DepthPredictor
    with DepthPredictor.from_pretrained('da3metric-large', backend='auto') as predictor:
        result = predictor('frame.png', fx=525.0, fy=525.0, cx=319.5, cy=239.5)
        result.save_png16_mm('depth.png')

DA3MONO-LARGE ('da3mono-large') gives *relative* depth: `is_metric` is False, no focal scaling is
applied, and the millimetre/PLY savers refuse it.

The any-view models ('da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1') run on one image
too: relative depth (`is_metric` False, `depth_units` 'relative'), a confidence map and the
network's estimated intrinsics (`K_estimated`, mapped to the output grid; used as `K` when none is
given). NESTED ('da3nested-giant-large-1.1') gives metres without calibration (its scale comes from
its own estimated intrinsics; in `DepthPredictor` given intrinsics only set `K`; the depth node
re-aligns the metres to the focal it uses, `FrameOptions.nested_focal_rescale`), a confidence and
sky.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional

import cv2
import numpy as np

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.geometry.camera.rectify import Rectifier
from tt_depth_ros.geometry.depth import metric_depth as md
from tt_depth_ros.geometry.depth.colorize import colorize_depth
from tt_depth_ros.geometry.depth.depth_cloud import organized_points
from tt_depth_ros.geometry.depth.depth_postprocess import finish_depth
from tt_depth_ros.geometry.preprocess.da3_preprocess import (
    network_size,
    resize_to_network,
    scale_intrinsics,
)
from tt_depth_ros.geometry.preprocess.resize_map import ResizeMap, resize_map
from tt_depth_ros.models.da3.config import SKY_THRESHOLD
from tt_depth_ros.models.kind import DEPTH_KINDS, ModelKind
from tt_depth_ros.pipelines.engine_owner import EngineOwner
from tt_depth_ros.pipelines.io import (
    depth_to_mm16,
    intrinsics_from_args,
    load_rgb,
    write_ply,
    write_png,
)

_log = logging.getLogger(__name__)
OUTPUTS = ('camera', 'network')
INTRINSICS_SOURCES = ('camera_info', 'estimated', 'default')
PLANS_KEPT = 8
"""Frame plans a frame path remembers (camera size x options: one per camera, a few on change)."""


def engine_kind(details: dict) -> ModelKind:
    """The model kind an engine reports in its info.details ('kind'; else from 'is_metric')."""
    kind = details.get('kind')
    if kind:
        return ModelKind(kind)
    return ModelKind.METRIC if details.get('is_metric', True) else ModelKind.MONO


def mean_focal(K: np.ndarray) -> float:
    """(fx + fy) / 2 of a 3x3 camera matrix, the focal DA3's scales are stated in."""
    return (float(K[0, 0]) + float(K[1, 1])) / 2.0


@dataclass(frozen=True)
class FrameIntrinsics:
    """The intrinsics of one camera image and how they were obtained.

    Attributes:
        source: 'camera_info' (the caller's calibration: a CameraInfo in the node, K or fx/fy in
            the API), 'estimated' (the model's own estimate: any-view, NESTED) or 'default'
            (md.DEFAULT_FOCAL_NO_INTRINSICS at network resolution: an unreliable metric scale).
        K: 3x3 intrinsics of the camera image for 'camera_info'; None for the others.
        tx: P[0, 3] on the camera image (the stereo baseline term); 0.0 without a calibration.
    """

    source: str
    K: Optional[np.ndarray] = None
    tx: float = 0.0

    def __post_init__(self) -> None:
        if self.source not in INTRINSICS_SOURCES:
            raise ValueError(f'intrinsics source={self.source!r}; allowed: {INTRINSICS_SOURCES}')
        if (self.K is not None) != (self.source == 'camera_info'):
            raise ValueError(f"intrinsics source={self.source!r} with K={self.K!r}: K is given "
                             "exactly for 'camera_info'")


@dataclass(frozen=True)
class FrameOptions:
    """How one frame is processed (the depth node's runtime parameters may change between frames).

    Attributes:
        process_res: Long-side target of the upstream resize.
        fixed_size: Force the network size (h, w), multiples of 14 (may change the aspect).
        sky_mode: 'inf' (REP 117), 'nan' or 'keep'.
        sky_threshold: sky >= threshold is sky (upstream 0.3).
        max_depth_m: Depth beyond this becomes +Inf; None keeps all.
        output: 'camera' (resample to the input image) or 'network' (the network grid).
        nested_focal_rescale: NESTED only: multiply its metres by f_used / f_estimated (mean of
            fx, fy at network resolution) - upstream aligns its depth to the metric branch scaled
            with the *estimated* focal, so this is the same alignment with the focal in use (the
            depth node). False keeps the model's own metres (DepthPredictor).
    """

    process_res: int = 504
    fixed_size: Optional[tuple[int, int]] = None
    sky_mode: str = 'inf'
    sky_threshold: float = SKY_THRESHOLD
    max_depth_m: Optional[float] = None
    output: str = 'camera'
    nested_focal_rescale: bool = False

    def __post_init__(self) -> None:
        if self.sky_mode not in md.SKY_MODES:
            raise ValueError(f'sky_mode={self.sky_mode!r}; allowed: {md.SKY_MODES}')
        if self.output not in OUTPUTS:
            raise ValueError(f'output={self.output!r}; allowed: {OUTPUTS}')
        if self.max_depth_m is not None and not (np.isfinite(self.max_depth_m)
                                                 and self.max_depth_m > 0):
            raise ValueError(f'max_depth_m={self.max_depth_m} must be positive or None')
        network_size(640, 480, self.process_res, self.fixed_size)  # validates both

    def network_hw(self, width: int, height: int) -> tuple[int, int]:
        """Network (H, W) for a width x height camera image (ValueError for an extreme aspect)."""
        return network_size(width, height, self.process_res, self.fixed_size)


@dataclass(frozen=True)
class DepthFrame:
    """One image through the DA3 frame path; maps are on the output grid unless said otherwise.

    Attributes:
        depth: (H, W) float32: metres for DA3METRIC / NESTED, the model's own unit for any-view
            and mono. NaN = invalid, +Inf = sky (sky_mode 'inf') or beyond max_depth_m.
        K: 3x3 float64 intrinsics of depth's grid.
        tx: P[0, 3] on depth's grid.
        image: (H, W, 3) uint8 RGB on depth's grid (cloud colours, previews).
        conf: (H, W) float32 confidence (any-view / NESTED), else None.
        K_estimated: 3x3 intrinsics the network estimated, on depth's grid (any-view / NESTED),
            else None.
        K_network: 3x3 intrinsics at network resolution (the ones the metric scale used).
        intrinsics_source: `FrameIntrinsics.source` of the intrinsics used.
        focal_used_px: Mean focal of the intrinsics used, on the camera image.
        focal_estimated_px: Mean focal of the model's estimate on the camera image, else None.
        raw_depth: (h, w) the network's depth at network resolution.
        sky_score: (h, w) the network's sky score, None for a model without a sky head.
        timings: Seconds: 'resize', 'infer', 'postprocess' and the engine's 'engine_<stage>'.
    """

    depth: np.ndarray
    K: np.ndarray
    tx: float
    image: np.ndarray
    conf: Optional[np.ndarray]
    K_estimated: Optional[np.ndarray]
    K_network: np.ndarray
    intrinsics_source: str
    focal_used_px: float
    focal_estimated_px: Optional[float]
    raw_depth: np.ndarray
    sky_score: Optional[np.ndarray]
    timings: dict

    def sky_mask(self, threshold: float) -> np.ndarray:
        """(H, W) bool on depth's grid: sky score >= threshold (all False without a sky head)."""
        score = self.sky_score if self.sky_score is not None else np.zeros_like(self.raw_depth)
        sky = md.sky_mask(score, threshold)
        h, w = self.depth.shape
        if sky.shape != (h, w):
            sky = cv2.resize(sky.astype(np.uint8), (w, h),
                             interpolation=cv2.INTER_NEAREST_EXACT).astype(bool)
        return sky


@dataclass
class StartedFrame:
    """A frame handed to the engine (`DA3FramePath.start`); `DA3FramePath.finish` completes it."""

    rgb: np.ndarray
    intrinsics: FrameIntrinsics
    options: FrameOptions
    border: Optional[Rectifier]
    net_hw: tuple[int, int]            # the network grid (H, W) the engine ran at
    img_net: Optional[np.ndarray]      # the host-resized network image (None: resized on device)
    ticket: Any                        # engines.base.Ticket
    timings: dict


class FrameRequest(NamedTuple):
    """One camera image for `DA3FramePath.start_batch`: `start`'s arguments."""

    rgb: np.ndarray
    intrinsics: FrameIntrinsics
    options: FrameOptions
    border: Optional[Rectifier]
    plan: 'FramePlan'


class FramePlan(NamedTuple):
    """How a camera size goes through the network: its grid and the engine's device resize."""

    net_hw: tuple[int, int]           # the network grid (H, W)
    resize: Optional[ResizeMap]       # the resize the engine runs on its device, else None


class _GridIntrinsics(NamedTuple):
    camera: np.ndarray    # 3x3 on the camera image
    network: np.ndarray   # 3x3 at network resolution


class DA3FramePath:
    """The per-frame DA3 pipeline for one engine (module docstring).

    Args:
        engine: A DA3 engine (`engines.factory.build_engine`).
        kind: A DA3 kind (`engine_kind`: the registry's kind, carried by the engine's info).
    """

    def __init__(self, engine: Engine, kind: ModelKind | str) -> None:
        kind = ModelKind(kind)
        if kind not in DEPTH_KINDS:
            raise ValueError(f'DA3 kind={kind.value!r}; allowed: '
                             f'{[k.value for k in DEPTH_KINDS]}')
        self.engine, self.kind = engine, kind
        self._plans: dict[tuple, FramePlan] = {}   # (h, w, options) -> plan; a camera has one

    def intrinsics(self, K: Optional[np.ndarray], tx: float = 0.0) -> FrameIntrinsics:
        """The caller's K when it has one, else the model's estimate, else the default focal."""
        if K is not None:
            return FrameIntrinsics('camera_info', K, tx)
        return FrameIntrinsics('estimated' if self.kind.estimates_intrinsics else 'default')

    def plan(self, camera_hw: tuple[int, int], options: FrameOptions) -> FramePlan:
        """The network grid and the device resize of a camera size (ValueError: extreme aspect).

        The engine takes camera images and resizes them on its device when it
        `resizes_on_device` and the output is on the camera grid (the network grid's output needs
        the network image on the host anyway); else `resize` is None and the host resizes.
        """
        key = (*(int(v) for v in camera_hw), options)
        plan = self._plans.get(key)
        if plan is None:
            h, w = key[:2]
            net_hw = options.network_hw(w, h)
            resize = None
            if options.output == 'camera' and self.engine.resizes_on_device:
                resize = resize_map((h, w), net_hw, options.process_res)
            if len(self._plans) >= PLANS_KEPT:
                self._plans.pop(next(iter(self._plans)))
            plan = self._plans[key] = FramePlan(net_hw, resize)
        return plan

    def __call__(self, rgb: np.ndarray, intrinsics: FrameIntrinsics, options: FrameOptions,
                 border: Optional[Rectifier] = None,
                 plan: Optional[FramePlan] = None) -> DepthFrame:
        """Depth of one camera image (`start` then `finish`).

        Args:
            rgb: (H, W, 3) uint8 RGB at camera resolution (rectified when `border` is given).
            intrinsics: Its intrinsics and their source.
            options: Network size, sky, range and output grid.
            border: The Rectifier that produced `rgb`: its out-of-source pixels become invalid.
            plan: `plan(rgb's size, options)` when the caller already has it (prepared the
                engine with it); None = made here.

        Raises:
            ValueError: An image too extreme for the network grid, or 'estimated' intrinsics
                from a model that gives none.
        """
        return self.finish(self.start(rgb, intrinsics, options, border, plan))

    def start(self, rgb: np.ndarray, intrinsics: FrameIntrinsics, options: FrameOptions,
              border: Optional[Rectifier] = None,
              plan: Optional[FramePlan] = None) -> StartedFrame:
        """Resize (host or device) and hand the frame to the engine (`Engine.submit`).

        An engine that pipelines (ttnn with two command queues) returns at once: a caller may
        start the next frame before finishing this one. Same arguments and errors as __call__.
        """
        t0 = time.perf_counter()
        if plan is None:
            plan = self.plan(rgb.shape[:2], options)
        (net_h, net_w), resize = plan
        if resize is not None:      # the engine resizes on its device
            img_net = None
            t1 = time.perf_counter()
            ticket = self.engine.submit(rgb, resize=resize)
        else:
            img_net = resize_to_network(rgb, (net_h, net_w), options.process_res)
            t1 = time.perf_counter()
            ticket = self.engine.submit(img_net)
        return StartedFrame(rgb, intrinsics, options, border, (net_h, net_w), img_net, ticket,
                            {'resize': t1 - t0, 'infer': time.perf_counter() - t1})

    def start_batch(self, requests: list[FrameRequest]) -> list[StartedFrame]:
        """`start` for the frames of several cameras at once, in their order.

        When the engine `batches`, frames with the same plan (network grid, device resize) and
        options go through one forward (Engine.submit_batch); otherwise each is started in
        turn. Each is `finish`ed like a `start`ed frame; a batch's resize and submit times are
        shared out equally.
        """
        if not self.engine.batches or len(requests) < 2:
            return [self.start(*r) for r in requests]
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.plan, r.options), []).append(i)
        out: list = [None] * len(requests)
        for (plan, options), index in groups.items():
            if len(index) == 1:
                out[index[0]] = self.start(*requests[index[0]])
                continue
            t0 = time.perf_counter()
            net_hw, resize = plan
            rgbs = [requests[i].rgb for i in index]
            nets = [None] * len(index) if resize is not None else \
                [resize_to_network(rgb, net_hw, options.process_res) for rgb in rgbs]
            t1 = time.perf_counter()
            tickets = self.engine.submit_batch(rgbs if resize is not None else nets,
                                               resize=resize)
            n = len(index)
            timings = {'resize': (t1 - t0) / n, 'infer': (time.perf_counter() - t1) / n}
            for i, img_net, ticket in zip(index, nets, tickets):
                r = requests[i]
                out[i] = StartedFrame(r.rgb, r.intrinsics, options, r.border, tuple(net_hw),
                                      img_net, ticket, dict(timings))
        return out

    def finish(self, started: StartedFrame) -> DepthFrame:
        """Collect a started frame's outputs and turn them into the DepthFrame."""
        rgb, intrinsics, options, border = (started.rgb, started.intrinsics, started.options,
                                            started.border)
        img_net = started.img_net
        t_collect = time.perf_counter()
        out = self.engine.collect(started.ticket)
        t2 = time.perf_counter()
        height, width = rgb.shape[:2]
        net_h, net_w = started.net_hw
        to_camera = options.output == 'camera'
        cam_wh, net_wh = (width, height), (net_w, net_h)
        K_est_net = out.get('intrinsics')
        if K_est_net is not None:
            K_est_net = np.asarray(K_est_net, dtype=np.float64)
        K = self._grid_intrinsics(intrinsics, K_est_net, cam_wh, net_wh)
        depth_net = out['depth']
        if self.kind is ModelKind.NESTED and options.nested_focal_rescale:
            depth_net = depth_net * np.float32(mean_focal(K.network) / mean_focal(K_est_net))
        out_hw = (height, width) if to_camera else None
        # only DA3METRIC needs the focal scaling; NESTED's depth is already in metres
        depth = finish_depth(depth_net, out.get('sky'), K.network,
                             metric=self.kind is ModelKind.METRIC,
                             sky_threshold=options.sky_threshold, sky_mode=options.sky_mode,
                             max_depth_m=options.max_depth_m, out_hw=out_hw, border=border)
        conf = out.get('conf')
        if to_camera:
            K_out, image, tx = K.camera, rgb, intrinsics.tx
            if conf is not None:
                conf = md.resize_depth(conf, out_hw)
            K_est = None if K_est_net is None else scale_intrinsics(K_est_net, net_wh, cam_wh)
        else:
            K_out, image, K_est = K.network, img_net, K_est_net
            tx = intrinsics.tx * K.network[0, 0] / K.camera[0, 0]
        f_est = (None if K_est_net is None else
                 mean_focal(scale_intrinsics(K_est_net, net_wh, cam_wh)))
        t3 = time.perf_counter()
        timings = {'resize': started.timings['resize'],
                   'infer': started.timings['infer'] + (t2 - t_collect), 'postprocess': t3 - t2}
        timings.update({f'engine_{k}': v for k, v in self.engine.last_timings.items()})
        return DepthFrame(depth=depth, K=np.asarray(K_out, dtype=np.float64), tx=tx, image=image,
                          conf=conf, K_estimated=K_est, K_network=K.network,
                          intrinsics_source=intrinsics.source,
                          focal_used_px=mean_focal(K.camera), focal_estimated_px=f_est,
                          raw_depth=out['depth'], sky_score=out.get('sky'), timings=timings)

    def _grid_intrinsics(self, intrinsics: FrameIntrinsics, K_est_net: Optional[np.ndarray],
                         cam_wh: tuple[int, int], net_wh: tuple[int, int]) -> _GridIntrinsics:
        """The intrinsics used, on the camera image and at network resolution."""
        if intrinsics.source == 'camera_info':
            K_cam = np.asarray(intrinsics.K, dtype=np.float64)
            return _GridIntrinsics(K_cam, scale_intrinsics(K_cam, cam_wh, net_wh))
        if intrinsics.source == 'estimated':
            if K_est_net is None:
                raise ValueError(f"intrinsics source 'estimated': the {self.kind.value!r} model "
                                 'gives no intrinsics estimate; give K (any-view and NESTED '
                                 'estimate)')
            K_net = K_est_net
        else:
            K_net = md.default_intrinsics(*net_wh)
        return _GridIntrinsics(scale_intrinsics(K_net, net_wh, cam_wh), K_net)


@dataclass
class DepthResult:
    """One prediction.

    Attributes:
        depth: (H, W) float32; metres if `is_metric` else relative units. NaN = invalid,
            +Inf = sky (sky_mode 'inf') or beyond max_depth_m.
        sky: (H, W) bool, sky >= threshold.
        K: 3x3 float64 intrinsics of `depth`'s pixel grid.
        is_metric: True for metric models (metres), False for relative (mono) depth.
        intrinsics_assumed: No intrinsics were given; the metric scale used
            DEFAULT_FOCAL_NO_INTRINSICS and is unreliable.
        image: (H, W, 3) uint8 RGB on the same grid as depth (for clouds / previews).
        raw_depth: (h, w) raw network depth at network resolution.
        sky_score: (h, w) network sky score (relu) at network resolution.
        K_network: 3x3 intrinsics at network resolution (the ones used for the scale).
        timings: Seconds per stage ('preprocess', engine stages, 'postprocess', 'total').
        backend: Engine backend that produced it.
        conf: (H, W) float32 confidence on depth's grid (any-view / NESTED), else None.
        K_estimated: 3x3 intrinsics the network estimated, on depth's grid (any-view / NESTED),
            else None.
    """

    depth: np.ndarray
    sky: np.ndarray
    K: np.ndarray
    is_metric: bool
    intrinsics_assumed: bool
    image: np.ndarray
    raw_depth: np.ndarray
    sky_score: np.ndarray
    K_network: np.ndarray
    timings: dict = field(default_factory=dict)
    backend: str = ''
    conf: Optional[np.ndarray] = None
    K_estimated: Optional[np.ndarray] = None

    @property
    def depth_units(self) -> str:
        """'m' (metric) or 'relative' (unknown scale)."""
        return 'm' if self.is_metric else 'relative'

    def _need_metric(self, what: str) -> None:
        if not self.is_metric:
            raise ValueError(f'{what} needs metric depth; this result is relative '
                             '(da3mono / any-view model)')

    def save_png16_mm(self, path: str | Path) -> None:
        """16-bit PNG in millimetres; 0 = invalid, sky or beyond 65.535 m."""
        self._need_metric('a millimetre PNG')
        write_png(path, depth_to_mm16(self.depth))

    def save_npy(self, path: str | Path) -> None:
        """The float32 depth map as .npy (NaN invalid, +Inf sky)."""
        np.save(path, self.depth)

    def save_npz(self, path: str | Path) -> None:
        """The result's arrays and flags as .npz (conf, K_estimated when the model gives them)."""
        extra = {k: v for k, v in (('conf', self.conf), ('K_estimated', self.K_estimated))
                 if v is not None}
        np.savez_compressed(path, depth=self.depth, sky=self.sky, K=self.K,
                            is_metric=self.is_metric, depth_units=self.depth_units,
                            intrinsics_assumed=self.intrinsics_assumed,
                            raw_depth=self.raw_depth, sky_score=self.sky_score,
                            K_network=self.K_network, **extra)

    def save_colorized(self, path: str | Path, min_m: Optional[float] = None,
                       max_m: Optional[float] = None) -> None:
        """Turbo preview (near red, far blue, invalid/sky black) as an 8-bit RGB PNG."""
        write_png(path, colorize_depth(self.depth, min_m, max_m))

    def points(self, decimation: int = 1) -> np.ndarray:
        """Organized (h, w, 3) float32 camera-frame points (REP 103 optical), NaN invalid."""
        self._need_metric('a metric point cloud')
        return organized_points(self.depth, self.K, decimation=decimation)

    def save_ply(self, path: str | Path, decimation: int = 1) -> int:
        """Binary PLY of the finite points with their colours; returns the point count."""
        pts = self.points(decimation)
        d = max(int(decimation), 1)
        rgb = self.image[::d, ::d][:pts.shape[0], :pts.shape[1]]
        return write_ply(path, pts, rgb)


class DepthPredictor(EngineOwner):
    """Image in, metric depth out, on any engine backend: the API face of `DA3FramePath`.

    Args:
        engine: A DA3 engine (`engines.factory.build_engine`).
        is_metric: Whether the model's depth is metric (False for da3mono-large).
        kind: The model's kind (models/kind.py; a DA3 kind); None = from `is_metric`
            (METRIC / MONO).
        process_res: Long-side target of the upstream resize (default 504).
        fixed_size: Force the network size (h, w), multiples of 14 (may change the aspect).
        sky_mode: 'inf' (default, REP 117), 'nan' or 'keep'.
        sky_threshold: sky >= threshold is sky (default 0.3, upstream's).
        max_depth_m: Depth beyond this becomes +Inf; None keeps all.
        output: 'camera' (resize to the input image) or 'network' (network grid).
        logger: Anything with `.warning(str)`.
    """

    def __init__(self, engine: Engine, *, is_metric: bool = True,
                 kind: Optional[ModelKind | str] = None,
                 process_res: int = 504,
                 fixed_size: Optional[tuple[int, int]] = None, sky_mode: str = 'inf',
                 sky_threshold: float = SKY_THRESHOLD, max_depth_m: Optional[float] = None,
                 output: str = 'camera', logger: Optional[Any] = None) -> None:
        self.engine = engine
        self._path = DA3FramePath(engine, kind if kind is not None else
                                  ModelKind.METRIC if is_metric else ModelKind.MONO)
        self.kind = self._path.kind
        self.is_metric = self._path.kind.is_metric
        self.process_res = int(process_res)
        self.fixed_size = tuple(fixed_size) if fixed_size is not None else None
        self.sky_mode = sky_mode
        self.sky_threshold = float(sky_threshold)
        self.max_depth_m = max_depth_m
        self.output = output
        self._log = logger if logger is not None else _log
        self._options()   # validates the options now, not at the first image

    @classmethod
    def from_pretrained(cls, model: str = 'da3metric-large', weights: Optional[str] = None,
                        revision: Optional[str] = None, backend: str = 'auto',
                        device_id: int = 0, dtype: Any = 'auto',
                        state_dict: Optional[Mapping[str, Any]] = None,
                        logger: Optional[Any] = None, accept_license: Optional[bool] = None,
                        onnx_provider: Optional[str] = None,
                        **options: Any) -> 'DepthPredictor':
        """Build engine and predictor.

        Args:
            model: 'da3metric-large' (metric), 'da3mono-large' (relative), an any-view model
                ('da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1': relative + conf +
                intrinsics), 'da3nested-giant-large-1.1' (metric + conf + intrinsics), or the
                test configs 'da3metric-tiny', 'da3-anyview-tiny'.
            weights: Explicit weights file; else Hugging Face cache, else pinned download.
            revision: Hub revision.
            backend: 'auto', 'ttnn', 'torch-cuda', 'torch-cpu' or 'onnxruntime' (`weights`: a
                file from `tt-depth export`).
            device_id: Accelerator index.
            dtype: Precision preset, 'auto' by default as everywhere (engines/factory.py
                `build_engine`); 'float32' is exact.
            state_dict: Checkpoint tensors (upstream key names) instead of a file.
            logger: Anything with `.info`/`.warning`.
            accept_license: Opt-in for CC-BY-NC-4.0 models (else TT_DEPTH_ACCEPT_NC_LICENSE).
            onnx_provider: backend onnxruntime: the execution provider (default CPU).
            **options: DepthPredictor options (process_res, fixed_size, sky_mode, sky_threshold,
                max_depth_m, output).
        """
        from tt_depth_ros.engines import registry
        from tt_depth_ros.engines.factory import build_engine

        models = registry.names(family='da3')
        if model not in models:
            raise ValueError(f'DepthPredictor model={model!r}; known: {sorted(models)}')
        engine = build_engine(model, weights=weights, backend=backend, device_id=device_id,
                              dtype=dtype, revision=revision, state_dict=state_dict,
                              logger=logger, accept_license=accept_license,
                              onnx_provider=onnx_provider)
        return cls(engine, kind=registry.model(model).kind, logger=logger, **options)

    def __call__(self, image: Any, K: Optional[np.ndarray] = None, *,
                 fx: Optional[float] = None, fy: Optional[float] = None,
                 cx: Optional[float] = None, cy: Optional[float] = None) -> DepthResult:
        """Predict depth for one image.

        Args:
            image: Path, PIL image or uint8 (H, W, 3) RGB array.
            K: 3x3 intrinsics of the image (pixels); or give fx, fy (+ cx, cy).
            fx: Focal length x in pixels of the image.
            fy: Focal length y in pixels.
            cx: Principal point x (default image centre).
            cy: Principal point y (default image centre).
        """
        t0 = time.perf_counter()
        rgb = load_rgb(image)
        h, w = rgb.shape[:2]
        intrinsics = self._path.intrinsics(intrinsics_from_args(K, fx, fy, cx, cy, width=w,
                                                                height=h))
        if intrinsics.source == 'default' and self.kind is ModelKind.METRIC:
            self._log.warning('no intrinsics given: assuming a '
                              f'{md.DEFAULT_FOCAL_NO_INTRINSICS} px focal at network '
                              'resolution; the metric scale is unreliable')
        t1 = time.perf_counter()
        frame = self._path(rgb, intrinsics, self._options())
        sky = frame.sky_mask(self.sky_threshold)
        sky_score = frame.sky_score if frame.sky_score is not None else \
            np.zeros_like(frame.raw_depth)
        t2 = time.perf_counter()
        stages = frame.timings
        timings = {'preprocess': t1 - t0 + stages['resize']}
        timings.update({k: v for k, v in stages.items() if k.startswith('engine_')})
        timings.update({'engine': stages['infer'],
                        'postprocess': t2 - t1 - stages['resize'] - stages['infer'],
                        'total': t2 - t0})
        return DepthResult(depth=frame.depth, sky=sky, K=frame.K, is_metric=self.is_metric,
                           intrinsics_assumed=intrinsics.source == 'default', image=frame.image,
                           raw_depth=frame.raw_depth, sky_score=sky_score,
                           K_network=frame.K_network, timings=timings,
                           backend=self.engine.info.backend, conf=frame.conf,
                           K_estimated=frame.K_estimated)

    def _options(self) -> FrameOptions:
        """The frame options of the current attributes (callers may change them between images)."""
        return FrameOptions(process_res=self.process_res, fixed_size=self.fixed_size,
                            sky_mode=self.sky_mode, sky_threshold=self.sky_threshold,
                            max_depth_m=self.max_depth_m, output=self.output)
