"""The export-friendly forward (`DA3Model.set_export`) gives the normal forward's outputs.

Each rewrite (per-size constants for pos-embed, RoPE and UV embeddings; stacked intrinsics; no
empty camera-token expand for one view; q/k/v as three linears with 4-D heads; kernel == stride
ConvTranspose2d as 1x1 conv + 4-D pixel shuffle; contiguous head layout) is exact: checked at
<= 1e-5 relative against the normal forward on the golden tiny cases (LayerScale folded: the
fused arithmetic), against the golden outputs themselves, and per rewrite on random weights.
"""
import numpy as np
import pytest
import torch

from support.da3_fixtures import (
    anyview_golden,
    anyview_state_dict,
    assert_close_golden,
    golden,
    tiny_state_dict,
)
from tt_depth_ros.models.da3.checkpoint import load_state_dict
from tt_depth_ros.models.da3.config import ANYVIEW_TINY, TINY
from tt_depth_ros.models.da3.model import DA3Model

ANYVIEW_CASES = ('tiny_1v_378x504',)
METRIC_SIZES = ('280x504',)


def _net(cfg, state) -> DA3Model:
    net = DA3Model(cfg).eval()
    load_state_dict(net, state)
    return net


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _compare(net: DA3Model, x: torch.Tensor, keys, twice: bool = False) -> dict:
    """Normal vs export forward (the first export call builds and uses the constants)."""
    with torch.no_grad():
        normal = net.set_export(False)(x)
        net.set_export(True)
        runs = [net(x) for _ in range(2 if twice else 1)]   # 2nd: on the cached constants
    net.set_export(False)
    for k in keys:
        for out in runs:
            assert _rel(out[k], normal[k]) <= 1e-5, k
    return runs[-1]


@pytest.mark.parametrize('size', METRIC_SIZES)
def test_metric_export_forward_is_exact(size):
    g = golden(f'tiny_{size}.npz')
    net = _net(TINY, tiny_state_dict()).set_fused(True)
    out = _compare(net, torch.from_numpy(g['input']), ('depth', 'sky', 'sky_logit'),
                   twice=size == '280x504')
    assert_close_golden(out['depth'].numpy(), g['depth'], 'depth')


@pytest.mark.parametrize('case', ANYVIEW_CASES)
def test_anyview_export_forward_is_exact(case):
    g = anyview_golden(f'{case}.npz')
    net = _net(ANYVIEW_TINY, anyview_state_dict()).set_fused(True)
    keys = ('depth', 'depth_conf', 'ray', 'ray_conf', 'pose_enc', 'extrinsics', 'intrinsics')
    out = _compare(net, torch.from_numpy(g['input']), keys, twice=True)
    np.testing.assert_allclose(out['intrinsics'].numpy(), g['intrinsics'], rtol=1e-5, atol=1e-4)


def test_export_constants_are_per_size_and_dropped_when_off():
    net = _net(ANYVIEW_TINY, anyview_state_dict()).set_export(True)
    vit = net.backbone.pretrained
    with torch.no_grad():
        net(torch.zeros(1, 3, 28, 42))
        net(torch.zeros(1, 3, 42, 28))
    assert {k[:2] for k in vit._consts if isinstance(k[0], int)} == {(2, 3), (3, 2)}
    assert net.head._uv_consts
    net.set_export(False)
    assert vit._consts is None and net.head._uv_consts is None and not net.export


@pytest.mark.parametrize('stride,cin,cout', [(4, 16, 16), (2, 32, 8), (3, 5, 7)])
def test_stride_upsample_equals_the_conv_transpose(stride, cin, cout):
    from torch import nn

    from tt_depth_ros.models.layers.stride_upsample import as_conv1x1, stride_upsample

    torch.manual_seed(stride)
    convt = nn.ConvTranspose2d(cin, cout, stride, stride=stride)
    x = torch.randn(2, cin, 5, 7)
    with torch.no_grad():
        want = convt(x)
        got = stride_upsample(x, *as_conv1x1(convt), stride)
    assert got.shape == want.shape == (2, cout, 5 * stride, 7 * stride)
    assert _rel(got, want) <= 1e-5
    with pytest.raises(ValueError, match='kernel == stride'):
        as_conv1x1(nn.ConvTranspose2d(4, 4, 3, stride=2))


def test_split_qkv_attention_equals_the_fused_projection():
    from tt_depth_ros.models.layers.attention import Attention
    from tt_depth_ros.models.layers.rope2d import RoPE2D, grid_positions

    torch.manual_seed(0)
    attn = Attention(64, 4, qk_norm=True).eval()
    x, pos = torch.randn(2, 12, 64), grid_positions(3, 4, batch=2)
    with torch.no_grad():
        want = attn(x, RoPE2D(), pos)
        got = attn.set_export(True)(x, RoPE2D(), pos)
    assert _rel(got, want) <= 1e-5
    assert attn._q_w.shape == (64, 64) and '_q_w' not in attn.state_dict()
    attn.set_export(False)
    assert not hasattr(attn, '_q_w') and not attn.export


def test_export_mode_keeps_the_fused_head_contiguous_and_drops_its_folds():
    net = _net(TINY, tiny_state_dict()).set_fused(True)
    conv = net.head.scratch.output_conv1.weight
    assert conv.is_contiguous(memory_format=torch.channels_last) and not conv.is_contiguous()
    net.set_export(True)
    assert net.head.scratch.output_conv1.weight.is_contiguous() and sorted(net.head._up) == [0, 1]
    assert net.head._oa_w.is_contiguous()
    net.set_export(False)
    assert net.head._up is None
    assert net.head.scratch.output_conv1.weight.is_contiguous(memory_format=torch.channels_last)
