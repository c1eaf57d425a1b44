"""`ttnn.experimental` of the stand-in: the fused residual matmul and the single-kernel RoPE.

Semantics from the 0.81.1 wheel's own kernels (ttnn/cpp/ttnn/operations/experimental/...):

dit_minimal_matmul_addcmul_fused (minimal_matmul/device/kernels/compute.cpp
`add_bias_and_addcmul_block`): out = residual + scalar * (x @ W + bias) * gate, in steps whose
results are packed to an intermediate buffer in the destination's format (float32 with
fp32_dest_acc_en, else bf16; "Intermediate DFB dataformat is the same datatype as DST register"):
the matmul (ops_math.fpu_matmul); + bias (FPU `add_tiles_bcast`: both operands through the
19-bit source registers, so a float32 operand enters as TF32); * gate (a float32 gate: SFPU
`mul_binary_tile`; else FPU `mul_tiles_bcast`; here one float32 product, as ops_math's
eltwise ops) and * scalar (SFPU) in the same destination; + residual (FPU `add_tiles`: TF32 operands
again), packed to the output dtype (numerics.quantize). So a float32 residual is added at TF32
precision, where ttnn.add of two float32 tensors (an SFPU op) adds it whole.
Validation seen on the real library (dry run): the residual's tile size must equal
the weight's ("ternary_a_tile_size == in1_tile_size", minimal_matmul_program_descriptor.cpp), the
gate is a [..., 1, N] row, the residual has the output's shape.

rotary_embedding_llama (transformer/rotary_embedding_llama/device/kernels/compute/
rotary_embedding_llama.cpp, prefill): per 32-wide tile of the head dim, rotated = x @ trans_mat
(a matmul under the compute config), sin_part = rotated * sin, cos_part = x * cos (FPU
multiplies; exact products here, as ops_math's eltwise ops), out = cos_part + sin_part, every
intermediate packed to bf16.
All four inputs bf16 (real TT_FATAL), head dim a multiple of 32, the input interleaved, cos/sin
[1, 1 or heads, S, head_dim], trans_mat [1, 1, 32, 32]. No compute config: HiFi4 (tt-metal's
rotary_embedding_llama.cpp default).
"""
from __future__ import annotations

import torch

from . import numerics
from .launch import launch
from .ops_math import _require_tile, fpu_matmul, tf32_operand
from .types import DataType, Layout, MathFidelity, WormholeComputeKernelConfig

TILE = numerics.TILE
_TILE_BYTES = {DataType.FLOAT32: 4096, DataType.BFLOAT16: 2048, DataType.BFLOAT8_B: 1088,
               DataType.BFLOAT4_B: 576}


def _check_minimal_config(name, cfg, device):
    if cfg is None:
        return
    blocks = (cfg.M_block_size, cfg.K_block_size, cfg.N_block_size, cfg.subblock_h,
              cfg.subblock_w)
    problems = []
    if min(blocks) <= 0:
        problems.append(f'block and subblock sizes must be > 0, got {blocks}')
    elif cfg.M_block_size % cfg.subblock_h or cfg.N_block_size % cfg.subblock_w:
        problems.append(f'M_block_size % subblock_h == 0 and N_block_size % subblock_w == 0 '
                        f'(got {blocks})')
    g, grid = cfg.compute_with_storage_grid_size, device.compute_with_storage_grid_size()
    if g.x > grid.x or g.y > grid.y:
        problems.append(f'config grid {g} exceeds the device grid {grid}')
    if problems:
        raise RuntimeError(f'TT_FATAL: {name}: ' + '; '.join(problems))


def dit_minimal_matmul_addcmul_fused(matmul_input_tensor, matmul_weight_tensor, scalar,
                                     addcmul_input_tensor1, addcmul_input_tensor2,
                                     bias_tensor=None, *, config=None, memory_config=None,
                                     dtype=None, compute_kernel_config=None):
    name = 'dit_minimal_matmul_addcmul_fused'
    x, w, res, gate = (matmul_input_tensor, matmul_weight_tensor, addcmul_input_tensor1,
                       addcmul_input_tensor2)
    extra = [bias_tensor] if bias_tensor is not None else []
    _require_tile(name, x, w, res, gate, *extra)
    if any(d != 1 for d in w.shape[:-2]) or (bias_tensor is not None and any(
            d != 1 for d in bias_tensor.shape[:-1])):
        raise RuntimeError(f'TT_FATAL: {name}: weight and bias need 1 in every leading dim')
    if x.shape[-1] != w.shape[-2]:
        raise RuntimeError(f'TT_FATAL: {name}: inner dims differ: {tuple(x.shape)} x '
                           f'{tuple(w.shape)}')
    out_shape = tuple(x.shape[:-1]) + (w.shape[-1],)
    if tuple(res.shape) != out_shape:
        raise RuntimeError(f'TT_FATAL: {name}: addcmul_input_tensor1 {tuple(res.shape)} must '
                           f'have the output shape {out_shape}')
    if gate.shape[-1] != w.shape[-1] or any(d != 1 for d in gate.shape[:-1]):
        raise RuntimeError(f'TT_FATAL: {name}: addcmul_input_tensor2 must be a [..., 1, N] row, '
                           f'got {tuple(gate.shape)}')
    if _TILE_BYTES.get(res.dtype) != _TILE_BYTES.get(w.dtype):
        raise RuntimeError(f'TT_FATAL: {name}: ternary_a_tile_size == in1_tile_size (residual '
                           f'{res.dtype}, weight {w.dtype})')
    _check_minimal_config(name, config, x._device)
    cfg = compute_kernel_config if compute_kernel_config is not None else \
        WormholeComputeKernelConfig(math_fidelity=MathFidelity.HiFi2, fp32_dest_acc_en=True,
                                    packer_l1_acc=True)
    inter = DataType.FLOAT32 if cfg.fp32_dest_acc_en else DataType.BFLOAT16
    out_dtype = x.dtype if dtype is None else dtype
    k = float(scalar)
    inputs = [x, w, res, gate] + extra

    def fn(d):
        y = numerics.quantize(fpu_matmul(tf32_operand(d[0], x.dtype), tf32_operand(d[1], w.dtype),
                                     cfg), inter)
        if bias_tensor is not None:                # FPU add: TF32 operands
            y = numerics.quantize(tf32_operand(y, inter) + tf32_operand(
                d[4][..., :1, :], bias_tensor.dtype), inter)
        y = numerics.quantize(y * d[3][..., :1, :] * k, inter)
        out = tf32_operand(y, inter) + tf32_operand(d[2], res.dtype)
        return [(numerics.quantize(out, out_dtype), out_shape, out_dtype, Layout.TILE)]
    static = (k, repr(config), repr(compute_kernel_config), str(out_dtype))
    mc = memory_config if memory_config is not None else x.memory_config()
    return launch(name, inputs, static, fn, memory_config=mc)[0]


def rotary_embedding_llama(input_tensor, cos_cache, sin_cache, trans_mat, *,
                           is_decode_mode=False, memory_config=None, compute_kernel_config=None):
    name = 'rotary_embedding_llama'
    x, cos, sin, tm = input_tensor, cos_cache, sin_cache, trans_mat
    _require_tile(name, x, cos, sin, tm)
    if is_decode_mode:
        raise RuntimeError(f'stand-in: {name}: decode mode is not modelled')
    if any(t.dtype != DataType.BFLOAT16 for t in (x, cos, sin, tm)):
        raise RuntimeError(f'TT_FATAL: {name}: input_tensor.dtype() == cos.dtype() && ... == '
                           f'DataType::BFLOAT16 (got {[str(t.dtype) for t in (x, cos, sin, tm)]})')
    if x.memory_config() is not None and x.memory_config().is_sharded():
        raise RuntimeError(f'TT_FATAL: {name}: Input tensor must be interleaved in prefill mode')
    b, h, s, dh = x.shape
    if dh % TILE or dh > 256:
        raise RuntimeError(f'TT_FATAL: {name}: head dim {dh} must be a multiple of 32, <= 256')
    if tuple(cos.shape) != tuple(sin.shape):
        raise RuntimeError(f'TT_FATAL: {name}: Cos and Sin dims must match')
    if cos.shape[0] != 1 or cos.shape[1] not in (1, h) or cos.shape[-1] != dh:
        raise RuntimeError(f'TT_FATAL: {name}: Cos dims must match input dims (cos '
                           f'{tuple(cos.shape)}, input {tuple(x.shape)})')
    if -(-cos.shape[2] // TILE) < -(-s // TILE):
        raise RuntimeError(f'stand-in: {name}: tables shorter than the sequence are not '
                           'modelled (rows past them are not rotated)')
    if tuple(tm.shape) != (1, 1, TILE, TILE):
        raise RuntimeError(f'TT_FATAL: {name}: Transformation matrix must be [1, 1, 32, 32]')
    cfg = compute_kernel_config if compute_kernel_config is not None else \
        WormholeComputeKernelConfig(math_fidelity=MathFidelity.HiFi4)
    bf16 = DataType.BFLOAT16

    def fn(d):
        v = d[0]                                    # (b, h, S padded, dh)
        rows = v.shape[-2]
        c, sn = d[1][..., :rows, :], d[2][..., :rows, :]
        t = d[3][0, 0]
        rot = torch.cat([numerics.quantize(fpu_matmul(v[..., j:j + TILE], t, cfg), bf16)
                         for j in range(0, dh, TILE)], -1)
        sin_part = numerics.quantize(rot * sn, bf16)
        cos_part = numerics.quantize(v * c, bf16)
        return [(numerics.quantize(cos_part + sin_part, bf16), tuple(x.shape), bf16,
                 Layout.TILE, x._pad_defined)]
    static = (repr(compute_kernel_config),)
    return launch(name, [x, cos, sin, tm], static, fn, memory_config=memory_config)[0]


__all__ = ['dit_minimal_matmul_addcmul_fused', 'rotary_embedding_llama']
