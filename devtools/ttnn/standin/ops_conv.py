"""conv2d / conv_transpose2d of the ttnn stand-in (docs/ttnn.md §5).

All keyword-only; input is flattened NHWC (1, 1, N*H*W, C); output (1, 1, N*Ho*Wo, Cout) TILE.
Host weights (OIHW / IOHW) are prepared and uploaded by the op itself, which is host I/O and so
raises inside a trace capture: pass the device weights returned by `return_weights_and_bias=True`
on the warm-up run. Prepared weights are tied to the conv geometry they were prepared for.
Kernels larger than 1x1 allocate from L1_SMALL: `l1_small_size == 0` raises.
Numerics: the activations are in0 and the weights in1 of the FPU model (ops_math.fpu_pairs:
operand truncation per math fidelity); the accumulator is modelled exact (no bf16 Dst rounding).
"""
from __future__ import annotations

import torch

from . import numerics
from .launch import launch
from .ops_math import fidelity_of, fpu_pairs, tf32_operand
from .tensor import Tensor
from .types import DataType, Layout, UnaryOpType


def _quantize_conv_weight(w: torch.Tensor, dtype, transposed: bool) -> torch.Tensor:
    """Quantise conv weights as prepared: a tiled [kh*kw*Cin, Cout] matrix.

    Block-float groups run along Cout; the OIHW/IOHW values are returned.
    """
    o_ax, i_ax = (1, 0) if transposed else (0, 1)
    mat = w.permute(2, 3, i_ax, o_ax).reshape(-1, w.shape[o_ax])
    q = numerics.unpad(numerics.quantize(numerics.pad_to_tiles(mat, 0.0), dtype),
                       tuple(mat.shape))
    kh, kw = w.shape[2], w.shape[3]
    q = q.reshape(kh, kw, w.shape[i_ax], w.shape[o_ax])
    return q.permute(3, 2, 0, 1) if not transposed else q.permute(2, 3, 0, 1)


def _prepare(weight, bias, device, geometry, wdtype):
    device._check_host_io('conv weight preparation (host weights passed to conv)')
    transposed = geometry[0] == 'conv_transpose2d'
    w = Tensor(_quantize_conv_weight(weight._data, wdtype, transposed).contiguous(),
               weight.shape, wdtype, Layout.ROW_MAJOR, device=device)
    w._conv_geometry = geometry
    b = None
    if bias is not None:
        bdt = DataType.BFLOAT16 if wdtype == DataType.BFLOAT8_B else wdtype
        b = Tensor(numerics.quantize(bias._data, bdt), bias.shape, bdt, Layout.ROW_MAJOR,
                   device=device)
        b._conv_geometry = geometry
    return w, b


def _conv(name, *, input_tensor, weight_tensor, device, in_channels, out_channels, batch_size,
          input_height, input_width, kernel_size, stride, padding, dilation, groups, dtype,
          bias_tensor, conv_config, compute_config, memory_config, return_output_dim,
          return_weights_and_bias, transposed, output_padding=(0, 0)):
    kh, kw = kernel_size
    if (kh > 1 or kw > 1) and device.l1_small_size == 0:
        raise RuntimeError(f'TT_FATAL: {name}: Out of Memory: Not enough space to allocate '
                           'L1_SMALL buffer (open the device with l1_small_size > 0)')
    x = input_tensor
    # the library takes [N, H, W, C] (its documented format) or the flattened [1, 1, N*H*W, C]
    if tuple(x.shape) not in ((1, 1, batch_size * input_height * input_width, in_channels),
                              (batch_size, input_height, input_width, in_channels)):
        raise RuntimeError(f'TT_FATAL: {name}: input shape {tuple(x.shape)} does not match '
                           f'(1, 1, {batch_size}*{input_height}*{input_width}, {in_channels}) '
                           f'or ({batch_size}, {input_height}, {input_width}, {in_channels})')
    geometry = (name, in_channels, out_channels, batch_size, input_height, input_width,
                tuple(kernel_size), tuple(stride), tuple(padding), tuple(dilation), groups)
    wdtype = (conv_config.weights_dtype if conv_config is not None and
              conv_config.weights_dtype is not None else DataType.BFLOAT16)
    if weight_tensor._device is None:
        w, b = _prepare(weight_tensor, bias_tensor, device, geometry, wdtype)
    else:
        w, b = weight_tensor, bias_tensor
        for t in (w, b):
            if t is not None and getattr(t, '_conv_geometry', None) != geometry:
                raise RuntimeError(f'TT_FATAL: {name}: prepared weights were made for '
                                   f'{getattr(t, "_conv_geometry", None)}, not {geometry}')
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if transposed:
        oh = (input_height - 1) * sh - 2 * ph + dh * (kh - 1) + output_padding[0] + 1
        ow = (input_width - 1) * sw - 2 * pw + dw * (kw - 1) + output_padding[1] + 1
    else:
        oh = (input_height + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        ow = (input_width + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out_dtype = x.dtype if dtype is None else dtype
    act = conv_config.activation if conv_config is not None else None
    out_layout = conv_config.output_layout if conv_config is not None else Layout.TILE
    out_shape = (1, 1, batch_size * oh * ow, out_channels)
    inputs = [x, w] + ([b] if b is not None else [])

    def fn(d):
        d = [tf32_operand(d[0], x.dtype), tf32_operand(d[1], w.dtype)] + list(d[2:])
        v = numerics.unpad(d[0], tuple(x.shape)).reshape(batch_size, input_height, input_width,
                                                         in_channels).permute(0, 3, 1, 2)
        y = 0.0
        for vp, wp in fpu_pairs(v, d[1], fidelity_of(compute_config)):   # x: in0, w: in1
            vp, wp = numerics.f64(vp), numerics.f64(wp)        # summed in float64, rounded below
            if transposed:
                y = y + torch.nn.functional.conv_transpose2d(
                    vp, wp, None, stride, padding, tuple(output_padding), groups, dilation)
            else:
                y = y + torch.nn.functional.conv2d(vp, wp, None, stride, padding, dilation,
                                                   groups)
        y = numerics.jitter(numerics.rounded(y))
        if b is not None:
            y = y + d[2].reshape(1, -1, 1, 1)
        if act is not None:
            if act.op_type != UnaryOpType.RELU:
                raise RuntimeError(f'stand-in: conv activation {act} not modelled')
            y = torch.relu(y)
        y = y.permute(0, 2, 3, 1).reshape(out_shape)
        if out_layout == Layout.TILE:
            y = numerics.pad_to_tiles(y, 0.0)
        return [(numerics.quantize(y, out_dtype), out_shape, out_dtype, out_layout)]
    static = geometry + (str(out_dtype), repr(conv_config), repr(compute_config))
    out = launch(name, inputs, static, fn, memory_config=memory_config)[0]
    result = [out]
    if return_output_dim:
        result.append((oh, ow))
    if return_weights_and_bias:
        result.append((w, b))
    return out if len(result) == 1 else tuple(result)


def conv2d(*, input_tensor, weight_tensor, device, in_channels, out_channels, batch_size,
           input_height, input_width, kernel_size, stride=(1, 1), padding=(0, 0),
           dilation=(1, 1), groups=1, dtype=None, bias_tensor=None, conv_config=None,
           compute_config=None, memory_config=None, slice_config=None, return_output_dim=False,
           return_weights_and_bias=False):
    return _conv('conv2d', input_tensor=input_tensor, weight_tensor=weight_tensor, device=device,
                 in_channels=in_channels, out_channels=out_channels, batch_size=batch_size,
                 input_height=input_height, input_width=input_width, kernel_size=kernel_size,
                 stride=stride, padding=padding, dilation=dilation, groups=groups, dtype=dtype,
                 bias_tensor=bias_tensor, conv_config=conv_config, compute_config=compute_config,
                 memory_config=memory_config, return_output_dim=return_output_dim,
                 return_weights_and_bias=return_weights_and_bias, transposed=False)


def conv_transpose2d(*, input_tensor, weight_tensor, device, in_channels, out_channels,
                     batch_size, input_height, input_width, kernel_size, stride=(1, 1),
                     padding=(0, 0), output_padding=(0, 0), dilation=(1, 1), groups=1,
                     dtype=None, bias_tensor=None, conv_config=None, compute_config=None,
                     memory_config=None, dram_slice_config=None, mirror_kernel=True,
                     return_output_dim=False, return_weights_and_bias=False):
    if not mirror_kernel:
        raise RuntimeError('stand-in: conv_transpose2d(mirror_kernel=False) not modelled')
    return _conv('conv_transpose2d', input_tensor=input_tensor, weight_tensor=weight_tensor,
                 device=device, in_channels=in_channels, out_channels=out_channels,
                 batch_size=batch_size, input_height=input_height, input_width=input_width,
                 kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                 groups=groups, dtype=dtype, bias_tensor=bias_tensor, conv_config=conv_config,
                 compute_config=compute_config, memory_config=memory_config,
                 return_output_dim=return_output_dim,
                 return_weights_and_bias=return_weights_and_bias, transposed=True,
                 output_padding=output_padding)
