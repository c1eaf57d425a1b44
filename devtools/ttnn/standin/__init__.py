# ruff: noqa: F401  (re-exports: this module is the ttnn namespace)
"""A faithful CPU stand-in for the subset of ttnn 0.81.1 our engines use — DEVELOPMENT ONLY.

Injected by tests and benchmarks (`sys.modules['ttnn'] = standin`, see `install()`); the engines
import `ttnn` and never know. It computes with torch and reproduces what decides correctness on a
Blackhole p150 (docs/ttnn.md §8): bf16 round-to-nearest-even on every op output, bfloat8_b
blocks, tile padding to 32 and undefined padding after tiled reshapes/slices, the layouts ops
reject, keyword-only arguments and the defaults that bite (layer_norm eps 1e-12, SDPA
is_causal=True, split-heads transpose_key=True, from_torch ROW_MAJOR), trace capture/execute/
release semantics, the 12x10 (ETH dispatch) vs 11x10 grid. Its signatures and host conversions
are checked against the real wheel by devtools/ttnn/conformance/.
"""
from __future__ import annotations

import sys
import types as _pytypes

from . import ops_experimental, transformer
from .device import (
    GetNumAvailableDevices,
    MeshDevice,
    begin_trace_capture,
    close_device,
    close_mesh_device,
    end_trace_capture,
    event_synchronize,
    execute_trace,
    open_device,
    open_mesh_device,
    record_event,
    release_trace,
    set_eth_dispatch_patched,
    synchronize_device,
    wait_for_event,
)
from .ops_conv import conv2d, conv_transpose2d
from .ops_data import (
    allocate_tensor_on_device,
    as_tensor,
    concat,
    copy,
    copy_host_to_device_tensor,
    deallocate,
    from_device,
    from_torch,
    permute,
    reshape,
    slice,  # noqa: A004 (ttnn name)
    to_device,
    to_layout,
    to_torch,
    transpose,
    typecast,
)
from .ops_math import (
    add,
    clamp,
    exp,
    expm1,
    gelu,
    layer_norm,
    linear,
    matmul,
    maximum,
    multiply,
    reciprocal,
    relu,
    round,
    softmax,
    sqrt,
    subtract,
)
from .ops_shard import to_memory_config
from .queues import MeshEvent, set_queue_schedule
from .tensor import Tensor
from .types import (
    DRAM_MEMORY_CONFIG,
    L1_MEMORY_CONFIG,
    BufferType,
    Conv2dConfig,
    CoreCoord,
    CoreGrid,
    CoreRange,
    CoreRangeSet,
    DataType,
    DispatchCoreAxis,
    DispatchCoreConfig,
    DispatchCoreType,
    LayerNormShardedMultiCoreProgramConfig,
    Layout,
    MathFidelity,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MemoryConfig,
    MeshShape,
    MeshTraceId,
    MinimalMatmulConfig,
    SDPAProgramConfig,
    Shape,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
    TileReshapeMapMode,
    UnaryOpType,
    UnaryWithParam,
    WormholeComputeKernelConfig,
)

Device = MeshDevice
# `ttnn.experimental`: the fused residual matmul and the single-kernel RoPE (ops_experimental.py)
experimental = _pytypes.SimpleNamespace(
    dit_minimal_matmul_addcmul_fused=ops_experimental.dit_minimal_matmul_addcmul_fused,
    rotary_embedding_llama=ops_experimental.rotary_embedding_llama)
bfloat16 = DataType.BFLOAT16
bfloat8_b = DataType.BFLOAT8_B
bfloat4_b = DataType.BFLOAT4_B
float32 = DataType.FLOAT32
uint8 = DataType.UINT8
uint16 = DataType.UINT16
uint32 = DataType.UINT32
int32 = DataType.INT32
TILE_LAYOUT = Layout.TILE
ROW_MAJOR_LAYOUT = Layout.ROW_MAJOR
__version__ = '0.81.1+standin'


def get_arch_name() -> str:
    return 'blackhole'


def install() -> _pytypes.ModuleType:
    """Register this module as `ttnn` in sys.modules (test helper); returns it."""
    mod = sys.modules[__name__]
    sys.modules['ttnn'] = mod
    return mod


__all__ = [n for n in dir() if not n.startswith('_')]
__all__ += ['transformer', 'experimental']
