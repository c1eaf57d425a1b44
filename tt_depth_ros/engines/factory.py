"""`build_engine`: one entry point from a model name and a backend request to a ready Engine.

Which models exist, their family and their backends come from engines/registry.py. Model
families are builder modules with `build_torch_engine(model, *, device, dtype, weights,
revision, config, state_dict, cuda_graphs, logger) -> Engine`: `engines/torch/da3.py` (DA3) and
`engines/torch/dust3r.py` (DUSt3R, its own owner). The ttnn backend is the package `engines/ttnn/`
with
`build_ttnn_engine(model, *, device_id, dtype, weights, revision, config, state_dict, logger,
command_queues)`;
`select.py` reports it unavailable until that package exists and a device is present.
`backend='onnxruntime'` runs an exported DA3 file (`weights` = the `.onnx`, its sidecar beside it)
with `engines/onnxruntime/engine.py` on the execution provider `onnx_provider`.
Builder modules are imported lazily, so importing this module pulls in no model code.
A `CancelToken` (engines/cancel.py) is checked between the steps of a build (backend selection,
the builder, preparation by the caller): a shutdown during configure stops there, and an engine
finished after cancellation is closed at once. After a torch build the transient memory of
loading (checkpoint tensors) is returned to the OS (`release_free_memory`).
"""
from __future__ import annotations

import importlib
from typing import Any, Mapping, Optional

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.base import Engine
from tt_depth_ros.engines.cancel import CancelToken
from tt_depth_ros.engines.select import BackendUnavailableError, select_backend

TORCH_BUILDERS = {'da3': 'tt_depth_ros.engines.torch.da3',
                  'dust3r': 'tt_depth_ros.engines.torch.dust3r'}
"""Model family (engines/registry.py) -> torch builder module."""


def build_engine(model: str, *, weights: Optional[str] = None, backend: str = 'auto',
                 device_id: int = 0, dtype: Any = 'auto', revision: Optional[str] = None,
                 config: Any = None, state_dict: Optional[Mapping[str, Any]] = None,
                 logger: Optional[Any] = None, cuda_graphs: Optional[bool] = None,
                 accept_license: Optional[bool] = None,
                 num_views: Optional[int] = None,
                 cancel: Optional[CancelToken] = None,
                 onnx_provider: Optional[str] = None,
                 ttnn_command_queues: int = 1,
                 ttnn_dtype: Optional[str] = None,
                 ttnn_max_traced_shapes: Optional[int] = None) -> Engine:
    """Build an engine for `model` on the selected backend.

    Args:
        model: A name of engines/registry.MODELS ('da3metric-large', 'da3mono-large', the DA3
            any-view family 'da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1' and
            'da3nested-giant-large-1.1' (torch only), 'dust3r-vitl-512-dpt', and the test configs
            'da3metric-tiny', 'da3-anyview-tiny', 'dust3r-tiny').
        weights: Explicit weights file (else HF cache / pinned download).
        backend: 'auto', 'ttnn', 'torch-cuda', 'torch-cpu' or 'onnxruntime' (engines/select.py;
            onnxruntime: `weights` is an exported .onnx file).
        device_id: Accelerator index.
        dtype: The precision preset; 'auto' (the default of every entry point: API, CLI,
            nodes, batch) = cpu-fast on CPUs with native bf16, else float32, on torch; the
            model's default on ttnn. torch backends: a name of engines/torch/presets.py
            ('float32' exact, 'bfloat16', 'float16' (CUDA), 'bf16-matmul', 'cpu-fast', 'int8'
            (CPU)); ttnn: its own names (engines/ttnn/precision.py), unless `ttnn_dtype` is
            given; onnxruntime: ignored.
        revision: Hub revision for weight resolution.
        config: Model config override (tests).
        state_dict: Checkpoint tensors keyed by upstream names; skips weight resolution.
        logger: Anything with `.info(str)`.
        cuda_graphs: torch-cuda only: capture CUDA graphs per shape (default True on CUDA).
        accept_license: DA3 family: opt-in for CC-BY-NC-4.0 checkpoints (None: the
            TT_DEPTH_ACCEPT_NC_LICENSE environment variable; engines/licence.py).
        num_views: DA3 any-view / NESTED: views per forward, or registry.ANY_VIEWS for any
            number per call (engines/torch/da3.py; None = 1).
        cancel: Checked between build steps; a cancelled build raises BuildCancelled.
        onnx_provider: onnxruntime execution provider (None: CPUExecutionProvider); a provider
            that is not available is a BackendUnavailableError listing the available ones.
        ttnn_command_queues: ttnn only: 2 opens the device with two command queues, so frames
            pipeline through submit / collect (Engine.pipelines); the other backends have one
            queue and ignore it.
        ttnn_dtype: ttnn only: its precision preset, 'auto' = the model's default; given, it
            replaces `dtype` there, so one call carries a torch and a ttnn preset (the nodes'
            torch_dtype and ttnn_precision) and the backend chosen takes its own.
        ttnn_max_traced_shapes: ttnn only: input shapes kept traced at once (None: the
            engine's default); a node serving several cameras sizes it to their shapes.

    Returns:
        An Engine (not yet prepared for a shape).

    Raises:
        ValueError: Unknown model / bad argument.
        BackendUnavailableError: The requested backend cannot run.
        tt_depth_ros.engines.weights.WeightsUnavailableError: No weights.
        tt_depth_ros.engines.cancel.BuildCancelled: `cancel` was cancelled.
    """
    cancel = cancel if cancel is not None else CancelToken()
    spec = registry.model(model)
    chosen = select_backend(backend, device_id=device_id, logger=logger, model=spec)
    cancel.check('after backend selection')
    if chosen == 'onnxruntime':
        from tt_depth_ros.engines.onnxruntime.engine import build_onnxruntime_engine
        engine = build_onnxruntime_engine(model, weights, provider=onnx_provider, logger=logger,
                                          num_views=num_views)
        if cancel.cancelled:
            engine.close()
            cancel.check('after the engine build (engine closed)')
        return engine
    if chosen == 'ttnn' and ttnn_dtype is not None:
        dtype = ttnn_dtype
    engine = _build(spec, chosen, weights=weights, device_id=device_id, dtype=dtype,
                    revision=revision, config=config, state_dict=state_dict, logger=logger,
                    cuda_graphs=cuda_graphs, accept_license=accept_license, num_views=num_views,
                    ttnn_command_queues=ttnn_command_queues,
                    ttnn_max_traced_shapes=ttnn_max_traced_shapes)
    if cancel.cancelled:
        engine.close()
        cancel.check('after the engine build (engine closed)')
    if chosen != 'ttnn':
        from tt_depth_ros.engines.torch.engine import release_free_memory
        release_free_memory()
    return engine


def _build(spec: registry.ModelSpec, chosen: str, *, weights, device_id, dtype, revision, config,
           state_dict, logger, cuda_graphs, accept_license, num_views,
           ttnn_command_queues: int = 1,
           ttnn_max_traced_shapes: Optional[int] = None) -> Engine:
    """The family builder for `spec` on the chosen backend (arguments as build_engine)."""
    model = spec.name
    if chosen == 'ttnn':
        dtype = None if dtype == 'auto' else dtype
        try:
            ttnn_engines = importlib.import_module('tt_depth_ros.engines.ttnn')
        except ImportError as e:
            raise BackendUnavailableError(f'ttnn engine cannot be imported: {e}') from e
        shapes = {} if ttnn_max_traced_shapes is None else \
            {'max_traced_shapes': int(ttnn_max_traced_shapes)}
        return ttnn_engines.build_ttnn_engine(model, device_id=device_id, dtype=dtype,
                                              weights=weights, revision=revision, config=config,
                                              state_dict=state_dict, logger=logger,
                                              command_queues=ttnn_command_queues, **shapes)
    builder = TORCH_BUILDERS[spec.family]
    try:
        family = importlib.import_module(builder)
    except ModuleNotFoundError as e:
        raise BackendUnavailableError(f'no torch builder for {model!r} in this build '
                                      f'({builder} missing: {e})') from e
    device = f'cuda:{device_id}' if chosen == 'torch-cuda' else 'cpu'
    extra = {'accept_license': accept_license} if spec.family == 'da3' else {}
    if num_views is not None and extra:
        extra['num_views'] = int(num_views)
    return family.build_torch_engine(model, device=device, dtype=dtype, weights=weights,
                                     revision=revision, config=config, state_dict=state_dict,
                                     cuda_graphs=cuda_graphs, logger=logger, **extra)
