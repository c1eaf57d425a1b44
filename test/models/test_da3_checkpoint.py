"""DA3 checkpoint key mapping and strict loading: aliases, foreign variants, listed mismatches."""
import dataclasses

import numpy as np
import pytest
import torch

from support.da3_fixtures import tiny_state_dict, write_safetensors
from tt_depth_ros.engines.weights import CorruptCheckpointError, read_state_dict
from tt_depth_ros.models.da3.checkpoint import CheckpointError, load_state_dict, map_state_dict
from tt_depth_ros.models.da3.config import TINY
from tt_depth_ros.models.da3.model import DA3Model


def _legacy(key: str) -> str:
    k = 'module.' + key[len('model.'):]
    k = k.replace('.backbone.', '.net.', 1)
    return k.replace('sky_output_conv2', 'output_conv2_additional.sky_mask')


def test_map_strips_prefix_and_is_pure():
    sd = tiny_state_dict()
    mapped = map_state_dict(sd)
    assert set(mapped) == {k[len('model.'):] for k in sd}
    assert all(isinstance(v, torch.Tensor) for v in mapped.values())
    assert 'model.backbone.pretrained.cls_token' in sd  # input untouched


def test_legacy_aliases_load_identically():
    sd = tiny_state_dict()
    legacy = {_legacy(k): v for k, v in sd.items()}
    assert any('.net.' in k for k in legacy) and any('sky_mask' in k for k in legacy)
    a, b = DA3Model(TINY), DA3Model(TINY)
    load_state_dict(a, sd)
    load_state_dict(b, legacy)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    w = a.head.scratch.sky_output_conv2[2].weight.detach().numpy()
    np.testing.assert_array_equal(w, sd['model.head.scratch.sky_output_conv2.2.weight'])


@pytest.mark.parametrize('extra', [
    'model.backbone.pretrained.camera_token',
    'model.backbone.pretrained.blocks.0.attn.q_norm.weight',
    'model.head.norm.weight',
    'model.head.scratch.output_conv1_aux.0.weight',
    'model.cam_enc.pose_branch.weight',
    'model.cam_dec.backbone.0.weight',
])
def test_other_variant_keys_rejected(extra):
    sd = tiny_state_dict()
    sd[extra] = np.zeros((4,), np.float32)
    with pytest.raises(CheckpointError, match='another DA3 variant') as e:
        map_state_dict(sd)
    assert extra in str(e.value)


def test_missing_and_unexpected_keys_listed():
    sd = tiny_state_dict()
    del sd['model.head.scratch.refinenet2.out_conv.bias']
    sd['model.head.extra_conv.weight'] = np.zeros((1,), np.float32)
    with pytest.raises(CheckpointError) as e:
        load_state_dict(DA3Model(TINY), sd)
    msg = str(e.value)
    assert '1 missing keys: head.scratch.refinenet2.out_conv.bias' in msg
    assert '1 unexpected keys: head.extra_conv.weight' in msg


def test_wrong_config_lists_shape_mismatches():
    other = dataclasses.replace(TINY, features=16)
    with pytest.raises(CheckpointError, match='shape mismatches') as e:
        load_state_dict(DA3Model(other), tiny_state_dict())
    assert 'head.scratch.layer1_rn.weight (32, 16, 3, 3) (model (16, 16, 3, 3))' in str(e.value)


def test_duplicate_alias_rejected():
    sd = tiny_state_dict()
    k = 'model.head.scratch.sky_output_conv2.0.bias'
    sd[k.replace('sky_output_conv2', 'output_conv2_additional.sky_mask')] = sd[k]
    with pytest.raises(CheckpointError, match='two keys'):
        map_state_dict(sd)


def test_load_casts_to_model_dtype():
    model = DA3Model(TINY).to(torch.bfloat16)
    load_state_dict(model, tiny_state_dict())
    assert model.backbone.pretrained.pos_embed.dtype == torch.bfloat16


def test_checkpoint_files(tmp_path):
    sd = tiny_state_dict()
    st = write_safetensors(sd, tmp_path / 'model.safetensors')
    loaded = read_state_dict(st)
    assert set(loaded) == set(sd)
    pth = tmp_path / 'model.pth'
    torch.save({'model': {k: torch.from_numpy(v) for k, v in sd.items()}}, pth)
    assert set(read_state_dict(pth)) == set(sd)
    bad = tmp_path / 'corrupt.safetensors'
    bad.write_bytes(st.read_bytes()[:1000])
    with pytest.raises(CorruptCheckpointError, match='cannot read checkpoint'):
        read_state_dict(bad)
    with pytest.raises(CorruptCheckpointError, match='unknown checkpoint format'):
        read_state_dict(tmp_path / 'model.onnx')
