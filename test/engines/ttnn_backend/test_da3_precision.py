"""DA3 precision presets through the stand-in: the issue's gate (depth PCC >= 0.9999) and the cost.

Measured against the golden fp32 depth (tiny rule-v1 config, stand-in with float32 matmul/conv/SDPA
operands truncated to TF32 as the FPU sees them; depth PCC / max relative error):

| preset                | 280x504         | 378x504         | 518x518         | Large 280x504   |
|-----------------------|-----------------|-----------------|-----------------|-----------------|
| bfloat16              | 0.99960 / 0.070 | 0.99962 / 0.081 | 0.99966 / 0.071 | 0.99885 / 0.072 |
| float32-residual      | 0.99986 / 0.047 | 0.99985 / 0.059 | 0.99987 / 0.049 | 0.99972 / 0.037 |
| float32-residual-head | 0.99996 / 0.031 | 0.99996 / 0.033 | 0.99997 / 0.031 | 0.99996 / 0.018 |
| float32 (everything)  | 0.99997 / 0.028 | 0.99997 / 0.032 | 0.99997 / 0.029 | 0.99998 / 0.017 |
| control: torch bf16   | 0.99983         |                 |                 | 0.99949 / 0.050 |

'fast-hifi4' gives float32-residual-head's numbers on the speed design's layout
(precision.py; equal on the stand-in: test_default_meets_the_gate_at_every_golden_size; the
stand-in's FPU model has changed since this table: today 0.99990 Large). Which
choices matter (tiny 280x504): float32 weights everywhere with bf16 activations 0.99984; a
float32 DPT head alone 0.99978; a float32 residual stream alone 0.99966; float32 patch-embedding
weights +0.0002 on top of the residual; the head then closes the gap. With TF32 rounded to
nearest instead of truncated, float32-residual-head reaches 0.99999.
Cost (Large, linear + LayerNorm weights on device): bfloat16 631 MB, float32-residual-head 899 MB
(x1.42; conv weights too are float32 in the head), 391 vs 390 ops per traced forward (the head's
typecast goes). The Large rows are test_full_size_ttnn.py (slow).

Every preset, once on the golden image at 56x84 (module fixture; the torch fp32 engine there is
the reference): it runs what it declares (its fidelities, weight and activation dtypes, program
configs, seen on the hot path: support.ttnn_presets), no two give the same depth but the two
declared equal, and each stays within its ACCURACY bounds (PCC, median and p99 relative depth
error, sky agreement).
"""
from collections import Counter
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from support.da3_fixtures import tiny_state_dict, write_safetensors
from support.ttnn_presets import (
    assert_preset_active,
    family_presets,
    hot_path,
    standin_as_ttnn,
)
from tt_depth_ros.engines.cancel import CancelToken
from tt_depth_ros.engines.parity import compare_maps, mask_agreement
from tt_depth_ros.engines.ttnn import build_ttnn_engine
from tt_depth_ros.engines.ttnn.precision import CHOICES, PRESETS, parse_precision
from tt_depth_ros.ros.depth.params import DepthParams
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS
from tt_depth_ros.ros.runtime.engine_builder import build_node_engine

DATA = Path(__file__).resolve().parents[2] / 'data'
DEFAULT = 'fast-hifi3+mask_free_sdpa+block_sharded'
DUST3R_DEFAULT = 'fast+fused_residual+mask_free_sdpa+rope_kernel+block_sharded'
FAST_HIFI4 = 'fast-hifi4'           # float32-residual-head's numbers on the speed layout
F32RH = 'float32-residual-head'
BYTES = {'FLOAT32': 4.0, 'BFLOAT16': 2.0, 'BFLOAT8_B': 1088 / 1024, 'UINT8': 1.0}
SKY = 0.3      # sky where the relu sky score is >= 0.3 (upstream's threshold)
SMALL = (56, 84)
# Every preset on the golden image at 56x84 against the torch fp32 engine there (which matches
# upstream to ~1e-5): depth PCC >=, median and p99 relative depth error <=, sky agreement >=.
# The magnitude bounds are about 2.5x what each preset gives, the PCC floors the gates the
# presets had at 280x504 (or 2.5x the shortfall from 1 where tighter), the sky agreement a 1 %
# flip rate (0.2 % measured; 5 % at LoFi). The magnitude is what PCC does not see: the
# float32-head presets carry a systematic ~1 % depth scale on these weights (TF32 truncation
# ahead of the exp of the depth logit).
ACCURACY = {
    'bfloat16': (0.999, 0.017, 0.07, 0.99),
    'bfloat16-hifi2': (0.999, 0.04, 0.15, 0.99),
    'bfloat8_b': (0.99, 0.06, 0.23, 0.99),
    'bfloat8_b-lofi': (0.95, 0.16, 0.65, 0.95),
    'float32-residual': (0.9997, 0.014, 0.05, 0.99),
    F32RH: (0.9999, 0.017, 0.05, 0.99),
    'float32': (0.9999, 0.018, 0.053, 0.99),
    'fast': (0.9998, 0.02, 0.06, 0.99),
    FAST_HIFI4: (0.9999, 0.017, 0.05, 0.99),
    'fast-hifi3': (0.99997, 0.016, 0.046, 0.99),
    'fast-hifi2': (0.99992, 0.019, 0.052, 0.99),
    'fast-hifi2-bf16-head': (0.99953, 0.016, 0.055, 0.99),
    'fast-all-hifi2': (0.99954, 0.024, 0.078, 0.99),
}
ROUNDOFF_REL = 1e-5
"""Median relative error every preset must exceed against fp32 (fp32 reordering: ~1e-6)."""
DA3_PRESETS = family_presets('da3')


@pytest.fixture(scope='module')
def every_preset(da3_tiny_sd):
    """Every DA3 preset at SMALL: (torch fp32 outputs, {name: (outputs, hot-path calls)})."""
    from tt_depth_ros.engines.factory import build_engine

    img = np.array(Image.open(DATA / 'da3' / 'tiny_280x504.png').convert('RGB'))
    img = cv2.resize(img, SMALL[::-1], interpolation=cv2.INTER_AREA)
    with build_engine('da3metric-tiny', backend='torch-cpu', state_dict=da3_tiny_sd,
                      dtype='float32') as eng:
        ref = eng.infer(img)
    runs = {}
    with standin_as_ttnn() as ttnn:
        for name in DA3_PRESETS:
            with hot_path(ttnn) as calls, build_ttnn_engine(
                    'da3metric-tiny', state_dict=da3_tiny_sd, dtype=name) as eng:
                assert eng.info.dtype == name
                runs[name] = (eng.infer(img), Counter(calls))
    return ref, runs


def resident_bytes(dev) -> dict:
    """Bytes of the device tensors alive now, by dtype name (tile-padded)."""
    out: dict = {}
    for t in dev.live_tensors():
        n = int(np.prod(tuple(t.padded_shape)))
        out[t.dtype.name] = out.get(t.dtype.name, 0) + n * BYTES[t.dtype.name]
    return out


def test_da3_default_is_fast_hifi3_with_levers_dust3r_the_speed_design(ttnn, da3_tiny_sd):
    # DUSt3R's 'fast' with its levers holds its gate (test_fast_precision, test_ttnn_levers,
    # test_full_size_ttnn); DA3's 'fast' (depth 0.99982 Large) stays opt-in below 0.9999
    assert parse_precision(None, 'da3').name == DEFAULT
    assert parse_precision(None, 'dust3r').name == DUST3R_DEFAULT
    assert parse_precision('bfloat16', 'dust3r').name == 'bfloat16'  # the former default
    assert parse_precision('bf16', 'da3').name == 'bfloat16'       # bf16 still selectable
    with pytest.raises(ValueError, match='DA3 only'):
        parse_precision(DEFAULT, 'dust3r')
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd) as eng:
        assert eng.info.dtype == DEFAULT and eng.info.details['precision'] == DEFAULT


def test_node_parameter_picks_the_ttnn_preset(ttnn, tmp_path):
    """ttnn_precision goes through the nodes' one build path; torch_dtype stays torch's."""
    spec = {s.name: s for s in COMMON_PARAMS}['ttnn_precision']
    assert spec.default == 'auto' and set(spec.choices) == set(CHOICES) == {'auto', *PRESETS}
    path = write_safetensors(tiny_state_dict(), tmp_path / 'model.safetensors')
    p = DepthParams(model='da3metric-tiny', weights_path=str(path), backend='ttnn',
                    torch_dtype='int8')
    log = type('Log', (), {'info': print, 'warning': print})()
    for value, want in (('auto', DEFAULT), ('fast', 'fast')):
        with build_node_engine(replace(p, ttnn_precision=value), log, CancelToken()) as eng:
            assert eng.info.dtype == want and eng.info.details['precision'] == want
    with pytest.raises(ValueError, match='DA3 only'):
        build_node_engine(replace(p, model='dust3r-tiny', ttnn_precision=DEFAULT), log,
                          CancelToken())


def test_every_preset_has_stated_bounds():
    missing = sorted(set(DA3_PRESETS) - set(ACCURACY))
    assert not missing, (f'presets without stated accuracy bounds: {missing}; run '
                         'test_every_preset_accuracy (it prints their figures) and add them to '
                         'ACCURACY')


@pytest.mark.parametrize('name', DA3_PRESETS)
def test_every_preset_runs_what_it_declares(every_preset, name):
    """Its fidelities, dtypes and program configs, seen on the hot path (support.ttnn_presets)."""
    assert_preset_active('da3metric-tiny 56x84', parse_precision(name, 'da3'),
                         every_preset[1][name][1])


def test_every_preset_gives_its_own_numbers(every_preset):
    """No two presets give the same depth but the two declared equal; none is fp32 round-off."""
    ref, runs = every_preset
    for name, (out, _) in runs.items():
        assert compare_maps(ref['depth'], out['depth']).median_rel > ROUNDOFF_REL, name
    for a, b in combinations(DA3_PRESETS, 2):
        same = np.array_equal(runs[a][0]['depth'], runs[b][0]['depth'])
        assert same is ({a, b} == {FAST_HIFI4, F32RH}), (a, b)


@pytest.mark.parametrize('name', DA3_PRESETS)
def test_every_preset_accuracy(every_preset, name):
    """PCC, median / p99 relative depth error and sky agreement within ACCURACY."""
    ref, runs = every_preset
    out = runs[name][0]
    a = compare_maps(ref['depth'], out['depth'])
    sky = mask_agreement(ref['sky'] >= SKY, out['sky'] >= SKY)
    print(f'{name} tiny 56x84: depth {a}; sky agreement {sky:.4f}')
    if name not in ACCURACY:
        pytest.fail(f'{name}: no stated bounds in ACCURACY (figures above)')
    floor, median, p99, sky_min = ACCURACY[name]
    assert a.pcc >= floor and a.finite_mismatch == 0, str(a)
    assert a.median_rel <= median and a.p99_rel <= p99, str(a)
    assert sky >= sky_min


# the default at the golden sizes: median and p99 relative depth error about 2.5x what it gives
DEFAULT_BOUNDS = {'tiny_280x504': (0.045, 0.1), 'tiny_378x504': (0.045, 0.1),
                  'tiny_518x518': (0.045, 0.1)}


@pytest.mark.parametrize('case', ['tiny_280x504', 'tiny_378x504', 'tiny_518x518'])
def test_default_meets_the_gate_at_every_golden_size(ttnn, da3_tiny_sd, case):
    """The default; 'fast-hifi4' and 'float32-residual-head' beside it: the same numbers."""
    g = np.load(DATA / 'da3' / f'{case}.npz')
    img = np.array(Image.open(DATA / 'da3' / f'{case}.png').convert('RGB'))
    out = {}
    for name in (None, FAST_HIFI4, F32RH):
        with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, dtype=name) as eng:
            out[eng.info.dtype] = eng.infer(img)
    ref = g['depth'][0]
    median, p99 = DEFAULT_BOUNDS[case]
    for name, o in out.items():
        a = compare_maps(ref, o['depth'])
        sky = mask_agreement(g['sky'][0] >= SKY, o['sky'] >= SKY)
        print(f'{name} {case}: depth {a}; sky agreement {sky:.4f}')
        assert a.pcc >= 0.9999
        assert a.median_rel <= median and a.p99_rel <= p99, str(a)
        assert float(np.max(np.abs(o['depth'] - ref) / ref)) < 0.05
        assert sky >= 0.999
    # program configs, L1 residency and a bfloat4_b mask (0 stays 0; -9.4e8 underflows the
    # softmax as -1e9 does) change no value on the stand-in; on a device GELU fused into fc1's
    # packer may round differently from the separate op by a bf16 step
    assert set(out) == {DEFAULT, FAST_HIFI4, F32RH}
    for key in ('depth', 'sky'):
        assert np.array_equal(out[FAST_HIFI4][key], out[F32RH][key]), key


def test_cost_of_the_float32_presets(ttnn, da3_tiny_sd):
    """Resident device bytes (weights + per-shape constants) and ops per traced forward."""
    rows = {}
    for name in ('bfloat16', 'float32-residual', F32RH, 'float32'):
        with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, dtype=name) as eng:
            eng.prepare((56, 84))
            dev = eng.ctx.device
            ops = len(next(iter(dev._traces.values())).records)
            rows[name] = (resident_bytes(dev), ops)
        total = sum(rows[name][0].values())
        print(f'{name}: {total / 1e6:.2f} MB resident '
              f'({ {k: round(v / 1e6, 2) for k, v in rows[name][0].items()} }), {ops} ops/forward')
    bf16, f32rh, f32 = (sum(rows[n][0].values()) for n in ('bfloat16', F32RH, 'float32'))
    assert bf16 < f32rh < f32 <= 2.05 * bf16
    assert rows[F32RH][0]['FLOAT32'] > 0 and 'FLOAT32' in rows['float32-residual'][0]
    # same graph but for the head: each of a float32 head's 5 resizes (4 fusion, 1 to the
    # image) runs one float32 matmul per side instead of a bf16 hi + lo pair and its add
    # (layers/resize.py): 2 matmuls and 2 adds fewer (the last 1x1 writes float32 in every
    # preset: dpt_output.py)
    assert rows['float32-residual'][1] == rows['bfloat16'][1]
    assert rows[F32RH][1] == rows['float32'][1] == rows['bfloat16'][1] - 5 * 4
    assert set(PRESETS) >= {'bfloat16', 'float32-residual', F32RH, 'float32'}
