"""Device open/close and the per-engine context every `Tt*` module receives (docs/ttnn.md §2-§3).

`ttnn` is imported only when an engine is built (importing this package has no side effects and
works without tt-metal). Tests inject a CPU stand-in as `sys.modules['ttnn']`; nothing here knows.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Optional

# conv2d / pooling with kernels > 1 allocate halo/config buffers from the L1_SMALL region, which
# is 0 by default (conv then fails with an L1_SMALL OOM). 32 KiB is what the DUSt3R port used for
# 3x3 convs of 256 channels at up to 8h x 8w; DA3's convs are the same widths.
L1_SMALL_SIZE = 32 * 1024

# Trace region: every captured program stores its dispatch commands and runtime args there.
# Measured on Blackhole (docs/ttnn.md §2): ~950-1,066 ops fitted in 512 MiB and ~260 ops in
# ~90 MB, i.e. <= ~0.5 MiB per program (an upper bound; the mock device cannot capture, so the
# dry run counts programs but not bytes). Budget: 0.5 MiB per program (the nets'
# programs_estimate, from real-library counts) per traced shape, rounded up to 64 MiB.
TRACE_BYTES_PER_PROGRAM = 512 * 1024


def trace_region_size(programs_per_forward: int, max_shapes: int) -> int:
    """Bytes to reserve for `max_shapes` traces of `programs_per_forward` programs each."""
    need = programs_per_forward * max_shapes * TRACE_BYTES_PER_PROGRAM
    step = 64 * 1024 * 1024
    return -(-need // step) * step


def load_ttnn():
    """Import the ttnn package (tt-metal). ImportError names what to install."""
    try:
        return importlib.import_module('ttnn')
    except ImportError as e:
        raise ImportError('the ttnn backend needs the tt-metal Python package `ttnn` (0.81.1; '
                          'cp310/cp312 wheels): pip install ttnn==0.81.1') from e


@dataclass
class TtContext:
    """What every Tt module needs: the ttnn module, the open device, its grid and precision."""

    ttnn: Any
    device: Any
    grid: tuple[int, int]          # compute_with_storage_grid_size (x, y)
    dispatch: str                  # 'eth' or 'worker'
    precision: Any                 # precision.Precision
    weight_cache: Any = None       # weight_cache.WeightCache or None
    active_shape: Any = None       # the input shape being warmed/captured (engine.py)
    shape_uses: dict = field(default_factory=dict)   # shape -> {(TtConv2d, hw)} it uses
    command_queues: int = 1        # 2: uploads on CQ1 overlap the trace on CQ0 (engine.py)

    def matmul_config(self, role: str | None = None):
        """Compute kernel config of a matmul of `role` (precision.ROLES; None: the preset's)."""
        return self.precision.kernel_config(self.ttnn, role)


def _open(ttnn, device_id: int, trace_bytes: int, dispatch, command_queues: int):
    """One device; a second command queue needs the mesh API (0.81.1's open_device has none)."""
    if command_queues == 1:
        return ttnn.open_device(device_id=device_id, l1_small_size=L1_SMALL_SIZE,
                                trace_region_size=trace_bytes, dispatch_core_config=dispatch)
    return ttnn.open_mesh_device(ttnn.MeshShape(1, 1), l1_small_size=L1_SMALL_SIZE,
                                 trace_region_size=trace_bytes,
                                 num_command_queues=command_queues,
                                 dispatch_core_config=dispatch, physical_device_ids=[device_id])


def close_device(ttnn, device, command_queues: int) -> None:
    """Close what `_open` opened."""
    if command_queues == 1:
        ttnn.close_device(device)
    else:
        ttnn.close_mesh_device(device)


def open_device(ttnn, device_id: int, trace_bytes: int, logger: Optional[Any] = None,
                command_queues: int = 1):
    """Open `device_id` with ETH dispatch (12x10 grid on a patched tt-metal), else stock dispatch.

    Stock tt-metal / the 0.81.1 wheel cannot put dispatch on a p150's ETH cores (docs/ttnn.md §7;
    patches/tt-metal-eth-dispatch.patch); then the open fails and we reopen with the default
    (Tensix) dispatch, which costs one column (11x10). Both outcomes are logged, never silent.

    Returns:
        (device, 'eth' | 'worker', (grid_x, grid_y)).
    """
    try:
        # Blackhole rejects (ETH, ROW): pass the type only (docs/ttnn.md §2).
        eth = ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH)
        device = _open(ttnn, device_id, trace_bytes, eth, command_queues)
        mode = 'eth'
    except RuntimeError as e:
        if logger is not None:
            logger.info(f'ttnn: ETH dispatch unavailable ({str(e).splitlines()[0]}); using the '
                        'default Tensix dispatch (one core column fewer). Apply '
                        'patches/tt-metal-eth-dispatch.patch to tt-metal for the 12x10 grid.')
        device = _open(ttnn, device_id, trace_bytes, ttnn.DispatchCoreConfig(), command_queues)
        mode = 'worker'
    g = device.compute_with_storage_grid_size()
    if logger is not None:
        logger.info(f'ttnn: device {device_id} open, {mode} dispatch, compute grid {g.x}x{g.y}, '
                    f'l1_small {L1_SMALL_SIZE} B, trace region {trace_bytes >> 20} MiB, '
                    f'{command_queues} command queue(s)')
    return device, mode, (g.x, g.y)
