"""Compute ops of the ttnn stand-in: matmul/linear, layer_norm, softmax, eltwise.

Computes from the stored (already quantised) inputs and re-quantises every output to its dtype
(`dtype=` else the first input's). Sums (matmul, conv, norms, softmax) and functions (exp, erf,
sqrt) are evaluated in float64 and rounded once to float32 (`numerics.rounded`): the same bits
on every CPU.

FPU model of matmul/SDPA/conv (`fpu_pairs`, `fpu_matmul`), after the Tensix ISA's functional model
of MVMUL (tenstorrent tt-isa-documentation, WormholeB0 MVMUL.md / ELWMUL.md
`SrcAFidelityBits`/`SrcBFidelityBits`; Blackhole's FPU is the same): a matmul puts in0 (the
activations) in SrcB and in1 (the weights) in SrcA (the LLK matmul role swap, tt-llk
`llk_unpack_AB_matmul`: "In0 -> srcB, In1 -> srcA"). The multipliers take 5 bits of a SrcA
significand and 7 of SrcB; fidelity phase p multiplies SrcA's first part (hidden bit + 4
mantissa bits) or, when p & 1, its next 5 bits, with SrcB's first part (hidden bit + 6) or, when
p & 2, its next 4 bits. LoFi runs phase 0, HiFi2 phases 0-1, HiFi3 0-2, HiFi4 0-3, so
  LoFi  = trunc6(in0) @ trunc4(in1)        HiFi2 = trunc6(in0) @ trunc9(in1)
  HiFi3 = HiFi2 + (in0 - trunc6(in0)) @ trunc4(in1)              HiFi4 = in0 @ in1
(truncN keeps N explicit mantissa bits, rounding toward zero: the masks of the ISA model). For a
bf16 or bfloat8_b operand (7 / at most 6 significant mantissa bits) HiFi2 is exact on in1 and
drops in0's last bit; LoFi also drops in1's last 2-3 bits. HiFi4 keeps SrcA's TF32 LSB, which
the ISA ignores (float32 weights only; a 2^-11 relative difference left unmodelled).
Destination: with `fp32_dest_acc_en` Dst is fp32 (modelled exact); without it Dst holds bf16 and
every MVMUL (16 deep in K) adds its product into it with a bf16 rounding; the phases of one step
are summed before that rounding here (the hardware rounds after each phase). Partials that
leave Dst between K blocks (intermediate CB in the output format) are not modelled. Not
bit-exact: the ISA calls its own model "a rough guide" for floating point (operation order,
internal precision).
float32 matmul operands enter the FPU's 19-bit source registers as TF32
(tenstorrent/tt-metal #31493): they keep 10 explicit mantissa bits here (truncated, the
pessimistic choice).
"""
from __future__ import annotations

import math

import torch

from . import numerics
from .launch import launch
from .ops_shard import check_layer_norm as check_sharded_layer_norm
from .ops_shard import check_matmul as check_sharded_matmul
from .tensor import Tensor
from .types import (
    BufferType,
    DataType,
    Layout,
    MathFidelity,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    UnaryOpType,
)

TILE = numerics.TILE
f64, rounded = numerics.f64, numerics.rounded


def _require_tile(name, *tensors):
    for t in tensors:
        if t.layout != Layout.TILE:
            raise RuntimeError(f'TT_FATAL: {name}: input must be in TILE layout, got {t.layout}')


def _truncate(x: torch.Tensor, keep_bits: int) -> torch.Tensor:
    """Keep the top `keep_bits` explicit mantissa bits of float32 values (round toward zero)."""
    bits = x.contiguous().view(torch.int32)
    mask = ~((1 << (23 - keep_bits)) - 1)
    return (bits & mask).view(torch.float32)


def tf32_operand(x: torch.Tensor, dtype) -> torch.Tensor:
    """What the FPU sees of a matmul/conv operand stored as `dtype` (float32 -> TF32)."""
    if dtype != DataType.FLOAT32 or x.is_meta or numerics.exact_on():
        return x
    return _truncate(x, 10)


# Explicit mantissa bits a fidelity phase takes from each source register (ISA model).
SRCA_HI, SRCA_ALL = 4, 9          # SrcA = in1 (weights): hidden + 4, then the next 5
SRCB_HI = 6                       # SrcB = in0 (activations): hidden + 6, then the next 4
DST_STEP = 16                     # K depth of one MVMUL: a bf16 Dst is rounded after each


def fpu_pairs(in0, in1, fidelity):
    """(in0 part, in1 part) pairs whose products sum to what `fidelity`'s phases compute."""
    if fidelity in (MathFidelity.HiFi4, None) or in0.is_meta or numerics.exact_on():
        return [(in0, in1)]
    a_hi, b_hi = _truncate(in0, SRCB_HI), _truncate(in1, SRCA_HI)
    if fidelity == MathFidelity.LoFi:
        return [(a_hi, b_hi)]
    pairs = [(a_hi, _truncate(in1, SRCA_ALL))]
    if fidelity == MathFidelity.HiFi3:
        pairs.append((in0 - a_hi, b_hi))
    return pairs


def fidelity_of(cfg):
    """The math fidelity a compute kernel config selects (ttnn's matmul default: HiFi2)."""
    if cfg is None or cfg.math_fidelity == MathFidelity.Invalid:
        return MathFidelity.HiFi2
    return cfg.math_fidelity


def fpu_matmul(in0, in1, cfg):
    """in0 @ in1 as the FPU computes it under compute kernel config `cfg` (module doc)."""
    fidelity = fidelity_of(cfg)
    fp32_acc = cfg is not None and cfg.fp32_dest_acc_en
    if fp32_acc or in0.is_meta or numerics.exact_on():
        return numerics.jitter(rounded(sum(
            torch.matmul(f64(a), f64(b)) for a, b in fpu_pairs(in0, in1, fidelity))))
    pairs = fpu_pairs(in0, in1, fidelity)
    acc = 0.0
    for k in range(0, in0.shape[-1], DST_STEP):       # a bf16 Dst after every 16-deep step
        part = sum(torch.matmul(f64(a[..., k:k + DST_STEP]), f64(b[..., k:k + DST_STEP, :]))
                   for a, b in pairs)
        acc = numerics.round_bf16(acc + part)        # float64 sum -> float32 -> bf16
    return acc


def _block_problems(pc, kt: int, cfg) -> list[str]:
    """What every multicast config must satisfy: K blocks, the output subblock and its size."""
    problems = []
    if kt % pc.in0_block_w:
        problems.append(f'in0_block_w {pc.in0_block_w} must divide Kt {kt}')
    if pc.per_core_M % pc.out_subblock_h or pc.per_core_N % pc.out_subblock_w:
        problems.append(f'out_subblock {pc.out_subblock_h}x{pc.out_subblock_w} must divide '
                        f'per_core {pc.per_core_M}x{pc.per_core_N}')
    limit = 4 if cfg is not None and cfg.fp32_dest_acc_en else 8
    if pc.out_subblock_h * pc.out_subblock_w > limit:
        problems.append(f'out_subblock_h * out_subblock_w <= available_reg_count ({limit})')
    return problems


def _check_2d_mcast(name, pc, a, b, cfg):
    """What the real 2D-multicast matmul validates about its program config (tile counts)."""
    grid = a._device.compute_with_storage_grid_size() if a._device else None
    g = pc.compute_with_storage_grid_size
    if grid is not None and (g.x > grid.x or g.y > grid.y):
        raise RuntimeError(f'TT_FATAL: {name}: program config grid {g} exceeds the device grid')
    mt = -(-math.prod(a.shape[:-1]) // TILE) if pc.fuse_batch else -(-a.shape[-2] // TILE)
    kt, nt = -(-a.shape[-1] // TILE), -(-b.shape[-1] // TILE)
    rows, cols = (g.x, g.y) if pc.transpose_mcast else (g.y, g.x)
    problems = _block_problems(pc, kt, cfg)
    if -(-mt // pc.per_core_M) > rows or -(-nt // pc.per_core_N) > cols:
        problems.append(f'{mt}x{nt} output tiles need more than the {rows}x{cols} cores at '
                        f'per_core {pc.per_core_M}x{pc.per_core_N}')
    if problems:
        raise RuntimeError(f'TT_FATAL: {name}: ' + '; '.join(problems))


def _check_1d_in0_reuse(name, pc, a, b, cfg):
    """What the real 1D matmul validates about its config when in0 is reused (probed on 0.81.1).

    Per batch of in1 the output is Mt x Nt tiles: one block covers all of N (num_blocks_x == 1),
    per_core_M <= Mt, in0_block_w divides Kt, the subblock divides the block and fits the
    destination (4 tiles with fp32 accumulation, else 8).
    """
    mt, kt, nt = (-(-a.shape[-2] // TILE), -(-a.shape[-1] // TILE), -(-b.shape[-1] // TILE))
    problems = _block_problems(pc, kt, cfg)
    if -(-nt // pc.per_core_N) != 1:
        problems.append(f'num_blocks_x == 1 (per_core_N {pc.per_core_N}, Nt {nt})')
    if pc.per_core_M > mt:
        problems.append(f'per_core_M <= Mt ({pc.per_core_M} > {mt})')
    if problems:
        raise RuntimeError(f'TT_FATAL: {name}: ' + '; '.join(problems))


def _contract_check(name, a, b):
    k = a.shape[-1]
    if k != b.shape[-2]:
        raise RuntimeError(f'TT_FATAL: {name}: inner dims differ: {tuple(a.shape)} x '
                           f'{tuple(b.shape)}')
    if k % TILE and not (a._pad_defined and b._pad_defined):
        raise RuntimeError(f'TT_FATAL: {name}: contracts over a non-tile-aligned dim ({k}) whose '
                           'padding is undefined (reshape/slice without pad_value)')


def _in0_reuse_check(name, a, b, memory_config, program_config):
    """A batch-1 in0 reused across in1's batches: which programs the real library allows.

    Seen on the real ttnn 0.81.1 (test/ttnn_dryrun/test_standin_agrees.py): with the library
    choosing the program, DRAM-interleaved in1 and output pass and an L1 one is rejected (at
    some shapes it passes too; not modelled: the engine never asks); a 1D config with
    mcast_in0=False and fuse_batch=False passes with L1 or DRAM (_check_1d_in0_reuse), other
    configs do not.
    """
    if all(d == 1 for d in b.shape[:-2]) or any(d != 1 for d in a.shape[:-2]):
        if isinstance(program_config, MatmulMultiCoreReuseMultiCast1DProgramConfig):
            raise RuntimeError(f'stand-in: {name}: a 1D program config is modelled only for a '
                               'batch-1 in0 reused across in1\'s batches')
        return

    def dram(mc):
        return mc is None or (mc.buffer_type == BufferType.DRAM and not mc.is_sharded())
    if isinstance(program_config, MatmulMultiCoreReuseMultiCast1DProgramConfig) and \
            not program_config.fuse_batch and not program_config.mcast_in0 and \
            len(a.shape) == len(b.shape) >= 3 and dram(a.memory_config()):
        return
    ok = (len(a.shape) == len(b.shape) >= 3 and program_config is None and
          dram(a.memory_config()) and dram(b.memory_config()) and dram(memory_config))
    if not ok:
        raise RuntimeError(f'TT_FATAL: {name}: a_shape[i] == b_shape[i] || (a_shape[i] == 1 && '
                           f'in0_reuse()): in0 {tuple(a.shape)} reused across the batches of in1 '
                           f'{tuple(b.shape)} needs matching ranks, DRAM-interleaved in1 and '
                           'output and the library\'s own program')


def matmul(input_tensor_a, input_tensor_b, *, transpose_a=False, transpose_b=False,
           memory_config=None, dtype=None, program_config=None, activation=None,
           compute_kernel_config=None, core_grid=None, output_tile=None,
           optional_output_tensor=None):
    return linear(input_tensor_a, input_tensor_b, memory_config=memory_config, dtype=dtype,
                  program_config=program_config, activation=activation,
                  compute_kernel_config=compute_kernel_config, core_grid=core_grid,
                  _name='matmul')


def linear(input_tensor_a, input_tensor_b, *, bias=None, transpose_a=False, transpose_b=False,
           memory_config=None, dtype=None, program_config=None, activation=None,
           compute_kernel_config=None, core_grid=None, output_tile=None,
           optional_output_tensor=None, _name='linear'):
    a, b = input_tensor_a, input_tensor_b
    _require_tile(_name, a, b, *([bias] if bias is not None else []))
    if transpose_a or transpose_b:
        raise RuntimeError('stand-in: transpose_a/transpose_b are not modelled')
    _contract_check(_name, a, b)
    _in0_reuse_check(_name, a, b, memory_config, program_config)
    if core_grid is not None:
        grid = a._device.compute_with_storage_grid_size() if a._device else None
        if grid is not None and (core_grid.x > grid.x or core_grid.y > grid.y):
            raise RuntimeError(f'TT_FATAL: {_name}: core_grid {core_grid} exceeds the device '
                               f'grid ({grid.x}x{grid.y})')
    if activation not in (None, 'gelu', 'relu'):
        raise RuntimeError(f'stand-in: {_name}: activation {activation!r} not modelled')
    if isinstance(program_config, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        _check_1d_in0_reuse(_name, program_config, a, b, compute_kernel_config)
        if program_config.fused_activation is not None:
            raise RuntimeError(f'stand-in: {_name}: a fused activation in a 1D config is not '
                               'modelled')
    elif isinstance(program_config, MatmulMultiCoreReuseMultiCastProgramConfig):
        _check_2d_mcast(_name, program_config, a, b, compute_kernel_config)
        check_sharded_matmul(_name, program_config, a, b, memory_config,
                             program_config.transpose_mcast)
        fused = program_config.fused_activation
        if fused is not None:
            if activation is not None:
                raise RuntimeError(f'TT_FATAL: {_name}: activation= and a program config with a '
                                   'fused activation together')
            activation = {UnaryOpType.GELU: 'gelu', UnaryOpType.RELU: 'relu'}.get(
                fused.op_type)
            if activation is None:
                raise RuntimeError(f'stand-in: {_name}: fused {fused.op_type} not modelled')
    elif program_config is not None:
        raise RuntimeError(f'stand-in: {_name}: program config {program_config!r} not modelled')
    if not isinstance(program_config, MatmulMultiCoreReuseMultiCastProgramConfig) and any(
            m is not None and m.is_sharded() for m in (a.memory_config(), memory_config)):
        raise RuntimeError(f'stand-in: {_name}: sharded operands are modelled with a 2D '
                           'multicast program config only')
    out_dtype = a.dtype if dtype is None else dtype
    out_shape = tuple(max(x, y) for x, y in zip(a.shape[:-2], b.shape[:-2])) if len(
        b.shape) == len(a.shape) else tuple(a.shape[:-2])
    out_shape = out_shape + (a.shape[-2], b.shape[-1])
    inputs = [a, b] + ([bias] if bias is not None else [])

    def fn(d):
        y = fpu_matmul(tf32_operand(d[0], a.dtype), tf32_operand(d[1], b.dtype),
                       compute_kernel_config)
        if bias is not None:
            y = y + d[2][..., :1, :]                       # row 0 of the (1, N) bias tile
        if activation == 'gelu':
            y = rounded(torch.nn.functional.gelu(f64(y)))     # accurate (erf) GELU
        elif activation == 'relu':
            y = torch.relu(y)
        return [(numerics.quantize(y, out_dtype), out_shape, out_dtype, Layout.TILE)]
    static = (repr(program_config), repr(compute_kernel_config), activation, str(out_dtype),
              repr(core_grid))
    return launch(_name, inputs, static, fn, memory_config=memory_config)[0]


def _last_dim_check(name, x):
    if x.shape[-1] % TILE:
        raise RuntimeError(f'TT_FATAL: {name}: last dim {x.shape[-1]} is not tile-aligned; its '
                           'padding would enter the reduction')


def layer_norm(input_tensor, *, epsilon=1e-12, weight=None, bias=None,
               residual_input_tensor=None, memory_config=None, program_config=None,
               compute_kernel_config=None):
    x = input_tensor
    extra = [t for t in (residual_input_tensor, weight, bias) if t is not None]
    _require_tile('layer_norm', x, *extra)
    check_sharded_layer_norm(x, memory_config, program_config, residual_input_tensor)
    _last_dim_check('layer_norm', x)
    n = x.shape[-1]
    has_res, has_w, has_b = (residual_input_tensor is not None, weight is not None,
                             bias is not None)

    def fn(d):
        v = d[0] + d[1] if has_res else d[0]
        i = 1 + has_res
        y = rounded(torch.nn.functional.layer_norm(f64(v), (n,), eps=epsilon))
        if has_w:
            y = y * d[i][..., :1, :]
            i += 1
        if has_b:
            y = y + d[i][..., :1, :]
        return [(numerics.quantize(y, x.dtype), tuple(x.shape), x.dtype, Layout.TILE)]
    return launch('layer_norm', [x] + extra, (epsilon, has_res, has_w, has_b,
                                              repr(compute_kernel_config)), fn,
                  memory_config=memory_config)[0]


def softmax(input_tensor, dim=-1, *, memory_config=None, compute_kernel_config=None,
            numeric_stable=True):
    x = input_tensor
    _require_tile('softmax', x)
    if dim not in (-1, len(x.shape) - 1):
        raise RuntimeError('stand-in: softmax only over the last dim')
    _last_dim_check('softmax', x)

    def fn(d):
        y = numerics.softmax(d[0])
        return [(numerics.quantize(y, x.dtype), tuple(x.shape), x.dtype, Layout.TILE)]
    return launch('softmax', [x], (repr(compute_kernel_config),), fn,
                  memory_config=memory_config)[0]


def _unary(name, f, x, memory_config, static=()):
    _require_tile(name, x)

    def fn(d):
        y = rounded(f(f64(d[0])))                      # exp, erf, sqrt: rounded once
        return [(numerics.quantize(y, x.dtype), tuple(x.shape), x.dtype, Layout.TILE,
                 x._pad_defined)]
    return launch(name, [x], static, fn, memory_config=memory_config)[0]


def gelu(input_tensor, *, fast_and_approximate_mode=False, memory_config=None,
         output_tensor=None, sub_core_grids=None):
    approx = 'tanh' if fast_and_approximate_mode else 'none'
    return _unary('gelu', lambda v: torch.nn.functional.gelu(v, approximate=approx),
                  input_tensor, memory_config, (approx,))


def relu(input_tensor, *, memory_config=None, output_tensor=None, sub_core_grids=None):
    return _unary('relu', torch.relu, input_tensor, memory_config)


def exp(input_tensor, *, fast_and_approximate_mode=False, memory_config=None,
        output_tensor=None, sub_core_grids=None):
    return _unary('exp', torch.exp, input_tensor, memory_config, (fast_and_approximate_mode,))


def expm1(input_tensor, *, memory_config=None, output_tensor=None, sub_core_grids=None):
    return _unary('expm1', torch.expm1, input_tensor, memory_config)


def sqrt(input_tensor, *, fast_and_approximate_mode=False, memory_config=None,
         output_tensor=None, sub_core_grids=None):
    return _unary('sqrt', torch.sqrt, input_tensor, memory_config)


def reciprocal(input_tensor, *, memory_config=None, output_tensor=None, sub_core_grids=None):
    return _unary('reciprocal', torch.reciprocal, input_tensor, memory_config)


def round(input_tensor, *, decimals=0, memory_config=None, output_tensor=None,  # noqa: A001
          sub_core_grids=None):
    """Half to even, as tt-metal's SFPU `round_even` (ckernel_sfpu_round.h) with decimals 0."""
    return _unary('round', lambda v: torch.round(v, decimals=decimals), input_tensor,
                  memory_config, (decimals,))


def clamp(input_tensor, min=None, max=None, *, memory_config=None,  # noqa: A002 (ttnn names)
          output_tensor=None):
    return _unary('clamp', lambda v: torch.clamp(v, min=min, max=max), input_tensor,
                  memory_config, (min, max))


def _binary(name, f, a, b, dtype, memory_config):
    if not isinstance(a, Tensor):
        raise RuntimeError(f'stand-in: {name}: first operand must be a tensor')
    tensors = [a] + ([b] if isinstance(b, Tensor) else [])
    _require_tile(name, *tensors)
    scalar = None if len(tensors) == 2 else float(b)
    out_dtype = a.dtype if dtype is None else dtype
    shape = tuple(torch.broadcast_shapes(tuple(a.shape), tuple(b.shape))) if scalar is None \
        else tuple(a.shape)
    defined = all(t._pad_defined for t in tensors)

    def fn(d):
        va = numerics.unpad(d[0], tuple(a.shape))
        vb = scalar if scalar is not None else numerics.unpad(d[1], tuple(b.shape))
        y = f(va, vb)
        y = numerics.pad_to_tiles(y, 0.0 if defined else math.nan)
        return [(numerics.quantize(y, out_dtype), shape, out_dtype, Layout.TILE, defined)]
    return launch(name, tensors, (str(out_dtype), scalar), fn, memory_config=memory_config)[0]


def add(input_tensor_a, input_tensor_b, *, fast_and_approximate_mode=True, dtype=None,
        memory_config=None, output_tensor=None):
    return _binary('add', torch.add, input_tensor_a, input_tensor_b, dtype, memory_config)


def subtract(input_tensor_a, input_tensor_b, *, fast_and_approximate_mode=True, dtype=None,
             memory_config=None, output_tensor=None):
    return _binary('subtract', torch.sub, input_tensor_a, input_tensor_b, dtype, memory_config)


def multiply(input_tensor_a, input_tensor_b, *, fast_and_approximate_mode=False, dtype=None,
             memory_config=None, output_tensor=None):
    return _binary('multiply', torch.mul, input_tensor_a, input_tensor_b, dtype, memory_config)


def maximum(input_tensor_a, input_tensor_b, *, dtype=None, memory_config=None,
            output_tensor=None):
    def f(x, y):
        return torch.clamp(x, min=y) if isinstance(y, float) else torch.maximum(x, y)
    return _binary('maximum', f, input_tensor_a, input_tensor_b, dtype, memory_config)


__all__ = ['linear', 'matmul', 'layer_norm', 'softmax', 'gelu', 'relu', 'exp', 'expm1', 'sqrt',
           'reciprocal', 'clamp', 'add', 'subtract', 'multiply', 'maximum', 'DataType']
