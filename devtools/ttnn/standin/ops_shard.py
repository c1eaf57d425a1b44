"""Block sharding in the stand-in: `to_memory_config` and what sharded ops validate.

Sharding moves no value, so only the rules matter, each seen on the real ttnn 0.81.1 in the dry
run (docs/ttnn-levers.md "Block-sharded encoder"): a BLOCK_SHARDED tensor is cut into shards of
the spec's shape (rows x columns of the tensor flattened to 2D, tile multiples), the last shard
of a dimension may be partial; ROW_MAJOR orientation lays the height's shards along the grid's
rows (y) and the width's along its columns (x), COL_MAJOR the other way round. A sharded
layer_norm needs a LayerNormShardedMultiCoreProgramConfig whose block is the shard, exactly one
shard per core of the spec's grid ("num_shards_h * num_shards_w == num_cores",
normalization/shard_spec_validation.cpp) and its output (and residual input) in the same shard
spec. A 2D-multicast matmul with a block-sharded in0 or output takes per_core_M x per_core_N
blocks equal to the shards, transpose_mcast matching COL_MAJOR.
"""
from __future__ import annotations

import math

from . import numerics
from .launch import launch
from .types import (
    LayerNormShardedMultiCoreProgramConfig,
    Layout,
    ShardOrientation,
    TensorMemoryLayout,
)

TILE = numerics.TILE


def _block(mc):
    return mc is not None and mc.memory_layout == TensorMemoryLayout.BLOCK_SHARDED


def shard_counts(shape, mc) -> tuple[int, int, tuple[int, int]]:
    """(shards along the height, along the width, grid (x, y)) of a block-sharded spec."""
    spec = mc.shard_spec
    rows = math.prod(numerics.padded_dims(tuple(shape))[:-1])
    cols = numerics.padded_dims(tuple(shape))[-1]
    sh, sw = spec.shape
    return -(-rows // sh), -(-cols // sw), spec.grid.bounding_box().grid


def check_block_spec(name, shape, mc, device) -> None:
    """A block-sharded memory config fits the tensor and the device (raises otherwise)."""
    if not mc.is_sharded():
        return
    if mc.memory_layout != TensorMemoryLayout.BLOCK_SHARDED:
        raise RuntimeError(f'stand-in: {name}: only BLOCK_SHARDED is modelled, got '
                           f'{mc.memory_layout}')
    if mc.shard_spec is None:
        raise RuntimeError(f'TT_FATAL: {name}: a sharded memory config needs a shard spec')
    sh, sw = mc.shard_spec.shape
    if sh % TILE or sw % TILE:
        raise RuntimeError(f'TT_FATAL: {name}: shard shape {[sh, sw]} is not tile-aligned')
    nh, nw, (gx, gy) = shard_counts(shape, mc)
    along_h, along_w = (gy, gx) if mc.shard_spec.orientation == ShardOrientation.ROW_MAJOR \
        else (gx, gy)
    if nh > along_h or nw > along_w:
        raise RuntimeError(f'TT_FATAL: {name}: {nh} x {nw} shards of {[sh, sw]} do not fit the '
                           f'{gx}x{gy} shard grid ({mc.shard_spec.orientation})')
    grid = device.compute_with_storage_grid_size()
    if gx > grid.x or gy > grid.y:
        raise RuntimeError(f'TT_FATAL: {name}: shard grid {gx}x{gy} exceeds the device grid')


def to_memory_config(tensor, memory_config, dtype=None, output_tensor=None):
    x = tensor
    if memory_config.is_sharded() and x.layout != Layout.TILE:
        raise RuntimeError('stand-in: to_memory_config: sharding is modelled for TILE only')
    check_block_spec('to_memory_config', x.shape, memory_config, x._device)
    out_dtype = x.dtype if dtype is None else dtype

    def fn(d):
        v = d[0] if out_dtype == x.dtype else numerics.quantize(d[0], out_dtype)
        return [(v, tuple(x.shape), out_dtype, x.layout, x._pad_defined)]
    return launch('to_memory_config', [x], (repr(memory_config), str(out_dtype)), fn,
                  memory_config=memory_config)[0]


def check_layer_norm(x, memory_config, program_config, residual) -> None:
    """What a sharded layer_norm requires (module doc); nothing for an interleaved one."""
    mc = x.memory_config()
    if not _block(mc):
        if isinstance(program_config, LayerNormShardedMultiCoreProgramConfig):
            raise RuntimeError('TT_FATAL: layer_norm: a sharded program config needs a sharded '
                               'input')
        return
    pc = program_config
    if not isinstance(pc, LayerNormShardedMultiCoreProgramConfig):
        raise RuntimeError('stand-in: layer_norm: a block-sharded input without a '
                           'LayerNormShardedMultiCoreProgramConfig is not modelled')
    nh, nw, (gx, gy) = shard_counts(x.shape, mc)
    if nh * nw != gx * gy:
        raise RuntimeError(f'TT_FATAL: layer_norm: static_cast<uint64_t>(num_shards_h) * '
                           f'num_shards_w == num_cores ({nh} x {nw} shards on {gx}x{gy} cores)')
    sh, sw = mc.shard_spec.shape
    if (pc.block_h * TILE, pc.block_w * TILE) != (sh, sw) or pc.block_w % pc.subblock_w:
        raise RuntimeError(f'TT_FATAL: layer_norm: block {pc.block_h}x{pc.block_w} tiles (sub '
                           f'{pc.subblock_w}) must be the shard {sh}x{sw}')
    g = pc.compute_with_storage_grid_size
    if (g.x, g.y) != (gx, gy):
        raise RuntimeError(f'TT_FATAL: layer_norm: program grid {g} is not the shard grid '
                           f'{gx}x{gy}')
    for what, m in (('output', memory_config), ('residual', None if residual is None else
                                                  residual.memory_config())):
        if (what == 'output' or residual is not None) and m != mc:
            raise RuntimeError(f'TT_FATAL: layer_norm: a sharded input needs its {what} in the '
                               'same shard spec')


def check_matmul(name, pc, a, b, memory_config, transpose_mcast: bool) -> None:
    """A 2D-multicast matmul's blocks equal the shards of a block-sharded in0 / output."""
    for what, shape, mc, per in (
            ('in0', a.shape, a.memory_config(), None),
            ('output', tuple(a.shape[:-1]) + (b.shape[-1],), memory_config, pc.per_core_N)):
        if not _block(mc):
            continue
        check_block_spec(name, shape, mc, a._device)
        if (mc.shard_spec.orientation == ShardOrientation.COL_MAJOR) != transpose_mcast:
            raise RuntimeError(f'TT_FATAL: {name}: {what} shard orientation '
                               f'{mc.shard_spec.orientation} with transpose_mcast='
                               f'{transpose_mcast}')
        sh, sw = mc.shard_spec.shape
        if sh != pc.per_core_M * TILE or (per is not None and sw != per * TILE):
            raise RuntimeError(f'TT_FATAL: {name}: {what} shard {sh}x{sw} is not the block '
                               f'per_core_M x per_core_N = {pc.per_core_M}x{pc.per_core_N} tiles')
        if what == 'in0' and (sw // TILE) % pc.in0_block_w:
            raise RuntimeError(f'TT_FATAL: {name}: in0_block_w {pc.in0_block_w} must divide '
                               f'the in0 shard width ({sw // TILE} tiles)')


__all__ = ['to_memory_config']
