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

from tt_depth_ros.engines.base import Engine
from tt_depth_ros.engines.cancel import CancelToken


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


def build_node_engine(p: dict, logger, cancel: CancelToken,
                      num_views: int | None = None) -> Engine:
    """The engine a node's parameters `p` ask for; `cancel` stops the build at its next step.

    Args:
        p: the node's parameter values (model, weights_path, backend, device_id, torch_dtype,
            revision,
            engine_plugin, engine_plugin_args; the depth node's onnx_provider).
        logger: the node's logger (build steps are logged).
        cancel: the node's token, cancelled at process shutdown.
        num_views: DA3 any-view / NESTED views per forward (None = the factory's default);
            not passed to a plugin.
    """
    if p['engine_plugin']:
        return _plugin_engine(p['engine_plugin'], p['engine_plugin_args'], cancel, logger)
    from tt_depth_ros.engines.factory import build_engine  # heavy (torch): only when used
    return build_engine(p['model'], weights=p['weights_path'] or None, backend=p['backend'],
                        device_id=p['device_id'], revision=p['revision'] or None, logger=logger,
                        dtype=p.get('torch_dtype', 'auto'),
                        num_views=num_views, cancel=cancel,
                        onnx_provider=p.get('onnx_provider') or None)


class PreparedShapes:
    """The network shapes an engine is prepared for (prepare compiles/traces: seconds, once)."""

    def __init__(self) -> None:
        self._shapes: set[tuple[int, int]] = set()

    def reset(self) -> None:
        """A new engine: nothing prepared yet."""
        self._shapes.clear()

    def ensure(self, engine: Engine, shape: tuple[int, int], logger) -> None:
        """Prepare `engine` for `shape` unless done already (logged with its duration)."""
        if shape in self._shapes:
            return
        logger.info(f'preparing engine for network shape {shape[0]}x{shape[1]} ...')
        t0 = time.monotonic()
        engine.prepare(shape)
        self._shapes.add(shape)
        logger.info(f'engine ready for {shape[0]}x{shape[1]} ({time.monotonic() - t0:.2f} s)')
