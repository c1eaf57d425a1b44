"""DUSt3R torch model vs the upstream golden fixtures (test/data/dust3r/README.md §3, §5 gates)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from devtools.rule_weights import rule_v1_state_dict
from support.dust3r_data import (
    assert_gates,
    fixture,
    full_keys,
    normalise,
    pair_u8,
    tiny_state_dict,
)
from support.precision_gates import (
    assert_active,
    check,
    hot_path,
    skip_full_size_without_native_bf16,
)
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.models.dust3r.checkpoint import load_into
from tt_depth_ros.models.dust3r.config import LARGE, TINY
from tt_depth_ros.models.dust3r.model import Dust3r
from tt_depth_ros.models.layers.rope2d import RoPE2D, grid_positions


@pytest.fixture(scope='module')
def tiny_model():
    m = Dust3r(TINY).eval()
    load_into(m, tiny_state_dict())
    return m


def _run(model, ref, hw):
    u1, u2 = pair_u8(hw)
    x1, x2 = normalise(u1), normalise(u2)
    if 'img1' in ref:  # complete fixture: inputs stored
        np.testing.assert_array_equal(x1, ref['img1'])
        np.testing.assert_array_equal(x2, ref['img2'])
    else:  # grid4 fixture: float64 sums of the inputs
        assert x1.astype(np.float64).sum() == pytest.approx(float(ref['img1_sum']), abs=1e-6)
        assert x2.astype(np.float64).sum() == pytest.approx(float(ref['img2_sum']), abs=1e-6)
    with torch.inference_mode():
        out = model(torch.from_numpy(x1), torch.from_numpy(x2))
    return {k: v.numpy() for k, v in out.items()}


@pytest.mark.parametrize('name,hw', [('tiny_80x112', '80x112'),
                                     ('tiny_384x512_grid4', '384x512'),
                                     ('tiny_512x384_grid4', '512x384')])
def test_tiny_matches_upstream(tiny_model, name, hw):
    ref = fixture(name)
    out = _run(tiny_model, ref, hw)
    np.testing.assert_array_equal(ref['true_shape'][0], out['raw1'].shape[2:])
    assert_gates(out, ref)


def test_different_view_sizes_run_encoder_per_view(tiny_model):
    """Unequal shapes take the per-view encoder path; batching must not change the encoder."""
    u1, u2 = pair_u8('80x112')
    x1, x2 = torch.from_numpy(normalise(u1)), torch.from_numpy(normalise(u2))
    with torch.inference_mode():
        f_pair, _ = tiny_model.encode(torch.cat((x1, x2)))
        f_one, _ = tiny_model.encode(x1)
        out = tiny_model(x1, x2[:, :, :64])
    torch.testing.assert_close(f_pair[:1], f_one, rtol=1e-5, atol=1e-5)
    assert out['pts3d_1'].shape == (1, 80, 112, 3) and out['pts3d_2'].shape == (1, 64, 112, 3)


def test_rope2d_quarter_layout_and_base():
    """RoPE rotates [u_Y|v_Y|u_X|v_X] quarters by row/col with theta_j = p * 100^(-j/16)."""
    t = torch.randn(1, 1, 6, 64, dtype=torch.float64)
    pos = grid_positions(2, 3)
    got = RoPE2D(100.0)(t, pos)
    want = t.clone()
    for n in range(6):
        for half, p in ((0, int(pos[0, n, 0])), (32, int(pos[0, n, 1]))):
            for j in range(16):
                th = p * 100.0 ** (-j / 16)
                u, v = t[0, 0, n, half + j], t[0, 0, n, half + 16 + j]
                want[0, 0, n, half + j] = u * np.cos(th) - v * np.sin(th)
                want[0, 0, n, half + 16 + j] = v * np.cos(th) + u * np.sin(th)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_model_keys_equal_checkpoint_keys():
    """Module attribute names are the checkpoint keys (mask_token is the only extra)."""
    own = set(Dust3r(TINY).state_dict())
    assert own == set(tiny_state_dict()) - {'mask_token'}
    with torch.device('meta'):
        big = set(Dust3r(LARGE).state_dict())
    assert big == {k['key'] for k in full_keys()} - {'mask_token'}


@pytest.fixture(scope='module')
def full_engine(tmp_path_factory):
    """Full ViT-L/Base/DPT from a real-layout rule-v1 safetensors file through build_engine."""
    from safetensors.numpy import save_file
    keys = full_keys()
    state = rule_v1_state_dict({k['key']: tuple(k['shape']) for k in keys})
    for k in keys:
        t = state[k['key']]
        assert t.reshape(-1)[:4].tolist() == pytest.approx(k['first4'], abs=0), k['key']
        assert float(t.sum(dtype=np.float64)) == pytest.approx(k['sum'], rel=1e-9, abs=1e-9)
    path = tmp_path_factory.mktemp('dust3r_full') / 'model.safetensors'
    save_file(state, str(path))
    del state
    eng = build_engine('dust3r-vitl-512-dpt', dtype='float32', backend='torch-cpu',
                       weights=str(path))
    path.unlink()
    yield eng
    eng.close()


@pytest.mark.slow
def test_full_rule_v1_from_safetensors_matches_upstream(full_engine):
    """Full ViT-L/Base/DPT from a real-layout rule-v1 safetensors file through build_engine."""
    model = full_engine.model   # the engine's own loaded network; called directly to also get raw
    ref = fixture('full_384x512_grid4')
    assert_gates(_run(model, ref, '384x512'), ref)


# (median, p99) relative error bounds per 3-D point of pts3d_2 against fp32 at 192x256: int8
# about 2x what the full-size model gives on its synthetic weights (int8 is reported, never
# chosen by 'auto'); bf16-matmul the tiny model's bounds (test_torch_presets), since a CPU
# without native bf16 skips it at full size
FULL_PRESET_BOUNDS = {'int8': (0.5, 0.8), 'bf16-matmul': (4e-2, 0.15)}


@pytest.mark.slow
@pytest.mark.parametrize('preset', ['int8', 'bf16-matmul'])
def test_full_precision_preset_gate(full_engine, preset):
    """A precision preset on the same model (DUSt3R: block matmuls only), active and in bounds.

    The pair at half size: fp32 there is the reference, one extra forward per preset.
    """
    skip_full_size_without_native_bf16(preset)
    model = full_engine.model
    x1, x2 = (torch.from_numpy(normalise(cv2.resize(u, (256, 192), interpolation=cv2.INTER_AREA)))
              for u in pair_u8('384x512'))
    precision = {'int8': 'int8', 'bf16-matmul': 'bfloat16'}[preset]
    with torch.inference_mode():
        want = model.set_precision('float32')(x1, x2)['pts3d_2'].numpy()
        with hot_path(model) as seen:
            got = model.set_precision(precision)(x1, x2)['pts3d_2'].numpy()
        assert_active('dust3r 192x256', preset, model, seen)
        model.set_precision('float32')
    med, p99 = FULL_PRESET_BOUNDS[preset]
    check('dust3r 192x256', preset, want, got, median=med, p99=p99, vector_axis=-1)


def test_flop_count_matches_spec_table():
    """docs/dust3r.md §4: encoder 1.046, decoder 0.437, head 0.187, pair 1.86 TFLOP at 512x384."""
    from tt_depth_ros.models.dust3r.flops import head_flops, pair_flops
    f = pair_flops(LARGE, 384, 512)
    assert f['encoder'] / 1e12 == pytest.approx(1.046, abs=5e-4)
    assert f['decoder'] / 1e12 == pytest.approx(0.437, abs=5e-4)
    assert head_flops(LARGE, 384, 512) / 1e12 == pytest.approx(0.187, abs=5e-4)
    assert f['total'] / 1e12 == pytest.approx(1.86, abs=5e-3)
    assert pair_flops(LARGE, 512, 512)['total'] / 1e12 == pytest.approx(2.57, abs=5e-3)
