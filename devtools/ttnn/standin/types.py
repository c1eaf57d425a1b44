"""Enums, small value types and configs of the ttnn stand-in (names and reprs as in ttnn 0.81.1).

Enum members print as `DataType.BFLOAT16`, like the nanobind enums of the real package, so the
conformance check can compare default values textually.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class _Enum(enum.Enum):
    def __str__(self) -> str:
        return f'{type(self).__name__}.{self.name}'

    __repr__ = __str__


class DataType(_Enum):
    BFLOAT16 = 0
    FLOAT32 = 1
    UINT32 = 2
    BFLOAT8_B = 3
    BFLOAT4_B = 4
    UINT8 = 5
    UINT16 = 6
    INT32 = 7


class Layout(_Enum):
    ROW_MAJOR = 0
    TILE = 1


class MathFidelity(_Enum):
    LoFi = 0
    HiFi2 = 2
    HiFi3 = 3
    HiFi4 = 4
    Invalid = 255


class TensorMemoryLayout(_Enum):
    INTERLEAVED = 0
    HEIGHT_SHARDED = 2
    WIDTH_SHARDED = 3
    BLOCK_SHARDED = 4


class BufferType(_Enum):
    DRAM = 0
    L1 = 1
    L1_SMALL = 4
    TRACE = 5


class DispatchCoreType(_Enum):
    WORKER = 0
    ETH = 1


class DispatchCoreAxis(_Enum):
    ROW = 0
    COL = 1


class ThrottleLevel(_Enum):
    NO_THROTTLE = 0


class UnaryOpType(_Enum):
    RELU = 0
    GELU = 1


class TileReshapeMapMode(_Enum):
    CACHE = 0
    RECREATE = 1


class GeluVariant(_Enum):
    Accurate = 0
    Approximate = 1


class ShardOrientation(_Enum):
    ROW_MAJOR = 0
    COL_MAJOR = 1


class Shape(tuple):
    """Logical or padded tensor shape (a tuple that prints like ttnn.Shape)."""

    def __new__(cls, shape):
        return super().__new__(cls, (int(d) for d in shape))

    def __init__(self, shape):  # values set by __new__; signature as ttnn.Shape(shape)
        super().__init__()

    def __repr__(self) -> str:
        return f'Shape({list(self)})'

    @property
    def rank(self) -> int:
        return len(self)


class CoreRange:
    """An inclusive rectangle of cores, start (x, y) to end (x, y)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    @property
    def grid(self) -> tuple[int, int]:
        """Columns x rows it spans."""
        return self.end.x - self.start.x + 1, self.end.y - self.start.y + 1

    def __repr__(self) -> str:
        return f'CoreRange({self.start!r}, {self.end!r})'


class CoreRangeSet:
    def __init__(self, core_ranges):
        self.ranges = list(core_ranges)

    def num_cores(self) -> int:
        return sum(r.grid[0] * r.grid[1] for r in self.ranges)

    def bounding_box(self) -> CoreRange:
        x0 = min(r.start.x for r in self.ranges)
        y0 = min(r.start.y for r in self.ranges)
        return CoreRange(CoreCoord(x0, y0), CoreCoord(max(r.end.x for r in self.ranges),
                                                      max(r.end.y for r in self.ranges)))

    def __repr__(self) -> str:
        return f'CoreRangeSet({self.ranges!r})'


class ShardSpec:
    """Cores, shard shape (rows, columns of the 2D-flattened tensor) and their order."""

    def __init__(self, grid, shard_shape, shard_orientation):
        self.grid = grid
        self.shape = (int(shard_shape[0]), int(shard_shape[1]))
        self.orientation = shard_orientation

    def __eq__(self, other) -> bool:
        return isinstance(other, ShardSpec) and (self.shape, self.orientation, repr(self.grid)) \
            == (other.shape, other.orientation, repr(other.grid))

    def __hash__(self) -> int:
        return hash((self.shape, self.orientation))

    def __repr__(self) -> str:
        return f'ShardSpec({self.grid!r}, {list(self.shape)}, {self.orientation})'


class MemoryConfig:
    def __init__(self, memory_layout=TensorMemoryLayout.INTERLEAVED, buffer_type=BufferType.DRAM,
                 shard_spec=None):
        self.memory_layout = memory_layout
        self.buffer_type = buffer_type
        self.shard_spec = shard_spec

    def is_sharded(self) -> bool:
        return self.memory_layout != TensorMemoryLayout.INTERLEAVED

    def __eq__(self, other) -> bool:
        return isinstance(other, MemoryConfig) and (
            self.memory_layout, self.buffer_type, self.shard_spec) == (
            other.memory_layout, other.buffer_type, other.shard_spec)

    def __hash__(self) -> int:
        return hash((self.memory_layout, self.buffer_type))

    def __repr__(self) -> str:
        spec = '' if self.shard_spec is None else f', {self.shard_spec!r}'
        return f'MemoryConfig({self.memory_layout}, {self.buffer_type}{spec})'


DRAM_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.DRAM)
L1_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.L1)


class CoreCoord:
    def __init__(self, x, y=None, /):
        if y is None:
            x, y = x
        self.x, self.y = int(x), int(y)

    def __eq__(self, other) -> bool:
        return isinstance(other, CoreCoord) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))

    def __repr__(self) -> str:
        return f'{self.x}-{self.y}'          # as the real CoreCoord prints


class CoreGrid:
    def __init__(self, *, x: int, y: int):
        self.x, self.y = int(x), int(y)

    @property
    def num_cores(self) -> int:
        return self.x * self.y

    def __repr__(self) -> str:
        return f'ttnn.CoreGrid(x={self.x}, y={self.y})'


class DispatchCoreConfig:
    """Dispatch core type/axis. Blackhole rejects (ETH, ROW) (docs/ttnn.md §2)."""

    def __init__(self, type=None, axis=None, fabric_tensix_config=None):  # noqa: A002 (ttnn name)
        self.type = DispatchCoreType.WORKER if type is None else type
        if axis == DispatchCoreAxis.ROW and self.type == DispatchCoreType.ETH:
            raise RuntimeError('TT_FATAL: ETH dispatch with DispatchCoreAxis.ROW is not supported '
                               'on Blackhole; pass the type only')
        self.axis = DispatchCoreAxis.COL if axis is None else axis
        self.fabric_tensix_config = fabric_tensix_config


class WormholeComputeKernelConfig:
    def __init__(self, *, math_fidelity=MathFidelity.Invalid, math_approx_mode=True,
                 fp32_dest_acc_en=False, packer_l1_acc=False, dst_full_sync_en=False,
                 throttle_level=ThrottleLevel.NO_THROTTLE):
        self.math_fidelity = math_fidelity
        self.math_approx_mode = math_approx_mode
        self.fp32_dest_acc_en = fp32_dest_acc_en
        self.packer_l1_acc = packer_l1_acc
        self.dst_full_sync_en = dst_full_sync_en
        self.throttle_level = throttle_level

    def __repr__(self) -> str:
        return (f'WormholeComputeKernelConfig({self.math_fidelity}, fp32={self.fp32_dest_acc_en}, '
                f'approx={self.math_approx_mode}, l1acc={self.packer_l1_acc})')


class SDPAProgramConfig:
    def __init__(self, *, compute_with_storage_grid_size, sub_core_grids=None, q_chunk_size,
                 k_chunk_size, exp_approx_mode=None, max_cores_per_head_batch=16, max_k_splits=1,
                 matmul_math_fidelity=None, segmented_accumulation=False):
        self.compute_with_storage_grid_size = compute_with_storage_grid_size
        self.q_chunk_size = int(q_chunk_size)
        self.k_chunk_size = int(k_chunk_size)
        self.exp_approx_mode = exp_approx_mode

    def __repr__(self) -> str:
        g = self.compute_with_storage_grid_size
        return f'SDPAProgramConfig(grid={g!r}, q={self.q_chunk_size}, k={self.k_chunk_size})'


class MatmulMultiCoreReuseMultiCastProgramConfig:
    """2D-multicast matmul program config (the real signature; checked in ops_math.linear)."""

    def __init__(self, *, compute_with_storage_grid_size, in0_block_w, out_subblock_h,
                 out_subblock_w, out_block_h=None, out_block_w=None, per_core_M, per_core_N,
                 transpose_mcast, fused_activation=None, fuse_batch=True,
                 allowed_worker_cores=None):
        self.compute_with_storage_grid_size = compute_with_storage_grid_size
        self.in0_block_w = int(in0_block_w)
        self.out_subblock_h, self.out_subblock_w = int(out_subblock_h), int(out_subblock_w)
        self.out_block_h, self.out_block_w = out_block_h, out_block_w
        self.per_core_M, self.per_core_N = int(per_core_M), int(per_core_N)
        self.transpose_mcast = bool(transpose_mcast)
        self.fused_activation = fused_activation
        self.fuse_batch = fuse_batch

    def __repr__(self) -> str:
        g = self.compute_with_storage_grid_size
        act = None if self.fused_activation is None else self.fused_activation.op_type
        return (f'MatmulMultiCoreReuseMultiCastProgramConfig(grid={g!r}, '
                f'in0_block_w={self.in0_block_w}, sub={self.out_subblock_h}x'
                f'{self.out_subblock_w}, per_core={self.per_core_M}x{self.per_core_N}, '
                f'transpose={self.transpose_mcast}, act={act})')


class MatmulMultiCoreReuseMultiCast1DProgramConfig:
    """1D matmul program config, the real signature (in0 reuse only: ops_math)."""

    def __init__(self, *, compute_with_storage_grid_size, in0_block_w, out_subblock_h,
                 out_subblock_w, out_block_h=None, out_block_w=None, per_core_M, per_core_N,
                 fuse_batch, fused_activation=None, mcast_in0, gather_in0=False,
                 hop_cores={}, num_global_cb_receivers=1, untilize_out=False,  # noqa: B006
                 allowed_worker_cores=None, stream_in1=False):
        self.compute_with_storage_grid_size = compute_with_storage_grid_size
        self.in0_block_w = int(in0_block_w)
        self.out_subblock_h, self.out_subblock_w = int(out_subblock_h), int(out_subblock_w)
        self.per_core_M, self.per_core_N = int(per_core_M), int(per_core_N)
        self.fuse_batch, self.mcast_in0 = bool(fuse_batch), bool(mcast_in0)
        self.fused_activation = fused_activation

    def __repr__(self) -> str:
        g = self.compute_with_storage_grid_size
        return (f'MatmulMultiCoreReuseMultiCast1DProgramConfig(grid={g!r}, '
                f'in0_block_w={self.in0_block_w}, sub={self.out_subblock_h}x'
                f'{self.out_subblock_w}, per_core={self.per_core_M}x{self.per_core_N}, '
                f'fuse_batch={self.fuse_batch}, mcast_in0={self.mcast_in0})')


class LayerNormShardedMultiCoreProgramConfig:
    """LayerNorm over a block-sharded input: each core a block_h x block_w tile block."""

    def __init__(self, *, compute_with_storage_grid_size, subblock_w, block_h, block_w, inplace,
                 legacy_reduction=False, legacy_rsqrt=False, use_welford=False):
        self.compute_with_storage_grid_size = compute_with_storage_grid_size
        self.subblock_w, self.block_h, self.block_w = int(subblock_w), int(block_h), int(block_w)
        self.inplace = bool(inplace)

    def __repr__(self) -> str:
        g = self.compute_with_storage_grid_size
        return (f'LayerNormShardedMultiCoreProgramConfig(grid={g!r}, block={self.block_h}x'
                f'{self.block_w}, subblock_w={self.subblock_w})')


_ONE_CORE = CoreCoord(1, 1)      # MinimalMatmulConfig's default grid (prints 1-1, as the real)


class MinimalMatmulConfig:
    """Block sizes (tiles) and grid of experimental.minimal_matmul and its fused variants."""

    def __init__(self, *, M_block_size=1, K_block_size=1, N_block_size=1, subblock_h=1,
                 subblock_w=1, compute_with_storage_grid_size=_ONE_CORE):
        self.M_block_size, self.K_block_size = int(M_block_size), int(K_block_size)
        self.N_block_size = int(N_block_size)
        self.subblock_h, self.subblock_w = int(subblock_h), int(subblock_w)
        self.compute_with_storage_grid_size = compute_with_storage_grid_size

    def __repr__(self) -> str:
        g = self.compute_with_storage_grid_size
        return (f'MinimalMatmulConfig(grid={g!r}, blocks={self.M_block_size}x'
                f'{self.K_block_size}x{self.N_block_size}, sub={self.subblock_h}x'
                f'{self.subblock_w})')


class UnaryWithParam:
    def __init__(self, op_type, param=None, /):
        self.op_type = op_type
        self.param = param

    def __repr__(self) -> str:
        return f'UnaryWithParam({self.op_type})'


class Conv2dConfig:
    def __init__(self, *, weights_dtype=None, activation=None, deallocate_activation=False,
                 reallocate_halo_output=True, config_tensors_in_dram=False,
                 act_block_h_override=0, act_block_w_div=1, reshard_if_not_optimal=False,
                 override_sharding_config=False, shard_layout=None, core_grid=None,
                 transpose_shards=False, output_layout=Layout.TILE):
        self.weights_dtype = weights_dtype
        self.activation = activation
        self.deallocate_activation = deallocate_activation
        self.shard_layout = shard_layout
        self.output_layout = output_layout

    def __repr__(self) -> str:
        return (f'Conv2dConfig(w={self.weights_dtype}, act={self.activation}, '
                f'out={self.output_layout})')


@dataclass
class MeshTraceId:
    """Handle of a captured trace."""

    value: int

    def __hash__(self) -> int:
        return hash(self.value)


class MeshShape:
    """Rows x columns of a device mesh (the stand-in has one device: 1x1)."""

    def __init__(self, s0: int, s1: int) -> None:
        self.dims = (int(s0), int(s1))

    def __iter__(self):
        return iter(self.dims)
