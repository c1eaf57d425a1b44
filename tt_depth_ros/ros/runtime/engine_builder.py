"""A node's engine: built from its parameters, prepared once per network shape.

`build_node_engine` is the one build path of both nodes: engines.factory.build_engine with the
node's model, weights, backend and cancellation token, or, the one plugin seam for test engines,
the `engine_plugin` parameter ('module:callable', keyword arguments from `engine_plugin_args`; the
callable gets the token too when it has a `cancel` parameter). A plugin is never chosen
automatically and is logged as the path for tests and integration.
"""
from __future__ import annotations

import importlib
import inspect
import json
import time
from typing import Optional

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.engines.cancel import CancelToken
from tt_depth_ros.geometry.preprocess.resize_map import ResizeMap


def _accepts(fn, name: str) -> bool:
    """Whether callable `fn` takes a keyword argument `name` (False if it cannot be inspected)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _plugin_engine(plugin: str, plugin_args: str, cancel: CancelToken, logger) -> Engine:
    module, _, attr = plugin.partition(':')
    if not attr:
        raise ValueError(f"engine_plugin={plugin!r} must be 'module:callable'")
    kwargs = json.loads(plugin_args or '{}')
    logger.warning(f'engine from plugin {plugin} (for tests and integration)')
    factory = getattr(importlib.import_module(module), attr)
    if _accepts(factory, 'cancel'):
        kwargs['cancel'] = cancel
    return factory(**kwargs)


def build_node_engine(p, logger, cancel: CancelToken,
                      num_views: int | None = None, ttnn_command_queues: int = 1,
                      max_shapes: int | None = None) -> Engine:
    """The engine a node's parameters `p` ask for; `cancel` stops the build at its next step.

    Args:
        p: the node's parameter values (model, weights_path, backend, device_id, torch_dtype,
            ttnn_precision, revision, engine_plugin, engine_plugin_args; the depth node's
            onnx_provider).
        logger: the node's logger (build steps are logged).
        cancel: the node's token, cancelled at process shutdown.
        num_views: DA3 any-view / NESTED views per forward (None = the factory's default);
            not passed to a plugin.
        ttnn_command_queues: 2 for a throughput-bound caller (the batch tools) on ttnn: frames
            then pipeline (Engine.pipelines); other backends have one queue and ignore it.
        max_shapes: ttnn: input shapes kept traced at once (None: the engine's default); a
            node serving several cameras passes their distinct sizes.
    """
    if p.engine_plugin:
        return _plugin_engine(p.engine_plugin, p.engine_plugin_args, cancel, logger)
    from tt_depth_ros.engines.factory import build_engine  # heavy (torch): only when used
    return build_engine(p.model, weights=p.weights_path or None, backend=p.backend,
                        device_id=p.device_id, revision=p.revision or None, logger=logger,
                        dtype=p.torch_dtype, ttnn_dtype=p.ttnn_precision,
                        num_views=num_views, cancel=cancel,
                        onnx_provider=getattr(p, 'onnx_provider', '') or None,
                        ttnn_command_queues=ttnn_command_queues,
                        ttnn_max_traced_shapes=max_shapes)


class PreparedShapes:
    """The network shapes an engine is prepared for (prepare compiles/traces: seconds, once).

    With a ResizeMap (an engine that resizes on its device) the key is the network shape and the
    camera size, prepared by `engine.prepare_camera`.
    """

    def __init__(self) -> None:
        self._shapes: set[tuple] = set()

    def reset(self) -> None:
        """A new engine: nothing prepared yet."""
        self._shapes.clear()

    def ensure(self, engine: Engine, shape: tuple[int, int], logger,
               resize: Optional[ResizeMap] = None) -> None:
        """Prepare `engine` for `shape` (and `resize`'s camera size) unless done already, logged."""
        key = (tuple(shape), None if resize is None else tuple(resize.src_hw))
        if key in self._shapes:
            return
        what = f'{shape[0]}x{shape[1]}' + ('' if resize is None else
                                           f' (camera {resize.src_hw[0]}x{resize.src_hw[1]}, '
                                           'resized on the device)')
        logger.info(f'preparing engine for network shape {what} ...')
        t0 = time.monotonic()
        if resize is None:
            engine.prepare(shape)
        else:
            engine.prepare_camera(resize)
        self._shapes.add(key)
        logger.info(f'engine ready for {what} ({time.monotonic() - t0:.2f} s)')
