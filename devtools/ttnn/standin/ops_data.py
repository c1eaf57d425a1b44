"""Host I/O and data-movement ops of the ttnn stand-in (docs/ttnn.md §4-§5).

Traps reproduced: `from_torch` defaults to ROW_MAJOR; block-float dtypes need TILE; host I/O
raises inside a trace capture; a tiled reshape/slice that changes the row structure leaves the
padding undefined (NaN here) unless `pad_value` is given; permute/transpose fill with 0.0.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from . import numerics
from .launch import launch
from .tensor import Tensor, logical_values, make_tensor
from .types import DRAM_MEMORY_CONFIG, DataType, Layout, Shape, TileReshapeMapMode

_TORCH_TO_TT = {torch.float32: DataType.FLOAT32, torch.bfloat16: DataType.BFLOAT16,
                torch.uint8: DataType.UINT8, torch.int32: DataType.INT32}
_TT_TO_TORCH = {DataType.FLOAT32: torch.float32, DataType.BFLOAT16: torch.bfloat16,
                DataType.BFLOAT8_B: torch.float32, DataType.BFLOAT4_B: torch.float32,
                DataType.UINT8: torch.uint8,
                DataType.INT32: torch.int32, DataType.UINT32: torch.int32}


def _relayout(data: torch.Tensor, old_logical, new_logical, layout, pad_value, keep: bool):
    """Data of a tensor whose logical shape changed; padding is pad_value or NaN (undefined)."""
    if layout != Layout.TILE:
        return data.reshape(new_logical), True
    if keep:
        return data, True
    fill = math.nan if pad_value is None else float(pad_value)
    return numerics.pad_to_tiles(data, fill), pad_value is not None


def from_torch(tensor, dtype=None, *, spec=None, tile=None, pad_value=None, layout=None,
               device=None, memory_config=None, cq_id=None):
    if isinstance(tensor, np.ndarray):
        tensor = torch.from_numpy(np.ascontiguousarray(tensor))
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f'from_torch: expected a torch.Tensor or numpy array, got {type(tensor)}')
    if dtype is None:
        if tensor.dtype not in _TORCH_TO_TT:
            raise TypeError(f'from_torch: unsupported torch dtype {tensor.dtype}')
        dtype = _TORCH_TO_TT[tensor.dtype]
    layout = Layout.ROW_MAJOR if layout is None else layout
    if device is not None:
        device._check_host_io('from_torch(device=...)')
    return make_tensor(tensor.detach().to(torch.float32), dtype, layout, device=device,
                       memory_config=memory_config,
                       pad_value=0.0 if pad_value is None else pad_value)


def to_torch(tensor, dtype=None, *, torch_rank=None, device=None, cq_id=None):
    tensor._check_alive('to_torch')
    if tensor._device is not None:
        tensor._device._check_host_io('to_torch')
        tensor._device._queues.drain(tensor._device._queues.check(cq_id))   # a blocking read
    if getattr(tensor, '_unfilled', False):
        raise RuntimeError('stand-in: reading a from_device(blocking=False) host tensor before '
                           'its readback ran; synchronize its queue or an event recorded after '
                           'it first')
    out = logical_values(tensor).clone().to(_TT_TO_TORCH[tensor.dtype])
    if torch_rank is not None:
        while out.dim() > torch_rank:
            if out.shape[0] != 1:
                raise RuntimeError('ttnn: Unable to squeeze to desired rank!')
            out = out.squeeze(0)
    return out if dtype is None else out.to(dtype)


def to_device(tensor, device, memory_config=None, *, queue_id=None):
    tensor._check_alive('to_device')
    device._check_host_io('to_device')
    t = Tensor(tensor._data.clone(), tensor.shape, tensor.dtype, tensor.layout, device=device,
               memory_config=memory_config or DRAM_MEMORY_CONFIG)
    return t


def from_device(tensor, blocking=True, *, queue_id=None):
    """Device -> host; non-blocking: the copy is queued and the host tensor filled when it runs."""
    tensor._check_alive('from_device')
    dev = tensor._device
    dev._check_host_io('from_device')
    cq = dev._queues.check(queue_id)
    if blocking:
        dev._queues.drain(cq)
        return Tensor(tensor._data.clone(), tensor.shape, tensor.dtype, tensor.layout)
    host = Tensor(torch.full(tuple(tensor._meta().shape), math.nan), tensor.shape, tensor.dtype,
                  tensor.layout)
    host._unfilled = True

    def fill():
        host._data = tensor._data.clone()
        host._unfilled = False
    dev._queues.issue(cq, ('run', fill, None))
    return host


def allocate_tensor_on_device(shape, dtype, layout, mesh_device, memory_config=None):
    padded = numerics.padded_dims(tuple(shape)) if layout == Layout.TILE else tuple(shape)
    return Tensor(torch.full(padded, math.nan), shape, dtype, layout, device=mesh_device,
                  memory_config=memory_config or DRAM_MEMORY_CONFIG)


def copy_host_to_device_tensor(host_tensor, device_tensor, cq_id=None):
    device_tensor._check_alive('copy_host_to_device_tensor')
    device_tensor._device._check_host_io('copy_host_to_device_tensor')
    if host_tensor._device is not None:
        raise RuntimeError('TT_FATAL: copy_host_to_device_tensor: source must be a host tensor')
    a = (tuple(host_tensor.shape), host_tensor.dtype, host_tensor.layout)
    b = (tuple(device_tensor.shape), device_tensor.dtype, device_tensor.layout)
    if a != b:
        raise RuntimeError(f'TT_FATAL: copy_host_to_device_tensor: spec mismatch host {a} vs '
                           f'device {b}')
    value = host_tensor._data.clone()          # the host buffer as it is when enqueued

    def write():
        device_tensor._data = value
    device_tensor._device._queues.issue(cq_id, ('run', write, None))


def copy(input_a, input_b):
    """Device-to-device copy of input_a into input_b (same spec), queued on CQ0 in place."""
    for t in (input_a, input_b):
        t._check_alive('copy')
    dev = input_a._device
    if dev is None or input_b._device is not dev:
        raise RuntimeError('TT_FATAL: copy: both tensors must be on the same device')
    a = (tuple(input_a.shape), input_a.dtype, input_a.layout)
    b = (tuple(input_b.shape), input_b.dtype, input_b.layout)
    if a != b:
        raise RuntimeError(f'TT_FATAL: copy: input_a {a} and input_b {b} differ')
    if dev._capturing is not None:
        raise RuntimeError('stand-in: ttnn.copy inside a trace capture is not modelled')
    dev._launch(('copy', a))

    def run():
        input_b._data = input_a._data
    dev._queues.issue(0, ('run', run, None))


def deallocate(tensor, force=True):
    tensor.deallocate(force)


TILIZABLE = (DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32,
             DataType.UINT16)


def to_layout(tensor, layout, dtype=None, memory_config=None, sub_core_grids=None, pad_value=0.0):
    out_dtype = tensor.dtype if dtype is None else dtype
    if tensor._device is not None and layout == tensor.layout and out_dtype == tensor.dtype:
        tensor._check_alive('to_layout')
        return tensor                              # ttnn: nothing to do returns the input
    if tensor._device is not None and layout == Layout.TILE and tensor.layout != Layout.TILE \
            and tensor.dtype not in TILIZABLE:
        raise RuntimeError('TT_FATAL: Can only tilize bfloat16/float32 or int32/uint32/uint16 '
                           f'or fp8_e4m3 tensors (got {tensor.dtype}; ttnn.typecast the '
                           'row-major tensor first)')
    if out_dtype in (DataType.BFLOAT8_B, DataType.BFLOAT4_B) and layout != Layout.TILE:
        raise RuntimeError(f'TT_FATAL: {out_dtype} requires TILE layout')
    logical = tuple(tensor.shape)

    def fn(d):
        vals = numerics.unpad(d[0], logical)
        if layout == Layout.TILE:
            vals = numerics.pad_to_tiles(vals, pad_value)
        return [(numerics.quantize(vals, out_dtype), logical, out_dtype, layout)]
    if tensor._device is None:
        tensor._check_alive('to_layout')
        return Tensor(fn([tensor._data])[0][0], logical, out_dtype, layout)
    return launch('to_layout', [tensor], (str(layout), str(out_dtype), pad_value), fn,
                  memory_config=memory_config)[0]


def typecast(input_tensor, dtype, *, memory_config=None, output_tensor=None,
             sub_core_grids=None):
    layout = input_tensor.layout
    if layout != Layout.TILE and dtype in (DataType.BFLOAT8_B, DataType.BFLOAT4_B):
        raise RuntimeError(f'TT_FATAL: typecast: {dtype} requires TILE layout')

    def fn(d):
        return [(numerics.quantize(d[0], dtype), tuple(input_tensor.shape), dtype, layout,
                 input_tensor._pad_defined)]
    return launch('typecast', [input_tensor], (str(dtype),), fn, memory_config=memory_config)[0]


def reshape(input_tensor, shape, *, memory_config=None, pad_value=None,
            reshape_tile_mode=TileReshapeMapMode.CACHE,
            sub_core_grids=None, skip_padding_fill=False):
    old = tuple(input_tensor.shape)
    new = tuple(int(s) for s in shape)
    if -1 in new:
        known = math.prod(s for s in new if s != -1)
        new = tuple(math.prod(old) // known if s == -1 else s for s in new)
    if math.prod(new) != math.prod(old):
        raise RuntimeError(f'TT_FATAL: reshape: volume of {old} != volume of {new}')
    layout = input_tensor.layout
    view = is_reshape_view(old, new, layout)
    keep = layout == Layout.TILE and view
    if not view and input_tensor.dtype not in _RESHAPE_DTYPES:   # reshape_device_operation.cpp
        raise RuntimeError(f'TT_FATAL: reshape: Can only work with bfloat16/float32 or '
                           f'int32/uint32 tensors, got {input_tensor.dtype}')

    def fn(d):
        if layout == Layout.TILE and keep:
            if old[-2] == new[-2]:
                data = d[0].reshape(new[:-2] + tuple(d[0].shape[-2:]))
            else:                   # whole tile rows: no row padding to move
                data = d[0].reshape(new[:-1] + tuple(d[0].shape[-1:]))
            return [(data, new, input_tensor.dtype, layout, input_tensor._pad_defined)]
        vals = numerics.unpad(d[0], old).reshape(new)
        data, defined = _relayout(vals, old, new, layout, pad_value, False)
        return [(data, new, input_tensor.dtype, layout, defined)]
    return launch('reshape', [input_tensor], (new, pad_value), fn,
                  memory_config=memory_config, view=view)[0]


_RESHAPE_DTYPES = (DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32)
"""What ttnn 0.81.1's reshape device operation takes (a reshape that moves data, not a view)."""


def is_reshape_view(old: tuple, new: tuple, layout) -> bool:
    """Whether ttnn 0.81.1's reshape returns a view on the input's buffer (no data movement).

    Both layouts need the last dim kept (a ROW_MAJOR page is one last-dim row: the real library
    runs its reshape device operation for (1, 1, H*W, 3) -> (1, 1, H, W*3)); TILE also needs
    the second-to-last kept or staying a multiple of 32 (whole tile rows).
    """
    if len(old) < 2 or len(new) < 2 or old[-1] != new[-1]:
        return False
    if layout != Layout.TILE:
        return True
    t = numerics.TILE
    return old[-2] == new[-2] or (old[-2] % t == 0 and new[-2] % t == 0)


def permute(input_tensor, dims, *, memory_config=None, pad_value=0.0):
    old = tuple(input_tensor.shape)
    dims = tuple(int(x) % len(old) for x in dims)
    new = tuple(old[i] for i in dims)
    layout = input_tensor.layout

    def fn(d):
        vals = numerics.unpad(d[0], old).permute(dims).contiguous()
        if layout == Layout.TILE:
            vals = numerics.pad_to_tiles(vals, pad_value)
        return [(vals, new, input_tensor.dtype, layout)]
    return launch('permute', [input_tensor], (dims, pad_value), fn,
                  memory_config=memory_config)[0]


def transpose(input_tensor, dim1, dim2, *, memory_config=None, pad_value=0.0):
    dims = list(range(len(input_tensor.shape)))
    a, b = dim1 % len(dims), dim2 % len(dims)
    dims[a], dims[b] = dims[b], dims[a]
    return permute(input_tensor, dims, memory_config=memory_config, pad_value=pad_value)


def slice(input_tensor, slice_start, slice_end, slice_step=None, *, memory_config=None,  # noqa: A001
          output_tensor=None, pad_value=None, sub_core_grids=None):
    old = tuple(input_tensor.shape)
    steps = tuple(slice_step) if slice_step is not None else (1,) * len(old)
    idx = tuple(builtins_slice(int(s), int(e), int(st))
                for s, e, st in zip(slice_start, slice_end, steps))
    new = tuple(len(range(*ix.indices(n))) for ix, n in zip(idx, old))
    layout = input_tensor.layout
    if new == old and all(int(s) == 1 for s in steps):
        input_tensor._check_alive('slice')
        return input_tensor                 # ttnn 0.81.1: a full-range slice is its input

    def fn(d):
        vals = numerics.unpad(d[0], old)[idx].contiguous()
        data, defined = _relayout(vals, old, new, layout, pad_value, False)
        return [(data, new, input_tensor.dtype, layout, defined)]
    return launch('slice', [input_tensor], (repr(idx), pad_value), fn,
                  memory_config=memory_config)[0]


builtins_slice = __builtins__['slice'] if isinstance(__builtins__, dict) else __builtins__.slice


def concat(tensors, dim=0, *, memory_config=None, output_tensor=None, groups=1,
           sub_core_grids=None):
    tensors = list(tensors)
    if len(tensors) == 1 and tensors[0]._device is not None:
        tensors[0]._check_alive('concat')
        return tensors[0]                   # ttnn: concat of one tensor returns it
    layout = tensors[0].layout
    if any(t.layout != layout or t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError('TT_FATAL: concat: all inputs need the same layout and dtype')
    rank = len(tensors[0].shape)
    dim = dim % rank
    new = list(tensors[0].shape)
    new[dim] = sum(t.shape[dim] for t in tensors)
    new = tuple(new)

    def fn(d):
        vals = torch.cat([numerics.unpad(x, tuple(t.shape)) for x, t in zip(d, tensors)], dim)
        if layout == Layout.TILE:
            aligned = dim < rank - 2 or all(t.shape[dim] % numerics.TILE == 0 for t in tensors)
            fill = 0.0 if aligned else math.nan
            return [(numerics.pad_to_tiles(vals, fill), new, tensors[0].dtype, layout, aligned)]
        return [(vals, new, tensors[0].dtype, layout)]
    return launch('concat', tensors, (dim,), fn, memory_config=memory_config)[0]


__all__ = ['from_torch', 'to_torch', 'to_device', 'from_device', 'allocate_tensor_on_device',
           'copy_host_to_device_tensor', 'copy', 'deallocate', 'to_layout', 'typecast', 'reshape',
           'permute', 'transpose', 'slice', 'concat', 'Shape', 'as_tensor']


def as_tensor(tensor, dtype=None, *, layout=Layout.ROW_MAJOR, device=None, memory_config=None,
              cache_file_name=None, preprocess=None):
    """ttnn.as_tensor: from_torch with a `{name}_dtype_{D}_layout_{L}.tensorbin` host cache."""
    import pathlib
    if device is not None and memory_config is None:
        raise RuntimeError('memory_config must be specified when device is specified')
    if cache_file_name is None:
        return from_torch(tensor, dtype, layout=layout, device=device,
                          memory_config=memory_config)
    path = pathlib.Path(f'{cache_file_name}_dtype_{dtype.name if dtype else "None"}'
                        f'_layout_{layout.name if layout else "None"}.tensorbin')
    if path.is_file():
        blob = torch.load(path, weights_only=True)
        host = Tensor(blob['data'], blob['shape'], DataType[blob['dtype']],
                      Layout[blob['layout']])
    else:
        host = from_torch(tensor, dtype, layout=layout)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({'data': host._data, 'shape': list(host.shape), 'dtype': host.dtype.name,
                    'layout': host.layout.name}, path)
    return to_device(host, device, memory_config) if device is not None else host
