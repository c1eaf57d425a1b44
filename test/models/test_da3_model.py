"""DA3 network parity with the upstream golden fixtures (tiny at every size, full size at 280x504).

Weights are rule-v1 (test/support/da3_fixtures.py); inputs are rebuilt from the fixture PNGs with
our own normalisation and must equal the stored `input` first.
"""
import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from devtools.rule_weights import rule_v1_state_dict
from support.da3_fixtures import (
    TINY_SIZES,
    assert_close_golden,
    golden,
    large_key_shapes,
    load_png_rgb,
    tiny_config_json,
    tiny_key_shapes,
    tiny_state_dict,
    write_safetensors,
)
from support.precision_gates import (
    assert_active,
    check,
    hot_path,
    skip_full_size_without_native_bf16,
)
from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize
from tt_depth_ros.models.da3.checkpoint import load_state_dict
from tt_depth_ros.models.da3.config import LARGE, MONO_LARGE, TINY
from tt_depth_ros.models.da3.model import DA3Model
from tt_depth_ros.models.layers.pos_embed import resample_pos_embed


@pytest.fixture(scope='module')
def tiny_model():
    torch.manual_seed(0)
    model = DA3Model(TINY).eval()
    load_state_dict(model, tiny_state_dict())
    return model


def test_tiny_config_matches_fixture_json():
    j = tiny_config_json()
    b, h = j['backbone'], j['head']
    assert (TINY.embed_dim, TINY.depth, TINY.num_heads) == (b['embed_dim'], b['depth'],
                                                           b['num_heads'])
    assert list(TINY.out_layers) == b['out_layers']
    assert (TINY.block_norm_eps, TINY.final_norm_eps) == (b['block_norm_eps'], b['final_norm_eps'])
    assert (TINY.features, list(TINY.out_channels)) == (h['features'], h['out_channels'])
    assert TINY.output_conv1_out == h['output_conv1_out']
    assert TINY.head_features_2 == h['head_features_2']
    large = j['large_equivalent']
    assert (LARGE.embed_dim, LARGE.depth, LARGE.num_heads) == (large['embed_dim'],
                                                              large['depth'], large['num_heads'])
    assert list(LARGE.out_layers) == large['out_layers']
    assert list(LARGE.out_channels) == large['out_channels']


def test_state_dict_keys_equal_checkpoint_keys():
    tiny = {'model.' + k: tuple(v.shape) for k, v in DA3Model(TINY).state_dict().items()}
    assert tiny == tiny_key_shapes()
    assert len(tiny) == 126 and sum(np.prod(s) for s in tiny.values()) == 580_978
    large = large_key_shapes()
    assert len(large) == 406 and sum(int(np.prod(s)) for s in large.values()) == 334_171_394
    assert large['model.head.resize_layers.0.weight'] == (256, 256, 4, 4)
    assert large['model.head.scratch.layer4_rn.weight'] == (256, 1024, 3, 3)
    assert 'model.head.scratch.refinenet4.resConfUnit1.conv1.weight' not in large
    assert large_key_shapes(MONO_LARGE) == large and MONO_LARGE.is_metric is False


@pytest.mark.parametrize('size', TINY_SIZES)
def test_tiny_parity(tiny_model, size):
    g = golden(f'tiny_{size}.npz')
    x = normalize(load_png_rgb(f'tiny_{size}.png'))[None]
    np.testing.assert_allclose(x, g['input'], rtol=0, atol=1e-6)
    with torch.inference_mode():
        out = tiny_model(torch.from_numpy(x), return_features=True)
    assert out['depth'].shape == g['depth'].shape
    assert_close_golden(out['depth'].numpy(), g['depth'], 'depth')
    assert_close_golden(out['sky_logit'].numpy(), g['sky_logit'], 'sky_logit')
    assert_close_golden(out['sky'].numpy(), g['sky'], 'sky', scale_ref=g['sky_logit'])
    for i in range(4):
        if f'feat{i}' in g:
            assert_close_golden(out[f'feat{i}'].numpy(), g[f'feat{i}'], 'feat')


def test_pos_embed_uses_scale_factor_semantics():
    pe = torch.randn(1, 1 + 37 * 37, 8)
    assert resample_pos_embed(pe, 37, 37) is pe  # 518x518 passthrough
    out = resample_pos_embed(pe, 20, 36)
    grid = pe[:, 1:].reshape(1, 37, 37, 8).permute(0, 3, 1, 2)
    ref = F.interpolate(grid, scale_factor=(20.1 / 37, 36.1 / 37), mode='bicubic',
                        antialias=False).permute(0, 2, 3, 1).reshape(1, 720, 8)
    torch.testing.assert_close(out[:, 1:], ref, rtol=0, atol=0)
    assert torch.equal(out[:, :1], pe[:, :1])
    by_size = F.interpolate(grid, size=(20, 36), mode='bicubic').permute(0, 2, 3, 1)
    assert (out[:, 1:] - by_size.reshape(1, 720, 8)).abs().max() > 1e-3


def test_model_rejects_bad_input_sizes(tiny_model):
    with pytest.raises(ValueError, match='multiples of 14'):
        tiny_model(torch.zeros(1, 3, 280, 500))
    with pytest.raises(ValueError, match='multiples of 14'):
        tiny_model(torch.zeros(1, 3, 7, 14))
    with pytest.raises(ValueError, match=r'\(B, 3, H, W\)'):
        tiny_model(torch.zeros(1, 4, 28, 28))


@pytest.fixture(scope='module')
def large_engine(tmp_path_factory):
    """Full-size checkpoint with real key names -> real file path -> engine (the slow tests)."""
    from tt_depth_ros.engines.factory import build_engine

    path = write_safetensors(rule_v1_state_dict(large_key_shapes()),
                             tmp_path_factory.mktemp('da3_large') / 'model.safetensors')
    engine = build_engine('da3metric-large', dtype='float32', weights=str(path),
                          backend='torch-cpu')
    path.unlink()                               # 1.3 GB; the engine holds the weights
    yield engine
    engine.close()


@pytest.mark.slow
def test_large_rule_v1_safetensors_parity(large_engine):
    """Full-size checkpoint with real key names -> real file path -> engine; 280x504 golden."""
    engine = large_engine
    assert engine.info.model == 'da3metric-large' and engine.info.dtype == 'float32'
    g = golden('large_280x504.npz')
    rgb = load_png_rgb('large_280x504.png')
    np.testing.assert_allclose(normalize(rgb)[None], g['input'], rtol=0, atol=1e-6)
    out = engine.infer(rgb)
    assert_close_golden(out['depth'], g['depth'][0], 'depth')
    assert_close_golden(out['sky'], g['sky'][0], 'sky', scale_ref=g['sky_logit'])


# (median, p99) relative depth error bounds against fp32 at 140x252: int8 about 2.5x what
# DA3-Large gives; cpu-fast the tiny model's bounds (test_torch_presets), since a CPU without
# native bf16 skips it at full size
LARGE_PRESET_BOUNDS = {'int8': (4e-2, 0.17), 'cpu-fast': (1.5e-2, 6e-2)}


@pytest.mark.slow
# 'cpu-fast' last: its bf16 head is a one-way cast
@pytest.mark.parametrize('preset', ['int8', 'cpu-fast'])
def test_large_precision_preset_gate(large_engine, preset):
    """A precision preset on the same model (engines/torch/presets.py), active and within bounds.

    The golden image at half size: the fp32 output there is the reference, one extra forward
    per preset.
    """
    skip_full_size_without_native_bf16(preset)
    precision, head = {'int8': ('int8', torch.float32),
                       'cpu-fast': ('bfloat16', torch.bfloat16)}[preset]
    rgb = load_png_rgb('large_280x504.png')
    x = torch.from_numpy(normalize(cv2.resize(rgb, (252, 140), interpolation=cv2.INTER_AREA))[None])
    net = large_engine.model
    with torch.inference_mode():
        ref = net.set_fused(True)(x)['depth'][0].numpy()
        with hot_path(net) as seen:
            got = net.set_fused(True, precision, head)(x)['depth'][0].numpy()
        assert_active('da3metric-large 140x252', preset, net, seen)
        net.set_fused(True)
    med, p99 = LARGE_PRESET_BOUNDS[preset]
    check('da3metric-large 140x252', preset, ref, got, median=med, p99=p99)

