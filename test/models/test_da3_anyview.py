"""DA3 any-view models (SMALL / BASE / LARGE-1.1 / GIANT-1.1 / tiny) against the golden fixtures.

Weights are rule-v1 + X1 regenerated from the key lists (test/data/da3_anyview); inputs are
rebuilt from the PNGs with our own normalisation and must equal the stored `input` first.
Tolerances: the golden README's (support.da3_fixtures.assert_anyview_close).
"""
import numpy as np
import pytest
import torch

from support.da3_fixtures import (
    anyview_config_json,
    anyview_golden,
    anyview_key_shapes,
    anyview_png,
    anyview_state_dict,
    assert_anyview_close,
    grid4,
)
from support.precision_gates import assert_active, check, hot_path
from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize
from tt_depth_ros.models.da3.backbone import select_reference_view
from tt_depth_ros.models.da3.checkpoint import (
    AUX_LN_ALIASES,
    CheckpointError,
    fit_state_dict,
    load_state_dict,
)
from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, ANYVIEW_TINY, BASE, SMALL
from tt_depth_ros.models.da3.model import DA3Model

VIEWS = {'tiny_1v_280x504': ['scene0_280x504_view0.png'],
         'tiny_2v_280x504': ['scene0_280x504_view0.png', 'scene0_280x504_view1.png'],
         'tiny_1v_378x504': ['scene0_378x504_view0.png'],
         'small_1v_280x504': ['scene0_280x504_view0.png'],
         'large_2v_280x504': ['scene0_280x504_view0.png', 'scene0_280x504_view1.png']}
FULL_PARAMS = {'da3-small': 34_299_463, 'da3-base': 135_366_599, 'da3-large-1.1': 410_941_767,
               'da3-giant-1.1': 1_355_674_125}
DENSE = ('depth', 'depth_conf')
RAY = ('ray', 'ray_conf')


def _model(name: str) -> DA3Model:
    model = DA3Model(ANYVIEW_CONFIGS[name]).eval()
    load_state_dict(model, anyview_state_dict(name))
    return model


def _inputs(case: str, g: dict) -> torch.Tensor:
    x = np.stack([normalize(anyview_png(p)) for p in VIEWS[case]])
    np.testing.assert_allclose(x, g['input'], rtol=0, atol=1e-6)
    return torch.from_numpy(x)


def _check_case(out: dict, g: dict, grid: bool) -> None:
    for k in DENSE + RAY:
        ours = out[k].numpy()
        if grid:
            ours = grid4(ours, g, ray=k in RAY)
        assert ours.shape == g[k].shape, k
        assert_anyview_close(ours, g[k], 'depth' if k != 'ray' else 'ray')
    for k in ('pose_enc', 'extrinsics', 'intrinsics', 'cam_token'):
        assert_anyview_close(out[k].numpy(), g[k], k)
    for i in range(4):
        if f'feat{i}' in g:
            assert_anyview_close(out[f'feat{i}'].numpy(), g[f'feat{i}'], 'feat')


@pytest.fixture(scope='module')
def tiny():
    return _model('da3-anyview-tiny')


def test_tiny_config_matches_fixture_json():
    j = anyview_config_json()
    b, h = j['backbone'], j['head']
    c = ANYVIEW_TINY
    assert (c.embed_dim, c.depth, c.num_heads) == (b['embed_dim'], b['depth'], b['num_heads'])
    assert list(c.out_layers) == b['out_layers']
    assert (c.alt_start, c.qknorm_start, c.rope_start) == (b['alt_start'], b['qknorm_start'],
                                                           b['rope_start'])
    assert [i for i in range(c.depth) if c.is_global(i)] == b['global_attention_blocks']
    assert (c.features, list(c.out_channels), c.head_dim_in) == (h['features'],
                                                                 h['out_channels'], h['dim_in'])
    for name, eq in j['full_size_equivalents'].items():
        cfg = ANYVIEW_CONFIGS[name]
        assert (cfg.embed_dim, cfg.depth, cfg.num_heads) == (eq['embed_dim'], eq['depth'],
                                                             eq['num_heads'])
        assert (list(cfg.out_layers), cfg.alt_start) == (eq['out_layers'], eq['alt_start'])
        assert (cfg.features, list(cfg.out_channels)) == (eq['features'], eq['out_channels'])
        assert cfg.ffn == eq['ffn'].split()[0]


def test_x1_rule_fingerprints():
    """README fingerprint rows (first values, float64 sum), tiny and da3-small keys."""
    tiny = anyview_state_dict()
    rows = [('model.cam_dec.fc_fov.0.weight', tiny, [0.0038046283, 0.00073139067], -0.053029326),
            ('model.cam_dec.fc_fov.0.bias', tiny, [1.0134687, 1.0134615], 2.0269302),
            ('model.backbone.pretrained.camera_token', tiny, [0.016833592, -0.056277756],
             -0.26106148)]
    for key, sd, first, total in rows:
        v = sd[key]
        np.testing.assert_allclose(v.ravel()[:2], first, rtol=1e-6)
        np.testing.assert_allclose(v.astype(np.float64).sum(), total, rtol=1e-6)
    assert 'model.head.scratch.output_conv2_aux.1.2.weight' not in tiny   # tied alias


@pytest.mark.parametrize('name', sorted(FULL_PARAMS))
def test_full_size_key_lists_fit_strictly(name):
    """Every golden key list loads strictly into our model (meta device: no memory)."""
    shapes = anyview_key_shapes(name)
    assert sum(int(np.prod(s)) for k, s in shapes.items()
               if not k.startswith(('model.cam_enc.', 'model.gs_head.'))) < FULL_PARAMS[name]
    assert sum(int(np.prod(s)) for s in shapes.values()) == FULL_PARAMS[name]
    with torch.device('meta'):
        model = DA3Model(ANYVIEW_CONFIGS[name])
        state = {k: torch.empty(s) for k, s in shapes.items()}
    mapped = fit_state_dict(model, state)
    assert set(mapped) == set(model.state_dict())
    state.pop('model.head.scratch.output_conv2_aux.0.2.weight')
    with pytest.raises(CheckpointError, match='missing keys.*output_conv2_aux'):
        fit_state_dict(model, state)


def test_tied_aux_layernorm_and_unused_branches(tiny):
    ln = [tiny.head.scratch.output_conv2_aux[i][2] for i in range(4)]
    assert all(m is ln[0] for m in ln)
    sd = anyview_state_dict()
    np.testing.assert_array_equal(ln[3].weight.detach().numpy(),
                                  sd['model.head.scratch.output_conv2_aux.0.2.weight'])
    assert not any(k.startswith(('cam_enc.', 'gs_head.')) for k in tiny.state_dict())
    # a plain state_dict() save lists the alias: accepted when equal, refused when not
    alias = 'model.' + AUX_LN_ALIASES[2] + 'bias'
    sd[alias] = sd['model.head.scratch.output_conv2_aux.0.2.bias'].copy()
    load_state_dict(DA3Model(ANYVIEW_TINY), sd)
    sd[alias] = sd[alias] + 1.0
    with pytest.raises(CheckpointError, match='tied alias'):
        load_state_dict(DA3Model(ANYVIEW_TINY), sd)


def test_metric_checkpoint_does_not_fit_anyview():
    from support.da3_fixtures import tiny_state_dict
    with pytest.raises(CheckpointError, match='missing keys.*camera_token|missing keys'):
        load_state_dict(DA3Model(ANYVIEW_TINY), tiny_state_dict())


@pytest.mark.parametrize('fused', [False, True])
@pytest.mark.parametrize('case', ['tiny_1v_280x504', 'tiny_2v_280x504', 'tiny_1v_378x504'])
def test_tiny_parity(tiny, case, fused):
    g = anyview_golden(f'{case}.npz')
    tiny.set_fused(fused)
    try:
        with torch.inference_mode():
            out = tiny(_inputs(case, g), return_features=True)
    finally:
        tiny.set_fused(False)
    assert int(out['ref_view']) == 0
    _check_case(out, g, grid=False)


def test_reference_view_follows_the_views(tiny):
    """3+ views: the selected view is a property of the views, not of their input order."""
    imgs = [anyview_png(p) for p in ('scene0_280x504_view0.png', 'scene0_280x504_view1.png')]
    x = torch.from_numpy(np.stack([normalize(im) for im in imgs + [imgs[0][:, ::-1]]]))
    with torch.inference_mode():
        a = tiny(x)
        perm = [2, 0, 1]
        b = tiny(x[perm])
    ref_a = int(a['ref_view'])
    assert int(b['ref_view']) == perm.index(ref_a)
    for k in ('depth', 'depth_conf', 'extrinsics', 'intrinsics'):
        torch.testing.assert_close(b[k], a[k][perm], rtol=1e-4, atol=1e-5)


def test_select_reference_view_saddle_balanced():
    t = torch.tensor([[1.0, 0.0, 0.0], [0.9, 0.5, 0.0], [0.0, 2.0, 0.1], [0.5, 0.5, 3.0]])
    f = t / t.norm(dim=-1, keepdim=True)
    sim = ((f @ f.t()).sum(-1) - 1) / 3
    score = sum(((m - m.min()) / (m.max() - m.min() + 1e-8) - 0.5).abs()
                for m in (sim, t.norm(dim=-1), f.var(dim=-1)))
    assert select_reference_view(t) == int(torch.argmin(score))
    assert select_reference_view(torch.ones(3, 4)) == 0   # ties: first index


@pytest.fixture(scope='module')
def small():
    return _model('da3-small')


def test_small_1v_parity(small):
    g = anyview_golden('small_1v_280x504.npz')
    with torch.inference_mode():
        out = small(_inputs('small_1v_280x504', g))
    _check_case(out, g, grid=True)


# (median, p99) relative depth error bounds against upstream fp32: about 2.5x what DA3-SMALL gives
SMALL_PRESET_BOUNDS = {'bf16-matmul': (6e-3, 2.5e-2), 'int8': (2.5e-2, 1e-1)}


@pytest.mark.parametrize('precision', ['bfloat16', 'int8'])
def test_small_reduced_precision_gate(small, precision):
    """Presets 'bf16-matmul' / 'cpu-fast' (any-view: the same) and 'int8' on the golden 1-view case.

    One extra forward of the module's model per preset; its depth against upstream's fp32 depth
    (support.precision_gates). The switch is reversible: off again, the model is exact.
    """
    g = anyview_golden('small_1v_280x504.npz')
    preset = 'int8' if precision == 'int8' else 'bf16-matmul'
    with torch.inference_mode(), hot_path(small) as seen:
        out = small.set_fused(True, precision)(_inputs('small_1v_280x504', g))
    assert_active('da3-small 1v 280x504', preset, small, seen)
    small.set_fused(False)
    assert all(b._kernels is None for b in small.backbone.pretrained.blocks)
    med, p99 = SMALL_PRESET_BOUNDS[preset]
    check('da3-small 1v 280x504', preset, g['depth'], grid4(out['depth'].numpy(), g),
          median=med, p99=p99)


def test_small_3v_network_selects_reference_view_1(small):
    """api_small_3v network part: views 1, 0, 2 of scene 0; upstream picks input view 1."""
    g = anyview_golden('api_small_3v_1280x720.npz')
    with torch.inference_mode():
        out = small.set_fused(True)(torch.from_numpy(g['input']))
    small.set_fused(False)
    assert int(out['ref_view']) == int(g['ref_view']) == 1
    assert_anyview_close(grid4(out['depth'].numpy(), g), g['depth'], 'depth')
    assert_anyview_close(grid4(out['depth_conf'].numpy(), g), g['conf'], 'conf')
    assert_anyview_close(out['extrinsics'].numpy(), g['extrinsics'], 'extrinsics')
    assert_anyview_close(out['intrinsics'].numpy(), g['intrinsics'], 'intrinsics')


def test_base_builds_from_its_key_list():
    """DA3-BASE has no forward fixture: strict load of rule-v1 + X1 and a finite forward."""
    model = _model('da3-base').set_fused(True)
    assert model.cfg is BASE and SMALL.depth == BASE.depth
    x = torch.from_numpy(normalize(anyview_png('scene0_280x504_view0.png'))[None])
    with torch.inference_mode():
        out = model(x)
    assert out['depth'].shape == (1, 280, 504) and torch.isfinite(out['depth']).all()
    assert torch.isfinite(out['extrinsics']).all() and out['intrinsics'][0, 0, 0] > 100


@pytest.mark.slow
@pytest.mark.xdist_group('full_size_heavy')    # test/conftest.py
def test_large_1_1_2v_parity():
    model = _model('da3-large-1.1').set_fused(True)
    g = anyview_golden('large_2v_280x504.npz')
    with torch.inference_mode():
        out = model(_inputs('large_2v_280x504', g))
    del model
    _check_case(out, g, grid=True)
