"""Backend selection: 'auto' picks ttnn, then torch-cuda, then torch-cpu, and logs the choice.

'onnxruntime' (FILE_BACKENDS) runs an exported file (`weights_path: model.onnx`,
engines/onnxruntime/) and is only ever chosen explicitly: 'auto' never picks it.

An explicitly requested backend that cannot run raises `BackendUnavailableError` naming the reason;
there is never a silent fallback (docs/design.md §1). Probing happens here, at selection time,
never at import time.
"""
from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from tt_depth_ros.engines.base import BACKENDS

if TYPE_CHECKING:
    from tt_depth_ros.engines.registry import ModelSpec

FILE_BACKENDS = ('onnxruntime',)
"""Backends that run an exported model file instead of a checkpoint; never chosen by 'auto'."""
REQUESTS = ('auto',) + BACKENDS + FILE_BACKENDS

_log = logging.getLogger(__name__)


class BackendUnavailableError(ValueError):
    """The requested backend cannot run here; the message says why and what to do."""


def ttnn_status(device_id: int = 0, explicit: bool = False) -> tuple[bool, str]:
    """Whether the ttnn backend can run on Tenstorrent device `device_id`, and why not.

    'auto' (explicit=False) needs the kernel driver's device node /dev/tenstorrent/<id>: only a
    real card qualifies. An explicit 'ttnn' request asks the installed `ttnn` package how many
    devices it can open (the same answer on real hardware; lets an injected test stand-in run).
    """
    import sys

    if 'ttnn' not in sys.modules and importlib.util.find_spec('ttnn') is None:
        return False, 'the Python package `ttnn` (tt-metal) is not installed'
    if importlib.util.find_spec('tt_depth_ros.engines.ttnn') is None:
        return False, 'the ttnn engine (tt_depth_ros.engines.ttnn) is not part of this build'
    if explicit:
        try:
            n = importlib.import_module('ttnn').GetNumAvailableDevices()
        except Exception as e:  # noqa: BLE001 (any driver error: no usable device)
            return False, f'ttnn cannot enumerate devices: {e}'
        if not 0 <= device_id < n:
            return False, f'ttnn sees {n} device(s); device {device_id} does not exist'
        return True, f'ttnn device {device_id} ({n} available)'
    dev = Path('/dev/tenstorrent') / str(device_id)
    if not dev.exists():
        return False, f'no Tenstorrent device at {dev}'
    return True, f'Tenstorrent device {dev}'


def cuda_status(device_id: int = 0) -> tuple[bool, str]:
    """Whether torch can run on CUDA device `device_id`, and why not."""
    import torch  # probed on request only

    if not torch.cuda.is_available():
        return False, f'torch {torch.__version__} sees no CUDA device (CPU-only build or no GPU)'
    n = torch.cuda.device_count()
    if not 0 <= device_id < n:
        return False, f'CUDA device {device_id} does not exist ({n} visible)'
    return True, f'cuda:{device_id} ({torch.cuda.get_device_name(device_id)})'


def _status(backend: str, device_id: int, explicit: bool = False) -> tuple[bool, str]:
    if backend == 'ttnn':
        return ttnn_status(device_id, explicit)
    if backend == 'torch-cuda':
        return cuda_status(device_id)
    if backend == 'onnxruntime':
        if importlib.util.find_spec('onnxruntime') is None:
            return False, ('the Python package `onnxruntime` is not installed '
                           '(pip install onnxruntime)')
        return True, 'onnxruntime (runs the exported file given as weights)'
    if importlib.util.find_spec('torch') is None:
        return False, 'PyTorch is not installed'
    return True, 'CPU'


def select_backend(requested: str = 'auto', device_id: int = 0,
                   logger: Optional[Any] = None, model: Optional['ModelSpec'] = None) -> str:
    """Resolve a backend request to one of BACKENDS.

    Args:
        requested: 'auto', 'ttnn', 'torch-cuda', 'torch-cpu' or 'onnxruntime'.
        device_id: Accelerator index (ttnn or CUDA).
        logger: Anything with `.info(str)` (logging.Logger, rclpy logger); module logger if None.
        model: The registry entry to run (engines/registry.py): only its `backends` qualify
            ('auto' skips, without probing, the others; asking for one is an error).

    Returns:
        The backend name.

    Raises:
        ValueError: Unknown request.
        BackendUnavailableError: An explicitly requested backend cannot run; names the reason.
    """
    log = logger if logger is not None else _log
    if requested not in REQUESTS:
        raise ValueError(f'backend={requested!r}; allowed: {REQUESTS}')
    if int(device_id) != device_id or device_id < 0:
        raise ValueError(f'device_id={device_id} must be a non-negative integer')
    allowed = BACKENDS if model is None else model.backends
    if requested in FILE_BACKENDS and model is not None and model.family != 'da3':
        raise BackendUnavailableError(f'{model.name!r}: backend {requested} runs exported DA3 '
                                      f'files only; use {", ".join(allowed)} or \'auto\'')
    if requested != 'auto' and requested not in allowed + FILE_BACKENDS:
        raise BackendUnavailableError(f'{model.name!r} has no {requested} implementation; use '
                                      f"{', '.join(allowed)} or 'auto'")
    if requested != 'auto':
        ok, why = _status(requested, device_id, explicit=True)
        if not ok:
            raise BackendUnavailableError(f'backend {requested!r} is unavailable: {why}. '
                                          "Choose another backend or 'auto'.")
        log.info(f'backend {requested} (requested): {why}')
        return requested
    reasons = []
    for backend in BACKENDS:
        if backend not in allowed:
            reasons.append(f'{backend}: no {backend} implementation of {model.name}')
            continue
        ok, why = _status(backend, device_id)
        if ok:
            skipped = f" (skipped: {'; '.join(reasons)})" if reasons else ''
            log.info(f'backend auto -> {backend}: {why}{skipped}')
            return backend
        reasons.append(f'{backend}: {why}')
    raise BackendUnavailableError('no backend can run: ' + '; '.join(reasons))
