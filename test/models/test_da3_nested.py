"""DA3NESTED-GIANT-LARGE-1.1 against the golden NESTED case.

Alignment against the stored intermediates, determinism above 100,000 pixels, strict key list,
branch routing; the full-size forward (~9 GB RAM, ~70 s) runs in `make test` (a developer may skip
it with TT_DEPTH_SKIP_GIANT=1; CI never does).
"""
import os

import numpy as np
import pytest
import torch

from support.da3_fixtures import (
    anyview_golden,
    anyview_key_shapes,
    anyview_png,
    anyview_state_dict,
    assert_anyview_close,
    fill_rule_inplace,
    grid4,
    tiny_state_dict,
)
from tt_depth_ros.geometry.preprocess.da3_preprocess import normalize
from tt_depth_ros.models.da3.checkpoint import CheckpointError, fit_state_dict, split_nested
from tt_depth_ros.models.da3.config import ANYVIEW_TINY, TINY
from tt_depth_ros.models.da3.nested import NestedDA3, load_nested_state_dict
from tt_depth_ros.models.da3.nested_align import MAX_QUANTILE_SAMPLES, align_to_metric, subsample

NESTED_KEYS = 'da3nested-giant-large-1.1'
BRANCHES = {'model.da3.': 'da3.', 'model.da3_metric.': 'da3_metric.'}


@pytest.fixture(scope='module')
def g():
    return anyview_golden('nested_1v_280x504.npz')


def _align(g):
    t = {k: torch.from_numpy(g[k]) for k in ('depth_anyview', 'depth_conf_anyview',
                                             'extrinsics_anyview', 'intrinsics',
                                             'metric_depth_raw')}
    return align_to_metric(t['depth_anyview'], t['depth_conf_anyview'], t['extrinsics_anyview'],
                           t['intrinsics'], t['metric_depth_raw'],
                           torch.relu(torch.from_numpy(g['metric_sky_logit'])))


def test_alignment_reproduces_golden_intermediates(g):
    out = _align(g)
    for k in ('non_sky_mask', 'align_mask'):
        np.testing.assert_array_equal(out[k].numpy(), g[k])
    assert int(g['non_sky_mask'].sum()) == 37_461 and int(g['align_mask'].sum()) == 18_731
    for k in ('median_conf', 'sky_fill', 'scale_factor', 'depth', 'depth_conf', 'extrinsics'):
        np.testing.assert_allclose(out[k].numpy(), g[k], rtol=1e-6, atol=0, err_msg=k)
    assert int(g['is_metric']) == 1


def _big_scene(seed: int):
    gen = np.random.default_rng(seed)
    s, h, w = 2, 280, 504                           # 282,240 pixels, mostly non-sky
    depth = torch.from_numpy(gen.uniform(0.5, 5, (s, h, w)).astype(np.float32))
    conf = torch.from_numpy(gen.uniform(1, 4, (s, h, w)).astype(np.float32))
    metric = depth * 0.7 * torch.from_numpy(gen.uniform(0.9, 1.1, (s, h, w)).astype(np.float32))
    sky = torch.zeros(s, h, w)
    sky[:, :20] = 1.0
    k = torch.tensor([[300.0, 0, 252], [0, 300.0, 140], [0, 0, 1]]).expand(s, 3, 3)
    ext = torch.from_numpy(gen.normal(size=(s, 3, 4)).astype(np.float32))
    return depth, conf, ext, k, metric, sky


def test_alignment_above_100k_pixels_is_deterministic():
    """Upstream samples the quantile inputs with the torch RNG here; ours does not."""
    args = _big_scene(0)
    torch.manual_seed(0)
    a = align_to_metric(*args)
    torch.manual_seed(123)
    b = align_to_metric(*args)
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert int(a['non_sky_mask'].sum()) > MAX_QUANTILE_SAMPLES
    # the evenly spaced subset is close to the exact quantile, and the scale is the lstsq ratio
    conf = args[1][a['non_sky_mask']]
    exact = torch.quantile(conf.double()[torch.randperm(conf.numel())[:10 ** 6]], 0.5)
    assert abs(float(a['median_conf']) - float(exact)) < 0.02
    assert abs(float(a['scale_factor']) - 0.7) < 0.01


def test_subsample_is_evenly_spaced():
    v = torch.arange(250_000)
    s = subsample(v)
    assert s.numel() == MAX_QUANTILE_SAMPLES and int(s[0]) == 0 and int(s[1]) == 2
    assert int(s[-1]) == (MAX_QUANTILE_SAMPLES - 1) * 250_000 // MAX_QUANTILE_SAMPLES
    small = torch.arange(10)
    assert subsample(small) is small


def test_all_sky_is_an_explicit_error():
    depth, conf, ext, k, metric, sky = _big_scene(1)
    with pytest.raises(ValueError, match='every pixel is sky'):
        align_to_metric(depth, conf, ext, k, metric, torch.ones_like(sky))


def test_nested_key_list_fits_strictly():
    shapes = anyview_key_shapes(NESTED_KEYS)
    assert len(shapes) == 1377
    assert sum(int(np.prod(s)) for s in shapes.values()) == 1_689_845_519
    with torch.device('meta'):
        model = NestedDA3()
        state = {k: torch.empty(s) for k, s in shapes.items()}
    parts = split_nested(state)
    assert len(parts['da3']) == 971 and len(parts['da3_metric']) == 406
    assert set(fit_state_dict(model.da3, parts['da3'])) == set(model.da3.state_dict())
    assert set(fit_state_dict(model.da3_metric, parts['da3_metric'])) == set(
        model.da3_metric.state_dict())
    with pytest.raises(CheckpointError, match='not a DA3NESTED checkpoint'):
        split_nested({'model.backbone.pretrained.cls_token': torch.empty(1)})


def _tiny_nested_state():
    sd = {'model.da3.' + k[len('model.'):]: v for k, v in anyview_state_dict().items()}
    sd.update({'model.da3_metric.' + k[len('model.'):]: v for k, v in tiny_state_dict().items()})
    return sd


def test_tiny_nested_is_both_branches_then_alignment():
    """Routing and composition on tiny branches (the golden NESTED case is full size)."""
    nested = NestedDA3(ANYVIEW_TINY, TINY).eval()
    load_nested_state_dict(nested, _tiny_nested_state())
    x = torch.from_numpy(normalize(anyview_png('scene0_280x504_view0.png'))[None])
    with torch.inference_mode():
        out = nested(x)
        av, mt = nested.da3(x), nested.da3_metric(x)
    torch.testing.assert_close(out['depth_anyview'], av['depth'], rtol=0, atol=0)
    torch.testing.assert_close(out['metric_depth_raw'], mt['depth'], rtol=0, atol=0)
    ref = align_to_metric(av['depth'], av['depth_conf'], av['extrinsics'], av['intrinsics'],
                          mt['depth'], mt['sky'])
    for k in ref:
        torch.testing.assert_close(out[k], ref[k], rtol=0, atol=0)
    with pytest.raises(ValueError, match='any-view and a metric'):
        NestedDA3(TINY, ANYVIEW_TINY)


@pytest.mark.slow
@pytest.mark.xdist_group('full_size_heavy')    # ~8.8 GB peak: test/conftest.py
@pytest.mark.skipif(os.environ.get('TT_DEPTH_SKIP_GIANT') == '1' and os.environ.get('CI') != 'true',
                    reason='TT_DEPTH_SKIP_GIANT=1: full-size NESTED (~9 GB RAM, ~70 s) skipped '
                           'on this developer machine (never in CI)')
def test_full_size_nested_matches_golden(g):
    with torch.device('meta'):
        model = NestedDA3()
    model = model.to_empty(device='cpu').eval()
    shapes = anyview_key_shapes(NESTED_KEYS)
    written = fill_rule_inplace(model, shapes, branch_prefixes=BRANCHES)
    assert written == len(dict(model.named_parameters())) == 1377 - 64 - 66   # no cam_enc, gs_head
    x = torch.from_numpy(normalize(anyview_png('scene0_280x504_view0.png'))[None])
    np.testing.assert_allclose(x.numpy(), g['input'], rtol=0, atol=1e-6)
    with torch.inference_mode():
        out = model.set_fused(True)(x)
    del model
    o = {k: v.numpy() for k, v in out.items() if isinstance(v, torch.Tensor)}
    for k in ('depth_anyview', 'depth_conf_anyview', 'metric_depth_raw'):
        assert_anyview_close(o[k], g[k], 'depth')
    np.testing.assert_allclose(o['metric_sky_logit'], g['metric_sky_logit'], rtol=1e-4,
                               atol=5e-5 * np.abs(g['metric_sky_logit']).max())
    assert (o['non_sky_mask'] != g['non_sky_mask']).mean() <= 1e-3
    for k in ('scale_factor', 'sky_fill'):
        np.testing.assert_allclose(o[k], g[k], rtol=3e-4, atol=0, err_msg=k)
    same = o['non_sky_mask'] == g['non_sky_mask']
    np.testing.assert_allclose(o['depth'][same], g['depth'][same], rtol=3e-4,
                               atol=1e-5 * np.abs(g['depth']).max())
    np.testing.assert_allclose(o['depth_conf'][same], g['depth_conf'][same], rtol=1e-4,
                               atol=1e-5 * np.abs(g['depth_conf']).max())
    np.testing.assert_allclose(o['extrinsics'], g['extrinsics'], rtol=3e-4, atol=2e-5)
    assert_anyview_close(o['intrinsics'], g['intrinsics'], 'intrinsics')
    assert_anyview_close(o['pose_enc'], g['pose_enc'], 'pose_enc')
    assert_anyview_close(o['cam_token'], g['cam_token'], 'cam_token')
    assert_anyview_close(grid4(o['ray'], g, ray=True), g['ray'], 'ray')
    assert_anyview_close(grid4(o['ray_conf'], g, ray=True), g['ray_conf'], 'ray_conf')
