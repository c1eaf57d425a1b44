"""What a ttnn precision preset (engines/ttnn/precision.py) really runs, seen on the stand-in.

`hot_path` records every matmul-like op an engine issues (linear, matmul, conv2d,
conv_transpose2d, SDPA; warm-up and capture issue them, a replayed trace does not) with its input
and weight dtypes, math fidelity, fp32 accumulation and whether it carries a program config.
`assert_preset_active` then holds those calls to what the preset declares: its fidelities and
accumulation (the preset's own and its matmul roles'), its bulk weight dtype on the linears,
float32 weights where it names float32 weight groups, float32 activations into the linears
where its residual stream or inner activations are float32, into the head's convs where its head
is, into SDPA where its inner activations are, and program configs where it has them. A preset
that the engine ignored (another preset's kernels) fails here.
"""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager
from typing import NamedTuple

import pytest

MATMUL_OPS = ('linear', 'matmul', 'conv2d', 'conv_transpose2d', 'scaled_dot_product_attention')


class OpCall(NamedTuple):
    """One matmul-like op as an engine issued it (dtype and enum names as ttnn prints them)."""

    op: str
    input: str
    weight: str
    fidelity: str
    fp32_acc: bool
    program_config: bool


def family_presets(family: str) -> list[str]:
    """The preset names `family` ('da3', 'dust3r') takes: parse_precision refuses the others."""
    from tt_depth_ros.engines.ttnn.precision import PRESETS, parse_precision

    names = []
    for name in PRESETS:
        try:
            parse_precision(name, family)
        except ValueError:
            continue
        names.append(name)
    return names


@contextmanager
def standin_as_ttnn():
    """The stand-in as sys.modules['ttnn'], the weight cache off (a module fixture's scope)."""
    from devtools.ttnn import standin
    from devtools.ttnn.standin import device

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, 'ttnn', standin)
        mp.setenv('TT_DEPTH_ROS_TTNN_CACHE', 'off')
        standin.set_eth_dispatch_patched(False)
        try:
            yield standin
        finally:
            device._open_devices.clear()


@contextmanager
def hot_path(ttnn):
    """Counter of OpCall for the ops issued inside the block (module docstring)."""
    calls: Counter = Counter()

    def spy(name, real):
        def call(*args, **kw):
            if name.startswith('conv'):
                x, w, cfg = kw['input_tensor'], kw['weight_tensor'], kw.get('compute_config')
            else:
                x, w = args[0], args[1]
                cfg = kw.get('compute_kernel_config')
            calls[OpCall(name, x.dtype.name, w.dtype.name,
                         'default' if cfg is None else cfg.math_fidelity.name,
                         bool(cfg is not None and cfg.fp32_dest_acc_en),
                         kw.get('program_config') is not None)] += 1
            return real(*args, **kw)
        return call
    with pytest.MonkeyPatch.context() as mp:
        for name in MATMUL_OPS:
            owner = ttnn.transformer if name == 'scaled_dot_product_attention' else ttnn
            mp.setattr(owner, name, spy(name, getattr(owner, name)))
        yield calls


def assert_preset_active(case: str, p, calls: Counter) -> None:
    """`calls` (hot_path) ran what the Precision `p` declares (module docstring)."""
    assert calls, f'{case} {p.name}: no matmul-like op was issued'

    def seen(attr, ops=MATMUL_OPS, **where):
        return {getattr(c, attr) for c in calls if c.op in ops
                and all(getattr(c, k) == v for k, v in where.items())}
    # what the preset declares (its own setting and its roles'), not how the engine looks it up
    settings = {(p.fidelity, p.fp32_acc)} | {(r.fidelity, r.fp32_acc) for r in p.roles}
    fidelities = {f for f, _ in settings}
    assert seen('fidelity') == fidelities, \
        f'{case} {p.name}: math fidelities {seen("fidelity")}, declared {fidelities}'
    accumulation = {acc for _, acc in settings}
    assert seen('fp32_acc') == accumulation, \
        f'{case} {p.name}: fp32 accumulation {seen("fp32_acc")}, declared {accumulation}'
    linear_w = seen('weight', ('linear',))
    assert p.weights.upper() in linear_w, \
        f'{case} {p.name}: linear weights {linear_w}, no {p.weights} (the bulk dtype)'
    fp32_groups = bool(set(p.fp32_weights) & {'all', 'folded', 'head'})
    assert ('FLOAT32' in linear_w) is fp32_groups, \
        f'{case} {p.name}: linear weights {linear_w}; float32 groups {p.fp32_weights}'
    fp32_acts = 'float32' in (p.residual, p.inner)
    linear_in = seen('input', ('linear',))
    assert ('FLOAT32' in linear_in) is fp32_acts, \
        f'{case} {p.name}: linear inputs {linear_in}; residual {p.residual}, inner {p.inner}'
    conv_in = seen('input', ('conv2d', 'conv_transpose2d'))
    assert ('FLOAT32' in conv_in) is (p.head == 'float32'), \
        f'{case} {p.name}: conv inputs {conv_in}; head {p.head}'
    sdpa_in = seen('input', ('scaled_dot_product_attention',))
    assert sdpa_in == {p.inner.upper()}, f'{case} {p.name}: SDPA inputs {sdpa_in}; inner {p.inner}'
    configs = seen('program_config', ('linear',))
    assert (True in configs) is p.program_configs, \
        f'{case} {p.name}: linear program configs {configs}; declared {p.program_configs}'
