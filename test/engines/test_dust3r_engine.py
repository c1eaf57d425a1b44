"""DUSt3R torch engine and checkpoint loading: golden parity through build_engine, bad input."""
from __future__ import annotations

import argparse

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from support.dust3r_data import assert_gates, batched, fixture, pair_u8, tiny_state_dict
from support.precision_gates import assert_active, check, hot_path
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.models.dust3r.checkpoint import CheckpointError, map_state_dict, read_checkpoint


@pytest.fixture(scope='module')
def engine():
    eng = build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu',
                       state_dict=tiny_state_dict())
    yield eng
    eng.close()


def test_engine_matches_upstream_from_uint8(engine):
    """uint8 views in, [-1, 1] normalisation inside the engine, camera-1 frame outputs out."""
    u1, u2 = pair_u8('80x112')
    out = engine.infer(u1, u2)
    assert set(out) == {'pts3d_1', 'pts3d_2', 'conf_1', 'conf_2'}
    assert out['pts3d_2'].shape == (80, 112, 3) and out['conf_1'].dtype == np.float32
    assert_gates(batched(out), fixture('tiny_80x112'), raw=False)
    assert engine.info.model == 'dust3r-tiny' and engine.info.backend == 'torch-cpu'
    assert engine.num_views == 2 and engine.last_timings['forward'] > 0


def test_engine_rejects_bad_views(engine):
    u1, u2 = pair_u8('80x112')
    with pytest.raises(ValueError, match='differs'):
        engine.infer(u1, u2[:64])
    with pytest.raises(ValueError, match='multiples'):
        engine.infer(u1[:72], u2[:72])
    with pytest.raises(ValueError, match='2 image'):
        engine.infer(u1)
    with pytest.raises(ValueError, match='uint8'):
        engine.infer(u1.astype(np.float32), u2)


# (median, p99) relative error bounds per 3-D point against fp32 (tiny pair): about 2.5x what
# the 'bfloat16' preset gives (its random tiny network amplifies the error)
BF16_BOUNDS = {'pts3d_1': (0.12, 0.25), 'pts3d_2': (0.12, 0.25)}


def test_bfloat16_backbone_keeps_fp32_heads(engine):
    """The 'bfloat16' preset: encoder and decoder in bf16, heads in fp32, within bounds.

    Both seen on the hot path (support.precision_gates), and the pointmaps differ from fp32 by
    more than round-off.
    """
    u1, u2 = pair_u8('80x112')
    want = engine.infer(u1, u2)
    eng = build_engine('dust3r-tiny', backend='torch-cpu', dtype='bfloat16',
                       state_dict=tiny_state_dict())
    m = eng.model
    assert m.enc_blocks[0].attn.qkv.weight.dtype == torch.bfloat16
    assert m.downstream_head2.dpt.head[4].weight.dtype == torch.float32
    with hot_path(m) as seen:
        out = eng.infer(u1, u2)
    assert_active('dust3r-tiny 80x112', 'bfloat16', m, seen)
    assert seen.conv_inputs[torch.float32] > 0            # the DPT heads
    assert all(np.isfinite(v).all() for v in out.values())
    for key, (med, p99) in BF16_BOUNDS.items():
        check(f'dust3r-tiny 80x112 {key}', 'bfloat16', want[key], out[key], median=med, p99=p99,
              vector_axis=-1)
    eng.close()


def _outputs(state):
    eng = build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu', state_dict=state)
    out = eng.infer(*pair_u8('80x112'))
    eng.close()
    return out


def test_alias_keys_are_accepted_and_mask_token_ignored():
    sd = dict(tiny_state_dict())
    aliased = {}
    for k, v in sd.items():
        if '.scratch.layer' in k and '_rn.weight' in k:
            n = int(k.split('.scratch.layer')[1][0])
            k = k.replace(f'scratch.layer{n}_rn', f'scratch.layer_rn.{n - 1}')
        aliased[k] = v
    mapped = map_state_dict(aliased)
    assert 'mask_token' not in mapped
    assert 'downstream_head1.dpt.scratch.layer3_rn.weight' in mapped
    # both names present (training .pth) and equal: fine; differing: an error
    both = dict(sd)
    both['downstream_head2.dpt.scratch.layer_rn.0.weight'] = sd[
        'downstream_head2.dpt.scratch.layer1_rn.weight']
    assert set(map_state_dict(both)) == set(mapped)
    both['downstream_head2.dpt.scratch.layer_rn.0.weight'] = sd[
        'downstream_head2.dpt.scratch.layer1_rn.weight'] + 1
    with pytest.raises(CheckpointError, match='differs'):
        map_state_dict(both)
    np.testing.assert_array_equal(_outputs(aliased)['pts3d_2'], _outputs(sd)['pts3d_2'])


def test_strict_loading_lists_missing_and_unexpected_keys():
    sd = dict(tiny_state_dict())
    del sd['dec_blocks2.3.cross_attn.projk.weight']
    sd['dec_blocks.0.attn.rope.freqs'] = np.zeros(3, np.float32)
    with pytest.raises(CheckpointError) as e:
        build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu', state_dict=sd)
    assert 'dec_blocks2.3.cross_attn.projk.weight' in str(e.value)
    assert 'dec_blocks.0.attn.rope.freqs' in str(e.value) and '1 missing' in str(e.value)
    sd = dict(tiny_state_dict())
    sd['enc_norm.weight'] = np.ones(65, np.float32)
    with pytest.raises(CheckpointError, match='enc_norm.weight: checkpoint'):
        build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu', state_dict=sd)


def test_checkpoint_files(tmp_path):
    sd = tiny_state_dict()
    good = tmp_path / 'tiny.safetensors'
    save_file(dict(sd), str(good))
    eng = build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu', weights=str(good))
    assert_gates(batched(eng.infer(*pair_u8('80x112'))), fixture('tiny_80x112'), raw=False)
    eng.close()
    # a truncated download
    bad = tmp_path / 'truncated.safetensors'
    bad.write_bytes(good.read_bytes()[:100_000])
    with pytest.raises(CheckpointError, match='corrupt'):
        build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu', weights=str(bad))
    # upstream-style training .pth: {'args': Namespace, 'model': state_dict}
    pth = tmp_path / 'tiny.pth'
    torch.save({'args': argparse.Namespace(model='x'),
                'model': {k: torch.from_numpy(v) for k, v in sd.items()}}, str(pth))
    assert set(read_checkpoint(pth)) == set(sd)
    # a pickle carrying an arbitrary object is refused by weights_only=True
    evil = tmp_path / 'evil.pth'
    torch.save({'model': {}, 'obj': _Arbitrary()}, str(evil))
    with pytest.raises(CheckpointError, match='weights_only'):
        read_checkpoint(evil)
    with pytest.raises(CheckpointError, match='format'):
        read_checkpoint(good.rename(tmp_path / 'tiny.npz'))
    with pytest.raises(FileNotFoundError):
        read_checkpoint(tmp_path / 'missing.safetensors')


class _Arbitrary:
    pass


def test_unknown_model_and_no_weights():
    with pytest.raises(ValueError, match='unknown model'):
        build_engine('dust3r-huge', dtype='float32', backend='torch-cpu')
    from tt_depth_ros.engines.weights import WeightsUnavailableError
    with pytest.raises(WeightsUnavailableError, match='test configuration'):
        build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu')


def test_full_model_weights_resolution_is_pinned_and_explicit(monkeypatch, tmp_path):
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    from tt_depth_ros.engines.registry import model
    from tt_depth_ros.engines.weights import WeightsUnavailableError
    HF_REVISION = model('dust3r-vitl-512-dpt').weights.revision
    with pytest.raises(WeightsUnavailableError) as e:
        build_engine('dust3r-vitl-512-dpt', dtype='float32', backend='torch-cpu')
    assert 'naver/DUSt3R_ViTLarge_BaseDecoder_512_dpt' in str(e.value)
    assert HF_REVISION in str(e.value)
