"""Full-size parity through the stand-in (slow): DA3 large 280x504, DUSt3R ViT-L 192x256.

rule-v1 weights, against the golden fixtures (our fp32 torch models match them to ~1e-5). DA3 runs
its default preset 'fast-hifi3+mask_free_sdpa+block_sharded' against the issue's gate (depth
PCC >= 0.9999; measured 0.99993, max rel 0.028); every other preset is gated at 56x84
(test_da3_precision.py). DUSt3R runs its default, 'fast' with its four levers (raw PCC >= 0.995
per channel), on the golden pair at half size, against our fp32 torch model there.
Beside each PCC gate, the error's magnitude (median and p99 relative error of the depth, per
3-D point of the pointmaps) and, for DA3, the sky mask's agreement. For
comparison, our torch model run entirely in bf16 on the same input measured 0.99949 (an all-bf16
network does not reach the gate on these synthetic weights); that print-only control left the
test (a bf16 Large forward on the CPU, ~5 s a run).
"""
import gc

import numpy as np
import pytest
import torch

from devtools.rule_weights import rule_v1_state_dict
from support import dust3r_data
from support.da3_fixtures import DATA as DA3_DATA
from support.da3_fixtures import large_key_shapes, load_png_rgb
from tt_depth_ros.engines.parity import compare_maps, mask_agreement, pcc
from tt_depth_ros.engines.ttnn import build_ttnn_engine

pytestmark = pytest.mark.slow


BYTES = {'FLOAT32': 4.0, 'BFLOAT16': 2.0, 'BFLOAT8_B': 1088 / 1024, 'UINT8': 1.0}


@pytest.fixture(autouse=True)
def no_weight_cache(ttnn, monkeypatch):
    """Parity only: the converted-weight cache (GBs at full size) is tested in test_weights_ttnn."""
    monkeypatch.setenv('TT_DEPTH_ROS_TTNN_CACHE', 'off')


@pytest.fixture(scope='module')
def da3_large():
    """Rule-v1 Large weights and the golden fixture."""
    sd = {k: torch.from_numpy(v) for k, v in rule_v1_state_dict(large_key_shapes()).items()}
    yield sd, np.load(DA3_DATA / 'large_280x504.npz')
    gc.collect()


# (depth PCC >=, median and p99 relative depth error <=, sky agreement >=) per preset: the PCC
# gate; the magnitude bounds about 2.5x what DA3-Large gives with it
LARGE_BOUNDS = {None: (0.9999, 0.02, 0.05, 0.999)}


@pytest.mark.xdist_group('full_size_heavy')    # test/conftest.py; the DUSt3R test: `full_size`
@pytest.mark.parametrize('dtype', [None])
def test_da3_large_280x504(ttnn, da3_large, dtype):
    sd, g = da3_large
    img = load_png_rgb('large_280x504.png')
    with build_ttnn_engine('da3metric-large', state_dict=sd, dtype=dtype) as eng:
        name = eng.info.dtype
        weights = sum(int(np.prod(tuple(t.padded_shape))) * BYTES[t.dtype.name]
                      for t in eng.ctx.device.live_tensors())   # before prepare: linear/LN only
        out = eng.infer(img)
        ops = len(next(iter(eng.ctx.device._traces.values())).records)
    a = compare_maps(g['depth'][0], out['depth'])
    sky = mask_agreement(g['sky'][0] >= 0.3, out['sky'] >= 0.3)     # upstream's sky threshold
    print(f'DA3 large 280x504 [{name}]: depth {a}; sky agreement {sky:.4f}; linear/LN weights '
          f'{weights / 1e6:.0f} MB, {ops} ops/forward')
    assert name == (dtype or 'fast-hifi3+mask_free_sdpa+block_sharded')
    floor, median, p99, sky_min = LARGE_BOUNDS[dtype]
    assert a.pcc >= floor and a.finite_mismatch == 0, str(a)
    assert a.median_rel <= median and a.p99_rel <= p99, str(a)
    assert sky >= sky_min
    gc.collect()


# median and p99 relative error per 3-D point <=: about 2x what the default gives at 384x512
# (its bf16 pointmaps are 10-20 % off fp32 per point on the synthetic weights, a scale PCC does
# not see); at 192x256 it gives 0.10-0.15 and 0.28-0.34
DUST3R_BOUNDS = (0.4, 0.9)


def test_dust3r_full_192x256(ttnn):
    """ViT-L/DPT at full model size, the golden pair at half its size, against fp32 torch there.

    The reference is our fp32 torch DUSt3R on the same weights and input, which matches
    upstream's 384x512 golden to ~1e-5 (test_dust3r_model.py); the half-size pair (a quarter of
    the tokens) keeps every layer's width and depth at a third of the stand-in's time.
    """
    import cv2

    from tt_depth_ros.engines.torch.dust3r import build_model
    keys = {k['key']: tuple(k['shape']) for k in dust3r_data.full_keys()}
    sd = {k: torch.from_numpy(v) for k, v in rule_v1_state_dict(keys).items()}
    pair = [cv2.resize(u, (256, 192), interpolation=cv2.INTER_AREA)
            for u in dust3r_data.pair_u8('384x512')]
    model = build_model('dust3r-vitl-512-dpt', state_dict=sd)    # adopts sd's tensors
    with torch.inference_mode():
        ref = model(*(torch.from_numpy(dust3r_data.normalise(u)) for u in pair))
    ref = {k: v[0].numpy() for k, v in ref.items()}
    del model
    with build_ttnn_engine('dust3r-vitl-512-dpt', state_dict=sd) as eng:
        del sd
        out = eng.infer(*pair)
    for v in (1, 2):
        raw, want = out[f'raw_{v}'], ref[f'raw{v}'].transpose(1, 2, 0)
        per_ch = [pcc(raw[..., c], want[..., c]) for c in range(4)]
        pts = compare_maps(ref[f'pts3d_{v}'], out[f'pts3d_{v}'], vector_axis=-1)
        p_conf = pcc(out[f'conf_{v}'], ref[f'conf_{v}'])
        print(f'DUSt3R full 192x256 view {v}: raw PCC per channel '
              f'{[round(x, 5) for x in per_ch]}, pts3d {pts}, conf PCC {p_conf:.5f}')
        assert min(per_ch) >= 0.995
        assert pts.median_rel <= DUST3R_BOUNDS[0] and pts.p99_rel <= DUST3R_BOUNDS[1], str(pts)
    gc.collect()
