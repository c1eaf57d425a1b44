"""build_ttnn_engine: model name -> converted weights on an opened device -> TtnnEngine."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from tt_depth_ros.engines import registry
from tt_depth_ros.engines.ttnn.context import (
    TtContext,
    close_device,
    load_ttnn,
    open_device,
    trace_region_size,
)
from tt_depth_ros.engines.ttnn.engine import TtnnEngine
from tt_depth_ros.engines.ttnn.precision import parse_precision
from tt_depth_ros.engines.ttnn.weight_cache import weight_cache_for

MAX_TRACED_SHAPES = 2   # default traces kept (a node uses one camera shape); LRU beyond


def _family(spec: registry.ModelSpec, config):
    """(device network class, config, checkpoint key mapping, checkpoint reader) of a model.

    The readers are the torch engines' own: DUSt3R's reads `.pth` with weights_only=True and
    the argparse.Namespace allowlist of upstream training checkpoints.
    """
    model = spec.name
    if spec.family == 'da3':
        from tt_depth_ros.engines.ttnn.da3.model import TtDA3
        from tt_depth_ros.engines.weights import read_state_dict
        from tt_depth_ros.models.da3.checkpoint import map_state_dict
        from tt_depth_ros.models.da3.config import CONFIGS
        return TtDA3, config or CONFIGS.get(model), map_state_dict, read_state_dict
    from tt_depth_ros.engines.ttnn.dust3r.model import TtDust3r
    from tt_depth_ros.models.dust3r.checkpoint import map_state_dict, read_checkpoint
    from tt_depth_ros.models.dust3r.config import CONFIGS
    return TtDust3r, config or CONFIGS.get(model), map_state_dict, read_checkpoint


def build_ttnn_engine(model: str, *, device_id: int = 0, dtype: Any = None,
                      weights: Optional[str] = None, revision: Optional[str] = None,
                      config: Any = None, state_dict: Optional[Mapping[str, Any]] = None,
                      logger: Optional[Any] = None,
                      max_traced_shapes: int = MAX_TRACED_SHAPES,
                      command_queues: int = 1) -> TtnnEngine:
    """Open the device, convert the weights and return an (unprepared) TtnnEngine.

    Args:
        model: 'da3metric-large', 'da3mono-large', 'dust3r-vitl-512-dpt' or a tiny test config.
        device_id: Tenstorrent device index.
        dtype: Precision preset (precision.PRESETS; None = the family's default,
            precision.DEFAULTS).
        weights: Explicit weights file (else HF cache / pinned download).
        revision: Hub revision for weight resolution.
        config: Model config override (tests).
        state_dict: Checkpoint tensors keyed by upstream names; skips weight resolution.
        logger: Anything with `.info(str)`.
        max_traced_shapes: Input shapes kept prepared (trace + per-shape buffers); the trace
            region is sized for this many; a further shape evicts the least recently used.
        command_queues: 1, or 2 to upload the next frame on CQ1 while CQ0 replays the trace
            (engine.submit / collect pipeline the frames).
    """
    if int(command_queues) not in (1, 2):
        raise ValueError(f'command_queues={command_queues}: 1 or 2')
    if int(max_traced_shapes) < 1:
        raise ValueError(f'max_traced_shapes={max_traced_shapes}: need at least 1')
    spec = registry.model(model)
    net_cls, cfg, map_sd, read = _family(spec, config)
    if cfg is None:
        raise ValueError(f'ttnn backend: no config for {model!r}')
    precision = parse_precision(dtype, spec.family)
    if state_dict is None:
        from tt_depth_ros.engines.weights import resolve_weights
        state_dict = read(resolve_weights(model, weights, revision))
    sd = map_sd(state_dict)
    ttnn = load_ttnn()
    device, mode, grid = open_device(ttnn, device_id,
                                     trace_region_size(net_cls.programs_estimate(cfg, precision),
                                                       int(max_traced_shapes)),
                                     logger, int(command_queues))
    ctx = TtContext(ttnn, device, grid, mode, precision,
                    weight_cache_for(model, sd, precision.name),
                    command_queues=int(command_queues))
    try:
        net = net_cls(ctx, sd, cfg)
        if logger is not None and ctx.weight_cache is not None:
            logger.info(f'ttnn: weights converted/cached in {ctx.weight_cache.directory}')
    except BaseException:
        close_device(ttnn, device, int(command_queues))
        raise
    return TtnnEngine(ctx, net, model_name=model, device_id=device_id, logger=logger,
                      max_traced_shapes=int(max_traced_shapes),
                      details=spec.details())
