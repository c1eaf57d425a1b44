"""Op launch of the ttnn stand-in: eager execution or trace recording, program-cache keys.

Every device op builds `fn(datas) -> [(data, logical_shape, dtype, layout), ...]` over the
tile-padded input data, and runs it on meta tensors at launch for the output specs. Eager: the
outputs hold `fn` deferred (lazy.py: computed when first read). Capturing: allocate NaN
placeholders and record `fn` for `execute_trace`.

A placeholder is one NaN broadcast to the output's shape (no memory): a replay replaces it
rather than writing into it, and a write into it before any replay fails loudly.
"""
from __future__ import annotations

import math
import os

import torch

from .lazy import defer
from .tensor import Tensor
from .types import DRAM_MEMORY_CONFIG

_NAN = torch.tensor(math.nan)


def spec_key(t) -> tuple:
    if isinstance(t, Tensor):
        return ('T', tuple(t.shape), str(t.dtype), str(t.layout))
    return ('S', repr(t))


def device_of(name: str, tensors) -> object:
    dev = None
    for t in tensors:
        if t._device is None:
            raise RuntimeError(f'TT_FATAL: {name}: input tensor must be on device (got a host '
                               'tensor; use ttnn.to_device first)')
        t._check_alive(name)
        if dev is None:
            dev = t._device
        elif t._device is not dev:
            raise RuntimeError(f'TT_FATAL: {name}: inputs live on different devices')
    return dev


_SPECS: dict = {}
CHECK_SPECS = os.environ.get('TT_STANDIN_CHECK_SPECS') == '1'


def _output_specs(key: tuple, fn, inputs: list) -> list:
    """`fn` on the inputs' meta tensors: the outputs' (meta, shape, dtype, layout[, pad]).

    Memoised per program-cache key (op, input specs, static config) and whether each input's
    tile padding is defined: what makes two launches one program makes their outputs alike,
    and torch's meta execution of an op costs more than a tiny model's arithmetic.
    TT_STANDIN_CHECK_SPECS=1 recomputes every hit and compares.
    """
    memo = (key, tuple(t._pad_defined for t in inputs))
    specs = _SPECS.get(memo)
    if specs is None or CHECK_SPECS:
        fresh = fn([t._meta() for t in inputs])
        if specs is not None and _spec_tuple(specs) != _spec_tuple(fresh):
            raise AssertionError(f'stand-in: {key[0]}: outputs differ under one program key '
                                 f'{key}: {_spec_tuple(specs)} vs {_spec_tuple(fresh)}')
        specs = _SPECS[memo] = fresh
    return specs


def _spec_tuple(specs) -> list:
    return [(tuple(s[0].shape), s[0].dtype, *map(str, s[1:])) for s in specs]


def launch(name: str, inputs: list, static: tuple, fn, *, memory_config=None,
           view: bool = False) -> list:
    """Run (or record) one device op; returns the output tensors.

    `view`: the (single) output is a view sharing inputs[0]'s device buffer (ttnn reshape).
    """
    dev = device_of(name, inputs)
    key = (name, tuple(spec_key(t) for t in inputs), static)
    dev._launch(key)
    mc = memory_config if memory_config is not None else DRAM_MEMORY_CONFIG
    specs = _output_specs(key, fn, inputs)
    capture = dev._capturing
    if capture is not None:
        values = [_NAN.expand(tuple(s[0].shape)) for s in specs]
    else:
        dev._queues.drain(0)       # an eager op runs on CQ0 after what is queued there
        values = defer(fn, [t._value for t in inputs], [s[0] for s in specs])
    outs = []
    for v, s in zip(values, specs):
        o = Tensor(v, s[1], s[2], s[3], device=dev, memory_config=mc,
                   buffer=inputs[0]._buffer if view else None)
        o._pad_defined = s[4] if len(s) > 4 else True
        outs.append(o)
    if capture is not None:
        capture.records.append((lambda datas: [r[0] for r in fn(datas)], list(inputs), outs))
    return outs
