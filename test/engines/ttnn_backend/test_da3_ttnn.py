"""DA3 ttnn engine through the CPU stand-in: parity, trace path and discipline, precision.

Parity is against the golden fixtures, which our fp32 torch model matches to ~1e-5.

Gate note: the issue asks depth PCC >= 0.9999. The DA3 default preset
'fast-hifi3+mask_free_sdpa+block_sharded' meets it (test_da3_precision.py, which has the table and
gates every preset); the rows here run 'bfloat16' explicitly and keep its numbers reported: ~0.9996
with every device tensor in bf16, while the control — our torch model with the whole network in
bf16 — reaches ~0.9998. They gate at 0.999, with the depth error's magnitude and the sky mask
beside it.
"""
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tt_depth_ros.engines.parity import compare_maps, mask_agreement, pcc
from tt_depth_ros.engines.ttnn import build_ttnn_engine

DATA = Path(__file__).resolve().parents[2] / 'data'


def load_png(path):
    return np.array(Image.open(path).convert('RGB'))


SIZES = ['tiny_280x504', 'tiny_378x504', 'tiny_518x518']


def _engine(sd, dtype=None):
    return build_ttnn_engine('da3metric-tiny', state_dict=sd, dtype=dtype)


@pytest.mark.parametrize('case', SIZES)
def test_tiny_parity_every_golden_size(ttnn, da3_tiny_sd, case):
    g = np.load(DATA / 'da3' / f'{case}.npz')
    img = load_png(DATA / 'da3' / f'{case}.png')
    with _engine(da3_tiny_sd, 'bfloat16') as eng:
        eng.prepare(img.shape[:2])
        out = eng.infer(img)
    ref = g['depth'][0]
    a = compare_maps(ref, out['depth'])
    sky = mask_agreement(g['sky'][0] >= 0.3, out['sky'] >= 0.3)    # upstream's sky threshold
    print(f'bfloat16 {case}: depth {a}; sky agreement {sky:.4f}')
    assert out['depth'].shape == ref.shape and out['depth'].dtype == np.float32
    assert a.pcc >= 0.999
    # magnitude: about 2.5x the median / p99 relative depth error bfloat16 gives here
    assert a.median_rel <= 0.025 and a.p99_rel <= 0.1, str(a)
    assert sky >= 0.999
    assert pcc(np.maximum(out['sky'], 0), g['sky'][0]) > 0.99


def test_control_torch_bf16(da3_tiny_sd):
    """The control: our torch model with the whole network in bf16, same fixture."""
    from tt_depth_ros.engines.torch.da3 import build_model
    g = np.load(DATA / 'da3' / 'tiny_280x504.npz')
    m = build_model('da3metric-tiny', state_dict=da3_tiny_sd).to(torch.bfloat16)
    with torch.no_grad():
        d = m(torch.from_numpy(g['input']).to(torch.bfloat16))['depth'][0].float().numpy()
    p = pcc(d, g['depth'][0])
    print(f'control torch all-bf16 280x504: depth PCC {p:.6f}')
    assert 0.999 < p < 0.99995   # bf16 alone already costs the 4th nine on these weights


def test_full_trace_path_several_frames(ttnn, da3_tiny_sd):
    """Prepare -> capture -> several frames replayed from the persistent input -> release."""
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (56, 84, 3), dtype=np.uint8) for _ in range(3)]
    with _engine(da3_tiny_sd) as eng:
        eng.prepare((56, 84))
        dev = eng.ctx.device
        assert len(dev._traces) == 1
        outs = [eng.infer(f)['depth'] for f in frames]
        assert set(eng.last_timings) >= {'upload', 'enqueue', 'device_and_readback'}
        again = eng.infer(frames[0])['depth']
    np.testing.assert_array_equal(again, outs[0])       # replay reads the current input
    assert not np.array_equal(outs[0], outs[1])
    with _engine(da3_tiny_sd) as fresh:                  # a fresh eager+trace gives the same
        np.testing.assert_array_equal(fresh.infer(frames[1])['depth'], outs[1])


def test_new_shape_after_capture_recaptures_all(ttnn, da3_tiny_sd):
    a = np.full((56, 84, 3), 100, np.uint8)
    b = np.full((70, 70, 3), 100, np.uint8)
    with _engine(da3_tiny_sd) as eng:
        eng.prepare((56, 84))
        first = eng.infer(a)['depth']
        tid_a = eng._shapes[((56, 84), None)].trace
        out_b = eng.infer(b)                 # unprepared: release, warm, re-capture both
        assert out_b['depth'].shape == (70, 70)
        assert len(eng.ctx.device._traces) == 2
        assert eng._shapes[((56, 84), None)].trace != tid_a
        np.testing.assert_array_equal(eng.infer(a)['depth'], first)


def test_cleanup_leaves_nothing_allocated(ttnn, da3_tiny_sd):
    eng = _engine(da3_tiny_sd)
    eng.prepare((56, 84))
    eng.infer(np.zeros((56, 84, 3), np.uint8))
    dev = eng.ctx.device
    eng.close()                                # close_device raises if anything were left
    assert not dev._is_open and not dev._traces and dev.live_tensors() == []
    eng.close()                                # idempotent
    with pytest.raises(RuntimeError, match='closed'):
        eng.infer(np.zeros((56, 84, 3), np.uint8))


def test_dispatch_and_grid(ttnn, da3_tiny_sd):
    with _engine(da3_tiny_sd) as eng:
        assert eng.info.details['dispatch'] == 'worker' and eng.ctx.grid == (11, 10)
    ttnn.set_eth_dispatch_patched(True)
    with _engine(da3_tiny_sd) as eng:
        assert eng.info.details['dispatch'] == 'eth' and eng.ctx.grid == (12, 10)
        assert eng.info.backend == 'ttnn'


def test_engine_details_carry_the_registry_kind(ttnn, da3_tiny_sd):
    """The depth node reads the kind from info.details: a ttnn DA3MONO engine is relative."""
    from tt_depth_ros.models.da3.config import TINY

    with _engine(da3_tiny_sd) as eng:
        assert eng.info.details['kind'] == 'metric' and eng.info.details['is_metric'] is True
    with build_ttnn_engine('da3mono-large', state_dict=da3_tiny_sd, config=TINY) as eng:
        assert eng.info.details['kind'] == 'mono' and eng.info.details['is_metric'] is False


def test_bad_inputs(ttnn, da3_tiny_sd):
    with _engine(da3_tiny_sd) as eng:
        with pytest.raises(ValueError, match='uint8'):
            eng.infer(np.zeros((56, 84, 3), np.float32))
        with pytest.raises(ValueError, match='multiple'):
            eng.prepare((50, 84))
    with pytest.raises(ValueError, match='allowed'):
        build_ttnn_engine('da3metric-tiny', state_dict={}, dtype='float16')


def test_weight_cache_reused_and_keyed(ttnn, da3_tiny_sd, tmp_path):
    img = np.full((56, 84, 3), 90, np.uint8)
    with _engine(da3_tiny_sd) as eng:
        cache = eng.ctx.weight_cache
        first = eng.infer(img)['depth']
    files = cache.files
    assert len(files) == cache.count > 50
    stamp = {f: f.stat().st_mtime_ns for f in files}
    with _engine(da3_tiny_sd) as eng2:                       # same checkpoint + precision: reuse
        assert eng2.ctx.weight_cache.directory == cache.directory
        np.testing.assert_array_equal(eng2.infer(img)['depth'], first)
    assert {f: f.stat().st_mtime_ns for f in cache.files} == stamp
    with _engine(da3_tiny_sd, 'bfloat8_b') as eng3:          # other precision: other key
        assert eng3.ctx.weight_cache.directory != cache.directory
    sd2 = dict(da3_tiny_sd)
    k = next(iter(sd2))
    sd2[k] = sd2[k] + 1.0
    with _engine(sd2) as eng4:                                # other checkpoint: other key
        assert eng4.ctx.weight_cache.directory != cache.directory


def test_engine_math_is_exact_without_bf16_rounding(ttnn, da3_tiny_sd):
    """Diagnostic: bf16 rounding off -> the golden fp32 tolerances hold.

    So every remaining difference in the parity tests above is bf16 precision, not engine math.
    """
    from devtools.ttnn.standin.numerics import exact_arithmetic
    g = np.load(DATA / 'da3' / 'tiny_280x504.npz')
    with exact_arithmetic(), _engine(da3_tiny_sd) as eng:
        out = eng.infer(load_png(DATA / 'da3' / 'tiny_280x504.png'))
    ref = g['depth'][0]
    np.testing.assert_allclose(out['depth'], ref, rtol=1e-4, atol=1e-5 * ref.max())
    np.testing.assert_allclose(out['sky'], g['sky'][0], rtol=1e-4,
                               atol=5e-5 * np.abs(g['sky_logit']).max())
