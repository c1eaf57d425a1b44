"""Monocular metric depth for Python users: `DepthPredictor` and `DepthResult`.

The same pipeline as the depth node (docs/design.md §2), without ROS: camera image -> upstream DA3
resize to the network grid -> engine -> metres = raw * ((fx'+fy')/2)/300 with fx', fy' at network
resolution -> sky (sky >= threshold) as +Inf / NaN / kept -> optional max range (+Inf beyond) ->
optional resize back to the camera resolution (never blending valid with NaN/Inf pixels).

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
its own estimated intrinsics; given intrinsics only set `K`), a confidence and sky.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import cv2
import numpy as np

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.geometry import metric_depth as md
from tt_depth_ros.geometry.colorize import colorize_depth
from tt_depth_ros.geometry.da3_preprocess import network_size, resize_to_network, scale_intrinsics
from tt_depth_ros.geometry.depth_cloud import organized_points
from tt_depth_ros.geometry.depth_postprocess import finish_depth
from tt_depth_ros.pipelines.io import (
    depth_to_mm16,
    intrinsics_from_args,
    load_rgb,
    write_ply,
    write_png,
)

_log = logging.getLogger(__name__)
OUTPUTS = ('camera', 'network')


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


class DepthPredictor:
    """Image in, metric depth out, on any engine backend.

    Args:
        engine: A DA3 engine (`engines.factory.build_engine`).
        is_metric: Whether the model's depth is metric (False for da3mono-large).
        kind: 'metric', 'mono', 'anyview' or 'nested' (engines.torch.da3.model_kind); None = from
            `is_metric` ('metric' / 'mono').
        process_res: Long-side target of the upstream resize (default 504).
        fixed_size: Force the network size (h, w), multiples of 14 (may change the aspect).
        sky_mode: 'inf' (default, REP 117), 'nan' or 'keep'.
        sky_threshold: sky >= threshold is sky (default 0.3, upstream's).
        max_depth_m: Depth beyond this becomes +Inf; None keeps all.
        output: 'camera' (resize to the input image) or 'network' (network grid).
        logger: Anything with `.warning(str)`.
    """

    def __init__(self, engine: Engine, *, is_metric: bool = True, kind: Optional[str] = None,
                 process_res: int = 504,
                 fixed_size: Optional[tuple[int, int]] = None, sky_mode: str = 'inf',
                 sky_threshold: float = md.SKY_THRESHOLD, max_depth_m: Optional[float] = None,
                 output: str = 'camera', logger: Optional[Any] = None) -> None:
        if sky_mode not in md.SKY_MODES:
            raise ValueError(f'sky_mode={sky_mode!r}; allowed: {md.SKY_MODES}')
        if output not in OUTPUTS:
            raise ValueError(f'output={output!r}; allowed: {OUTPUTS}')
        if max_depth_m is not None and not (np.isfinite(max_depth_m) and max_depth_m > 0):
            raise ValueError(f'max_depth_m={max_depth_m} must be positive or None')
        network_size(640, 480, process_res, fixed_size)  # validates both
        self.engine = engine
        self.kind = kind if kind is not None else ('metric' if is_metric else 'mono')
        self.is_metric = self.kind in ('metric', 'nested')
        self.process_res = int(process_res)
        self.fixed_size = tuple(fixed_size) if fixed_size is not None else None
        self.sky_mode = sky_mode
        self.sky_threshold = float(sky_threshold)
        self.max_depth_m = max_depth_m
        self.output = output
        self._log = logger if logger is not None else _log

    @classmethod
    def from_pretrained(cls, model: str = 'da3metric-large', weights: Optional[str] = None,
                        revision: Optional[str] = None, backend: str = 'auto',
                        device_id: int = 0, dtype: Any = None,
                        state_dict: Optional[Mapping[str, Any]] = None,
                        logger: Optional[Any] = None, accept_license: Optional[bool] = None,
                        **options: Any) -> 'DepthPredictor':
        """Build engine and predictor.

        Args:
            model: 'da3metric-large' (metric), 'da3mono-large' (relative), an any-view model
                ('da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1': relative + conf +
                intrinsics), 'da3nested-giant-large-1.1' (metric + conf + intrinsics), or the
                test configs 'da3metric-tiny', 'da3-anyview-tiny'.
            weights: Explicit weights file; else Hugging Face cache, else pinned download.
            revision: Hub revision.
            backend: 'auto', 'ttnn', 'torch-cuda' or 'torch-cpu'.
            device_id: Accelerator index.
            dtype: None/'float32' (default), 'bfloat16', 'float16' (CUDA).
            state_dict: Checkpoint tensors (upstream key names) instead of a file.
            logger: Anything with `.info`/`.warning`.
            accept_license: Opt-in for CC-BY-NC-4.0 models (else TT_DEPTH_ACCEPT_NC_LICENSE).
            **options: DepthPredictor options (process_res, fixed_size, sky_mode, sky_threshold,
                max_depth_m, output).
        """
        from tt_depth_ros.engines.factory import build_engine
        from tt_depth_ros.engines.torch.da3 import MODELS, model_kind

        if model not in MODELS:
            raise ValueError(f'DepthPredictor model={model!r}; known: {sorted(MODELS)}')
        engine = build_engine(model, weights=weights, backend=backend, device_id=device_id,
                              dtype=dtype, revision=revision, state_dict=state_dict,
                              logger=logger, accept_license=accept_license)
        return cls(engine, kind=model_kind(model), logger=logger, **options)

    def __enter__(self) -> 'DepthPredictor':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the engine."""
        self.engine.close()

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
        K_cam = intrinsics_from_args(K, fx, fy, cx, cy, width=w, height=h)
        net_h, net_w = network_size(w, h, self.process_res, self.fixed_size)
        net_img = resize_to_network(rgb, (net_h, net_w), self.process_res)
        t1 = time.perf_counter()
        raw = self.engine.infer(net_img)
        t2 = time.perf_counter()
        K_est_net = raw.get('intrinsics')
        estimates = K_est_net is not None
        assumed = K_cam is None and not estimates
        if K_cam is None:
            K_net = (np.asarray(K_est_net, dtype=np.float64) if estimates
                     else md.default_intrinsics(net_w, net_h))
            K_cam = scale_intrinsics(K_net, (net_w, net_h), (w, h))
            if self.kind == 'metric':
                self._log.warning('no intrinsics given: assuming a '
                                  f'{md.DEFAULT_FOCAL_NO_INTRINSICS} px focal at network '
                                  'resolution; the metric scale is unreliable')
        else:
            K_net = scale_intrinsics(K_cam, (w, h), (net_w, net_h))
        to_camera = self.output == 'camera'
        out_hw = (h, w) if to_camera else None
        sky_score = raw.get('sky')
        # only DA3METRIC needs the focal scaling; NESTED's depth is already in metres
        depth = finish_depth(raw['depth'], sky_score, K_net, metric=self.kind == 'metric',
                             sky_threshold=self.sky_threshold, sky_mode=self.sky_mode,
                             max_depth_m=self.max_depth_m, out_hw=out_hw)
        if sky_score is None:
            sky_score = np.zeros_like(raw['depth'])
        sky = md.sky_mask(sky_score, self.sky_threshold)
        conf = raw.get('conf')
        if to_camera:
            sky = cv2.resize(sky.astype(np.uint8), (w, h),
                             interpolation=cv2.INTER_NEAREST_EXACT).astype(bool)
            K_out, img_out = K_cam, rgb
            if conf is not None:
                conf = md.resize_depth(conf, (h, w))
        else:
            K_out, img_out = K_net, net_img
        K_est = None
        if estimates:
            K_est = np.asarray(K_est_net, dtype=np.float64)
            if to_camera:
                K_est = scale_intrinsics(K_est, (net_w, net_h), (w, h))
        t3 = time.perf_counter()
        timings = {'preprocess': t1 - t0}
        timings.update({f'engine_{k}': v for k, v in self.engine.last_timings.items()})
        timings.update({'engine': t2 - t1, 'postprocess': t3 - t2, 'total': t3 - t0})
        return DepthResult(depth=depth, sky=sky, K=np.asarray(K_out, dtype=np.float64),
                           is_metric=self.is_metric, intrinsics_assumed=assumed, image=img_out,
                           raw_depth=raw['depth'], sky_score=sky_score, K_network=K_net,
                           timings=timings, backend=self.engine.info.backend, conf=conf,
                           K_estimated=K_est)
