"""Tensors of the ttnn stand-in: logical vs tile-padded shape, host vs device storage.

A TILE tensor stores its tile-padded data (last two dims rounded up to 32); the padding holds
zeros after a host conversion, op-computed values after a matmul, and NaN ("undefined") after a
tiled reshape/slice without `pad_value` — so code that contracts over padding sees garbage.

Device buffers are shared as in ttnn 0.81.1 (checked against the real library by
test/ttnn_dryrun/test_standin_agrees.py): a reshape view shares its input's `DeviceBuffer`;
`deallocate(t)` (force=True) frees the buffer under every tensor on it — those still report
is_allocated() like the real ones, but the stand-in raises on their next use (on hardware their
memory silently goes to the next allocation); `deallocate(t, force=False)` does nothing while
another live tensor shares the buffer.
"""
from __future__ import annotations

import itertools
import weakref

import torch

from . import numerics
from .lazy import Pending
from .types import DRAM_MEMORY_CONFIG, DataType, Layout, Shape

_ids = itertools.count(1)
_addresses = itertools.count(1)


class DeviceBuffer:
    """One device allocation; every tensor on it (a base and its views) holds this object."""

    def __init__(self):
        self.address = next(_addresses) * 4096
        self.freed_by: str | None = None        # who freed it while other tensors shared it
        self.owners: 'weakref.WeakSet[Tensor]' = weakref.WeakSet()


class Tensor:
    """A host or device tensor. Values are float32 holding exact values of `dtype`."""

    def __init__(self, data: 'torch.Tensor | Pending', shape, dtype: DataType, layout: Layout, *,
                 device=None, memory_config=None, buffer: DeviceBuffer | None = None):
        self._value = data          # torch tensor, Pending (eager op not computed yet), None
        self._shape = Shape(shape)
        self._dtype = dtype
        self._layout = layout
        self._device = device
        self._memory_config = memory_config if device is not None else None
        self._id = next(_ids)
        self._trace_owned = False   # placeholder produced while capturing a trace
        self._pad_defined = True    # False: tile padding holds undefined values
        self._buffer = None
        if device is not None:
            self._buffer = buffer if buffer is not None else DeviceBuffer()
            self._buffer.owners.add(self)
            device._register(self)

    # -- values -------------------------------------------------------------------------------
    @property
    def _data(self) -> torch.Tensor | None:
        """The stored (tile-padded, quantised) values; computes a deferred op's on first read."""
        if isinstance(self._value, Pending):
            self._value = self._value.value()
        return self._value

    @_data.setter
    def _data(self, value) -> None:
        self._value = value

    def _meta(self) -> torch.Tensor:
        """The stored data's meta tensor (shape and dtype), without computing anything."""
        v = self._value
        return v.meta if isinstance(v, Pending) else v.to('meta')

    # -- spec ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self._shape

    @property
    def padded_shape(self) -> Shape:
        if self._layout == Layout.TILE:
            return Shape(numerics.padded_dims(tuple(self._shape)))
        return self._shape

    @property
    def dtype(self) -> DataType:
        return self._dtype

    @property
    def layout(self) -> Layout:
        return self._layout

    def get_dtype(self) -> DataType:
        return self._dtype

    def get_layout(self) -> Layout:
        return self._layout

    def device(self):
        return self._device

    def memory_config(self):
        return self._memory_config

    def storage_type(self) -> str:
        return 'StorageType.HOST' if self._device is None else 'StorageType.DEVICE'

    def is_allocated(self) -> bool:
        return self._value is not None

    def buffer_address(self) -> int:
        if self._value is None:
            raise RuntimeError(f'TT_FATAL: buffer_address: tensor {self._id} is deallocated')
        return self._buffer.address if self._buffer is not None else 0

    def volume(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    # -- lifetime -----------------------------------------------------------------------------
    def deallocate(self, force: bool = True) -> None:
        buf = self._buffer
        if buf is not None and self._value is not None and buf.freed_by is None:
            others = [o for o in buf.owners if o is not self and o._value is not None]
            if others and not force:
                return                   # ttnn: a shared buffer stays while others hold it
            if others:
                buf.freed_by = f'deallocate(force=True) of tensor {self._id}'
        if self._device is not None:
            self._device._unregister(self)
        self._data = None

    def _buffer_freed(self) -> bool:
        """True when another tensor's forced deallocate freed this tensor's memory."""
        return self._buffer is not None and self._buffer.freed_by is not None

    def _check_alive(self, what: str) -> None:
        if self._value is None:
            raise RuntimeError(f'TT_FATAL: {what}: tensor {self._id} is deallocated')
        if self._buffer_freed():
            raise RuntimeError(
                f'stand-in: {what}: use after free: tensor {self._id} shares a device buffer '
                f'that {self._buffer.freed_by} freed (ttnn 0.81.1 accepts this silently and the '
                'memory goes to the next allocation); release a tensor with live views with '
                'ttnn.deallocate(t, force=False)')
        if self._device is not None and not self._device._is_open:
            raise RuntimeError(f'TT_FATAL: {what}: tensor {self._id} lives on a closed device')

    def __repr__(self) -> str:
        where = 'host' if self._device is None else 'device'
        return (f'ttnn.Tensor(shape={self._shape!r}, padded={self.padded_shape!r}, '
                f'{self._dtype}, {self._layout}, {where})')

    def __del__(self):
        dev = getattr(self, '_device', None)
        if dev is not None and getattr(self, '_value', None) is not None:
            dev._unregister(self)


def make_tensor(values: torch.Tensor, dtype: DataType, layout: Layout, *, device=None,
                memory_config=None, pad_value: float = 0.0) -> Tensor:
    """Build a tensor from logical float32 values: tile-pad if TILE, then quantise to dtype."""
    values = values.to(torch.float32)
    logical = tuple(values.shape)
    if dtype in (DataType.BFLOAT8_B, DataType.BFLOAT4_B) and layout != Layout.TILE:
        raise RuntimeError(f'TT_FATAL: {dtype} is only supported in TILE layout')
    if layout == Layout.TILE:
        values = numerics.pad_to_tiles(values, pad_value)
    data = numerics.quantize(values, dtype)
    if device is not None and memory_config is None:
        memory_config = DRAM_MEMORY_CONFIG
    return Tensor(data, logical, dtype, layout, device=device, memory_config=memory_config)


def logical_values(t: Tensor) -> torch.Tensor:
    """The logical float32 values of a tensor (padding dropped)."""
    return numerics.unpad(t._data, tuple(t.shape))
