"""`ttnn.transformer` of the stand-in: head split/concat and SDPA (docs/ttnn.md §5).

Traps reproduced: split-heads returns K transposed unless `transpose_key=False`; SDPA is causal
unless `is_causal=False`; head dims must be tile multiples. A sequence whose logical length is
not a tile multiple is accepted, as by the real 0.81.1 (dry run, docs/ttnn-levers.md "Mask-free
SDPA"): split/concat heads carry the tile-padded rows; SDPA pads Q and K to multiples of its
chunks (which need not divide the lengths) and, non-causal, masks every key past the logical
length with -inf in its kernel, with or without an explicit mask (tt-metal
sdpa_program_factory.cpp `use_padded_mask`, dataflow_common.hpp
`generate_noncausal_padded_mask`: a partial tile is masked column by column).
SDPA numerics: Q K^T and P V through the FPU model of ops_math (Q and P are in0, K^T and V in1)
under the compute kernel config; the softmax in float32; P and the running output between K
chunks of the program config (one chunk when there is none) rounded to bf16: tt-metal's SDPA
keeps its intermediate buffers in bf16 even with fp32_dest_acc_en (sdpa_program_factory.cpp
`im_df = Float16_b`, tenstorrent/tt-metal #13364). The online-softmax rescaling between chunks is
not modelled (exact softmax over the whole row).
"""
from __future__ import annotations

import math

import torch

from . import numerics
from .launch import launch
from .ops_math import _require_tile, fpu_matmul, tf32_operand
from .types import BufferType, DataType, Layout

TILE = numerics.TILE


def split_query_key_value_and_split_heads(input_tensor, kv_input_tensor=None, *, num_heads,
                                          num_kv_heads=None, transpose_key=True,
                                          memory_config=None):
    x = input_tensor
    ins = [x] + ([kv_input_tensor] if kv_input_tensor is not None else [])
    _require_tile('split_query_key_value_and_split_heads', *ins)
    if len(x.shape) != 3:
        raise RuntimeError(f'TT_FATAL: split heads expects [B, S, 3*D], got {tuple(x.shape)}')
    b, s, w = x.shape
    d = w // 3 if kv_input_tensor is None else w
    dh = d // num_heads
    if dh % TILE:
        raise RuntimeError(f'TT_FATAL: split heads needs a tile-aligned head_dim (got {dh})')
    s_kv = s if kv_input_tensor is None else kv_input_tensor.shape[1]

    def heads(v, n):          # (B, n rows tile-padded, 3D?) -> (B, H, n, dh)
        return v.reshape(b, v.shape[1], num_heads, dh).permute(0, 2, 1, 3).contiguous()

    def fn(dd):
        v = dd[0]
        if kv_input_tensor is None:
            q, k, vv = v[..., :d], v[..., d:2 * d], v[..., 2 * d:3 * d]
        else:
            q, k, vv = v, dd[1][..., :d], dd[1][..., d:2 * d]
        q, k, vv = heads(q, s), heads(k, s_kv), heads(vv, s_kv)
        kshape = (b, num_heads, dh, s_kv) if transpose_key else (b, num_heads, s_kv, dh)
        if transpose_key:
            k = k.transpose(-2, -1).contiguous()
        return [(q, (b, num_heads, s, dh), x.dtype, Layout.TILE),
                (k, kshape, x.dtype, Layout.TILE),
                (vv, (b, num_heads, s_kv, dh), x.dtype, Layout.TILE)]
    return tuple(launch('split_query_key_value_and_split_heads', ins,
                        (num_heads, transpose_key), fn, memory_config=memory_config))


def concatenate_heads(input_tensor, *, memory_config=None):
    x = input_tensor
    _require_tile('concatenate_heads', x)
    b, h, s, dh = x.shape

    def fn(d):
        y = d[0].permute(0, 2, 1, 3).reshape(b, d[0].shape[2], h * dh)
        return [(y, (b, s, h * dh), x.dtype, Layout.TILE)]
    return launch('concatenate_heads', [x], (), fn, memory_config=memory_config)[0]


def scaled_dot_product_attention(input_tensor_q, input_tensor_k, input_tensor_v, *,
                                 attn_mask=None, is_causal=True, scale=None,
                                 sliding_window_size=None, memory_config=None,
                                 program_config=None, compute_kernel_config=None):
    q, k, v = input_tensor_q, input_tensor_k, input_tensor_v
    ins = [q, k, v] + ([attn_mask] if attn_mask is not None else [])
    _require_tile('scaled_dot_product_attention', *ins)
    if is_causal and attn_mask is not None:
        raise RuntimeError('TT_FATAL: SDPA: is_causal=True cannot take an attn_mask')
    b, h, s, dh = q.shape
    s_kv = k.shape[2]
    if k.shape[3] != dh or tuple(v.shape) != (b, h, s_kv, dh):
        raise RuntimeError(f'TT_FATAL: SDPA expects K, V as [B, H, S, dh] (not pre-transposed); '
                           f'got K {tuple(k.shape)}, V {tuple(v.shape)}')
    if dh % TILE:
        raise RuntimeError('TT_FATAL: SDPA needs a tile-aligned head dim')
    if program_config is not None:
        grid = q._device.compute_with_storage_grid_size()
        g = program_config.compute_with_storage_grid_size
        if g.x > grid.x or g.y > grid.y:
            raise RuntimeError(f'TT_FATAL: SDPA program config grid {g} exceeds device {grid}')
        if program_config.q_chunk_size % TILE or program_config.k_chunk_size % TILE:
            raise RuntimeError('TT_FATAL: SDPA chunk sizes must be tile multiples')
    if attn_mask is not None and attn_mask.memory_config().buffer_type != BufferType.DRAM:
        # ttnn 0.81.1 sdpa_device_operation.cpp:165 (found by the dry run)
        raise RuntimeError('TT_FATAL: When mask is provided to SDPA, it must be in DRAM')
    if attn_mask is not None and tuple(attn_mask.shape) != (b, 1, s, s_kv):
        raise RuntimeError(f'TT_FATAL: SDPA mask must be [B, 1, S, S_kv], got '
                           f'{tuple(attn_mask.shape)}')
    sc = 1.0 / math.sqrt(dh) if scale is None else float(scale)

    def fn(d):
        d = [tf32_operand(x, t.dtype) for x, t in zip(d[:3], (q, k, v))] + list(d[3:])
        cfg = compute_kernel_config
        att = fpu_matmul(d[0], d[1].transpose(-2, -1), cfg) * sc   # tile-padded rows / keys
        sq, sk = att.shape[-2], att.shape[-1]
        if attn_mask is not None:
            att = att + d[3][..., :sq, :sk]
        if is_causal:
            causal = torch.ones(sq, sk, dtype=torch.bool, device=att.device).tril()
            att = att.masked_fill(~causal, float('-inf'))
        elif sk != s_kv:                                # keys past the logical length
            att[..., s_kv:] = float('-inf')
        p = numerics.quantize(numerics.softmax(att), DataType.BFLOAT16)
        chunk = sk if program_config is None else program_config.k_chunk_size
        y = 0.0
        for c in range(0, sk, chunk):                 # per K chunk, then into a bf16 buffer
            y = numerics.quantize(y + fpu_matmul(p[..., c:c + chunk], d[2][..., c:c + chunk, :],
                                                 cfg), DataType.BFLOAT16)
        return [(numerics.quantize(y, q.dtype), (b, h, s, dh), q.dtype, Layout.TILE)]
    static = (is_causal, sc, repr(program_config), repr(compute_kernel_config))
    return launch('scaled_dot_product_attention', ins, static, fn,
                  memory_config=memory_config)[0]
