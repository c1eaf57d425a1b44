"""DA3 on onnxruntime: an exported `.onnx` file (and its sidecar) behind the Engine interface.

The file fixes the model and the input size (engines/export/sidecar.py): `weights_path` is the
`.onnx` file, the sidecar beside it says which model, kind and H x W it holds. The engine does what
the torch engine does around the network - the same (x/255 - mean) / std normalisation in fp32 -
and returns the torch engine's DA3 outputs (engines/torch/da3.py) without the batch axis:
'depth', 'sky' (metric / mono); 'depth', 'conf', 'intrinsics', 'extrinsics' (any-view, one view);
NESTED adds 'sky' and 'scale_factor': its file holds the two branches, and the metric alignment
(data-dependent masks and quantiles) runs here on the host with the torch engine's own code
(`nested_outputs`). So the frame path (pipelines/depth.py) applies metric scale, sky and resizing
exactly as for torch.

Decisions:
* Size: an image whose size is not the file's fixed input size is an error naming both sizes and
  the fix (export at the size the frame path picks for the camera, or set the node's
  network_height / network_width to the file's size). Nothing is resized behind the caller's back:
  the frame path already resized to its network grid, and a second resize would change the aspect.
* Provider: exactly the requested execution provider (default CPUExecutionProvider). One that is
  not available is a BackendUnavailableError naming it and the available ones; for a non-CPU
  provider the session is created with CPU fallback disabled, so a node the provider cannot run
  is a build error, not a silent CPU run.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.base import Engine, EngineInfo, check_views
from tt_depth_ros.engines.export.sidecar import read_sidecar
from tt_depth_ros.engines.select import BackendUnavailableError
from tt_depth_ros.geometry.preprocess.da3_preprocess import IMAGENET_MEAN, IMAGENET_STD, normalize
from tt_depth_ros.models.kind import ModelKind

DEFAULT_PROVIDER = 'CPUExecutionProvider'
_log = logging.getLogger(__name__)


def _import_ort():
    try:
        import onnxruntime
    except ImportError as e:
        raise BackendUnavailableError('backend onnxruntime needs the Python package '
                                      f'`onnxruntime` ({e}); pip install onnxruntime') from e
    return onnxruntime


class OnnxRuntimeEngine(Engine):
    """One exported DA3 file on one onnxruntime execution provider (module docstring).

    Args:
        path: The `.onnx` file; its sidecar `<stem>.json` must lie beside it.
        provider: onnxruntime execution provider name, e.g. 'CPUExecutionProvider'.
        model: The model name the caller expects; must equal the sidecar's (None: take it).
        logger: Anything with `.info(str)`.
        threads: intra-op threads (0 = onnxruntime's default).
    """

    num_views = 1

    def __init__(self, path: str | Path, *, provider: str = DEFAULT_PROVIDER,
                 model: Optional[str] = None, logger: Optional[Any] = None,
                 threads: int = 0) -> None:
        ort = _import_ort()
        self._path = Path(path)
        if self._path.suffix != '.onnx' or not self._path.is_file():
            raise ValueError(f'backend onnxruntime: weights_path {str(path)!r} must be an existing '
                             '.onnx file exported by `tt-depth export`')
        meta = read_sidecar(self._path)
        if meta['format'] != 'onnx':
            raise ValueError(f'{self._path}: sidecar format {meta["format"]!r}, not onnx')
        if model is not None and model != meta['model']:
            raise ValueError(f'{self._path} holds {meta["model"]!r} (its sidecar), but model '
                             f'{model!r} was requested; set model: {meta["model"]}')
        spec = registry.model(meta['model'])
        available = list(ort.get_available_providers())
        if provider not in available:
            raise BackendUnavailableError(
                f'onnxruntime execution provider {provider!r} is not available here; available: '
                f'{", ".join(available)} (onnxruntime {ort.__version__}). Install the onnxruntime '
                'build that has it, or choose one of those.')
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = int(threads)
        # idle pool threads sleep instead of spinning after each run: spinning kept the cores
        # busy through the node's own per-frame work and whatever else runs on the robot (a
        # torch forward after one slowed ~4x in bench_edge_export); waking costs microseconds
        opts.add_session_config_entry('session.intra_op.allow_spinning', '0')
        if provider != 'CPUExecutionProvider':
            opts.add_session_config_entry('session.disable_cpu_ep_fallback', '1')
        try:
            self._session = ort.InferenceSession(str(self._path), sess_options=opts,
                                                 providers=[provider])
        except Exception as e:  # onnxruntime raises its own exception types
            raise ValueError(f'{self._path}: onnxruntime cannot load it on {provider}: '
                             f'{type(e).__name__}: {e}') from e
        self._meta = meta
        self._size = tuple(int(v) for v in meta['size_hw'])
        self._input = meta['input']['name']
        self._names = [o['name'] for o in meta['outputs']]
        self._nested = spec.kind is ModelKind.NESTED
        pre = meta['preprocessing']
        if not (np.allclose(pre['mean'], IMAGENET_MEAN, rtol=0, atol=1e-7)
                and np.allclose(pre['std'], IMAGENET_STD, rtol=0, atol=1e-7)):
            raise ValueError(f'{self._path}: sidecar normalisation mean {pre["mean"]} / std '
                             f'{pre["std"]} is not the DA3 ImageNet one this engine applies; '
                             're-export the file with `tt-depth export`')
        self._timings: dict[str, float] = {}
        self._closed = False
        self._log = logger if logger is not None else _log
        self._info = EngineInfo(
            backend='onnxruntime', device=provider, dtype='float16' if meta['dtype'] == 'fp16'
            else 'float32', model=meta['model'],
            details={**spec.details(), 'onnx_file': str(self._path), 'provider': provider,
                     'input_size': list(self._size), 'onnxruntime': ort.__version__})
        self._log.info(f'onnxruntime: {self._path.name} ({meta["model"]}, '
                       f'{self._size[0]}x{self._size[1]}, {meta["dtype"]}) on {provider}')

    @property
    def info(self) -> EngineInfo:
        return self._info

    @property
    def input_size(self) -> tuple[int, int]:
        """The file's fixed (H, W)."""
        return self._size

    def _check_size(self, shape: tuple[int, int]) -> None:
        h, w = (int(v) for v in shape)
        if (h, w) != self._size:
            fh, fw = self._size
            raise ValueError(
                f'image size {h}x{w} differs from the fixed input size {fh}x{fw} of '
                f'{self._path.name}: export the model at {h}x{w} (`tt-depth export --size '
                f'{h}x{w}`) or make the frame path resize to {fh}x{fw} (depth node: '
                f'network_height: {fh}, network_width: {fw})')

    def prepare(self, shape: tuple[int, int]) -> None:
        """Check (H, W) against the file's size (the session is built already)."""
        if self._closed:
            raise RuntimeError('engine is closed')
        self._check_size(shape)

    def infer(self, *images: np.ndarray) -> dict[str, np.ndarray]:
        """One uint8 (H, W, 3) RGB image at the file's size -> the torch engine's float32 maps."""
        if self._closed:
            raise RuntimeError('engine is closed')
        shape = check_views(images, self.num_views)
        self._check_size(shape)
        t0 = time.perf_counter()
        x = normalize(images[0])[None]      # the torch engine's (x/255 - mean) / std
        t1 = time.perf_counter()
        outs = self._session.run(self._names, {self._input: x})
        t2 = time.perf_counter()
        result = {n: np.asarray(o[0], dtype=np.float32) for n, o in zip(self._names, outs)}
        t3 = time.perf_counter()
        self._timings = {'upload': t1 - t0, 'forward': t2 - t1, 'readback': t3 - t2}
        if self._nested:
            result = nested_outputs(result)
            self._timings['align'] = time.perf_counter() - t3
        self._timings['total'] = time.perf_counter() - t0
        return result

    def close(self) -> None:
        """Drop the session; idempotent."""
        self._closed = True
        self._session = None


def nested_outputs(graph: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A NESTED file's branch outputs (one view) -> the torch engine's NESTED outputs.

    The alignment is the torch engine's own code (models/da3/nested_align.align_to_metric) on
    the host: 'depth' metres (sky = the fill), 'conf', 'sky', 'intrinsics', 'extrinsics'
    (metres), 'scale_factor' (). ValueError when every pixel is sky, as there.
    """
    import torch

    from tt_depth_ros.models.da3.nested_align import align_to_metric

    t = {k: torch.from_numpy(v)[None] for k, v in graph.items()}
    out = align_to_metric(t['depth_anyview'], t['conf_anyview'], t['extrinsics_anyview'],
                          t['intrinsics'], t['metric_depth_raw'], t['sky'])
    return {'depth': out['depth'][0].numpy(), 'conf': out['depth_conf'][0].numpy(),
            'sky': graph['sky'], 'intrinsics': graph['intrinsics'],
            'extrinsics': out['extrinsics'][0].numpy(),
            'scale_factor': out['scale_factor'].numpy().astype(np.float32)}


def build_onnxruntime_engine(model: Optional[str], weights: Optional[str], *,
                             provider: Optional[str] = None, logger: Optional[Any] = None,
                             num_views: Optional[int] = None) -> OnnxRuntimeEngine:
    """The factory's onnxruntime builder (engines/factory.py); arguments as build_engine."""
    if not weights:
        raise ValueError('backend onnxruntime runs an exported file: set weights_path to the '
                         '.onnx file written by `tt-depth export`')
    if num_views not in (None, 1):
        raise ValueError(f'backend onnxruntime runs one view per call; num_views={num_views} '
                         'needs a torch backend')
    if model is not None and registry.model(model).family != 'da3':
        raise ValueError(f'backend onnxruntime runs exported DA3 files; {model!r} is not DA3')
    return OnnxRuntimeEngine(weights, provider=provider or DEFAULT_PROVIDER, model=model,
                             logger=logger)
