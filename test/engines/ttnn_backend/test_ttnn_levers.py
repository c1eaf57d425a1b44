"""The measured ports' structural levers (docs/ttnn-levers.md), each a Precision switch.

The single-kernel RoPE's permutation proven exact on the CPU against models/layers/rope2d.py;
the stand-in's new ops (the fused residual matmul, rotary_embedding_llama, block shards, SDPA
over a stream whose length is not a tile multiple) against plain torch; one tiny forward per
family with every lever on, against its gate and with the levers' ops seen in use. The real
library's verdict on every lever at full size: the dry run (docs/ttnn-levers.md).
"""
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from support import dust3r_data
from tt_depth_ros.engines.parity import pcc
from tt_depth_ros.engines.ttnn import build_ttnn_engine
from tt_depth_ros.engines.ttnn.common import linear_params
from tt_depth_ros.engines.ttnn.config import block_shard, mask_free_k_chunk, shape_config
from tt_depth_ros.engines.ttnn.layers.rope2d import (
    llama_permutation,
    llama_tables,
    pair_rotation_matrix,
    permute_rope_columns,
    rope_tables,
)
from tt_depth_ros.engines.ttnn.precision import parse_precision
from tt_depth_ros.models.layers.rope2d import RoPE2D, grid_positions

DATA = Path(__file__).resolve().parents[2] / 'data'


def _pair_rotate(t: torch.Tensor, cos, sin, addcmul: bool = False) -> torch.Tensor:
    """What rotary_embedding_llama computes: t * cos + (t @ T) * sin, T per 32-lane tile.

    addcmul: the final multiply-add as the model writes it (torch.addcmul), for a bitwise
    comparison of the same float32 operations.
    """
    trans = pair_rotation_matrix()[0, 0]
    rot = torch.cat([t[..., j:j + 32] @ trans for j in range(0, t.shape[-1], 32)], -1)
    return torch.addcmul(t * cos, rot, sin) if addcmul else t * cos + rot * sin


@pytest.mark.parametrize('dh', [64, 32])
def test_llama_rope_on_permuted_weights_is_the_models_rope_bit_for_bit(dh):
    torch.manual_seed(0)
    heads, rows, cols, dim_in = 3, 5, 7, 48
    n = rows * cols
    w, b = torch.randn(3 * heads * dh, dim_in) / dim_in ** 0.5, torch.randn(3 * heads * dh)
    x = torch.randn(1, n, dim_in)
    pos = grid_positions(rows, cols)
    # the model: q|k|v from one linear, RoPE2D on q and k (rotate-half in 16-lane quarters)
    qkv = (x @ w.t() + b).reshape(1, n, 3, heads, dh).permute(2, 0, 3, 1, 4)
    rope = RoPE2D(base=100.0)
    ref = [rope(qkv[i], pos) for i in (0, 1)] + [qkv[2]]
    # the lever: the q/k output columns permuted in the weights, then the pairwise kernel
    w_t, b_t = linear_params(w, b)
    w_p, b_p = permute_rope_columns(w_t, b_t, (True, True, False), heads, dh)
    perm = llama_permutation(dh)
    assert sorted(perm.tolist()) == list(range(dh))
    qkv_p = (x @ w_p + b_p).reshape(1, n, 3, heads, dh).permute(2, 0, 3, 1, 4)
    # a column gather of the weights is a gather of the outputs (to the CPU matmul's round-off)
    torch.testing.assert_close(qkv_p[:2], qkv[:2][..., perm], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(qkv_p[2], qkv[2], rtol=0, atol=0)
    cos, sin = llama_tables(*rope_tables(rows, cols, n, dh, dh, 100.0), dh)
    for i in (0, 1):
        # on the same (gathered) input the kernel's arithmetic is the model's, lane for lane:
        # t * cos + (-v) * sin where the model has t * cos + v * (-sin), the same products
        got = _pair_rotate(qkv[i][..., perm], cos, sin, addcmul=True)
        assert torch.equal(got, ref[i][..., perm])
        unfused = _pair_rotate(qkv[i][..., perm], cos, sin)   # two roundings, as the kernel
        torch.testing.assert_close(unfused, got, rtol=2e-7, atol=1e-6)
    # attention: q.k over permuted lanes, v untouched -> the same output to fp32 round-off
    # (of the projection above; the attention itself in float64)
    q, k = (_pair_rotate(qkv_p[i], cos, sin).double() for i in (0, 1))
    r = [t.double() for t in ref]
    a_ref = torch.softmax(r[0] @ r[1].transpose(-1, -2) / math.sqrt(dh), -1) @ r[2]
    a_got = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), -1) @ qkv_p[2].double()
    torch.testing.assert_close(a_got, a_ref, rtol=1e-5, atol=1e-5)


def test_mask_free_shapes_and_chunks():
    da3 = shape_config(518, 518, 14, 1, (11, 10), logical=True)
    assert (da3.seq, da3.padded, da3.masked, da3.k_chunk) == (1370, 1376, False, 256)
    assert shape_config(518, 518, 14, 1, (11, 10)).masked          # the padded stream needs one
    # fewest chunks of at most 256 keys, each the shortest tile multiple: padding is work
    assert [mask_free_k_chunk(t) for t in (576, 721, 768, 1370, 35)] == [192, 256, 256, 256, 64]
    du = shape_config(288, 512, 16, 0, (11, 10), logical=True)      # 576 tokens
    assert du.q_chunk(16, 2) <= 256 and du.q_chunk(16, 2) % 32 == 0
    # block shards: ViT-L width 32 tiles on 8 grid rows, one shard per column, the last short
    bs = block_shard((11, 10), 1376, 1024)
    assert (bs.m_cores, bs.n_cores, bs.per_m, bs.per_n(4096)) == (11, 8, 4, 16)
    assert block_shard((11, 10), 2 * 768, 1024).grid == (10, 8)     # DUSt3R's two views
    with pytest.raises(ValueError, match='tile size'):
        parse_precision('fast+fused_residual', 'da3')              # fp32 residual, bf16 weights
    with pytest.raises(ValueError, match='levers'):
        parse_precision('fast+rope', 'dust3r')


def _up(ttnn, dev, t, dtype=None, mem=None):    # (the ttnn fixture closes the device)
    return ttnn.from_torch(t, dtype=dtype or ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                           device=dev, memory_config=mem)


def _bf16(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.bfloat16).to(torch.float32)


def test_standin_fused_residual_matmul(ttnn):
    dev = ttnn.open_device(device_id=0)
    torch.manual_seed(1)
    x, w, b = _bf16(torch.randn(1, 70, 64)), _bf16(torch.randn(64, 96) / 8), torch.randn(1, 96)
    res, g = torch.randn(1, 70, 96), torch.rand(1, 96) + 0.5
    cfg = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                           fp32_dest_acc_en=True)
    out = ttnn.experimental.dit_minimal_matmul_addcmul_fused(
        _up(ttnn, dev, x, ttnn.float32), _up(ttnn, dev, w, ttnn.float32), 1.0,
        _up(ttnn, dev, res, ttnn.float32), _up(ttnn, dev, g, ttnn.float32),
        _up(ttnn, dev, b, ttnn.float32), compute_kernel_config=cfg)
    got = ttnn.to_torch(out).double()
    y = (x.double() @ w.double() + b.double()) * g.double()
    ref = res.double() + y
    assert tuple(got.shape) == (1, 70, 96) and out.dtype == ttnn.float32
    # the FPU adds take TF32 operands (10 mantissa bits, truncated): each operand may lose
    # up to 2^-10 of itself, the bias add's operands and the residual add's
    bound = 2 ** -10 * (2 * y.abs() + 2 * b.double().abs() * g.double() + res.double().abs())
    assert ((got - ref).abs() <= bound + 1e-6).all()
    assert (got - ref).abs().max() > 1e-5          # and they do lose it (not an SFPU add)
    with pytest.raises(RuntimeError, match='ternary_a_tile_size'):   # fp32 residual, bf16 W
        ttnn.experimental.dit_minimal_matmul_addcmul_fused(
            _up(ttnn, dev, x), _up(ttnn, dev, w), 1.0, _up(ttnn, dev, res, ttnn.float32),
            _up(ttnn, dev, g, ttnn.float32))
    with pytest.raises(RuntimeError, match=r'\[\.\.\., 1, N\]'):
        ttnn.experimental.dit_minimal_matmul_addcmul_fused(
            _up(ttnn, dev, x), _up(ttnn, dev, w), 1.0, _up(ttnn, dev, res),
            _up(ttnn, dev, res))


def test_standin_rotary_embedding_llama_and_sdpa_over_a_logical_length(ttnn):
    dev = ttnn.open_device(device_id=0)
    torch.manual_seed(2)
    s, dh = 35, 32                       # 35 tokens: a stream that is not a tile multiple
    t = _bf16(torch.randn(1, 2, s, dh))
    cos, sin = (_bf16(v) for v in (torch.rand(1, 1, s, dh), torch.rand(1, 1, s, dh)))
    args = [_up(ttnn, dev, v) for v in (t, cos, sin, pair_rotation_matrix())]
    out = ttnn.experimental.rotary_embedding_llama(*args, is_decode_mode=False)
    ref = _bf16(_bf16(t * cos) + _bf16(_bf16(_pair_rotate(t, 0.0, 1.0)) * sin))
    got = ttnn.to_torch(out).float()
    assert tuple(got.shape) == (1, 2, s, dh)
    torch.testing.assert_close(got, ref, rtol=0, atol=2 ** -7 * ref.abs().max().item())
    with pytest.raises(RuntimeError, match='BFLOAT16'):
        ttnn.experimental.rotary_embedding_llama(_up(ttnn, dev, t, ttnn.float32), *args[1:])
    # SDPA masks the keys past the logical length itself; chunks need not divide it
    q, k, v = (_bf16(torch.randn(1, 2, s, dh)) for _ in range(3))
    pc = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(11, 10),
                                q_chunk_size=64, k_chunk_size=64)
    o = ttnn.transformer.scaled_dot_product_attention(
        *(_up(ttnn, dev, a) for a in (q, k, v)), is_causal=False, program_config=pc)
    ref = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), -1) @ v
    torch.testing.assert_close(ttnn.to_torch(o).float(), ref, rtol=3e-2, atol=3e-2)


def test_standin_block_shards(ttnn):
    dev = ttnn.open_device(device_id=0)
    x = _bf16(torch.randn(1, 1370, 1024))
    bs = block_shard((11, 10), 1376, 1024)
    xs = ttnn.to_memory_config(_up(ttnn, dev, x), bs.memory_config(ttnn))
    assert xs.memory_config().memory_layout == ttnn.TensorMemoryLayout.BLOCK_SHARDED
    assert torch.equal(ttnn.to_torch(xs).float(), x)
    w = _up(ttnn, dev, torch.ones(1, 1024))
    y = ttnn.layer_norm(xs, epsilon=1e-6, weight=w, bias=w, memory_config=bs.memory_config(ttnn),
                        program_config=bs.layer_norm_config(ttnn))
    assert y.memory_config() == xs.memory_config()
    # 43 tile rows in shards of 5 on a 10-row grid: 9 shards for 10 rows of cores (real TT_FATAL)
    crs = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 9))])
    mc = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                           ttnn.ShardSpec(crs, [160, 128], ttnn.ShardOrientation.ROW_MAJOR))
    x2 = ttnn.to_memory_config(_up(ttnn, dev, x), mc)
    lncfg = ttnn.LayerNormShardedMultiCoreProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 10), subblock_w=4, block_h=5,
        block_w=4, inplace=False)
    with pytest.raises(RuntimeError, match='num_cores'):
        ttnn.layer_norm(x2, epsilon=1e-6, weight=w, bias=w, memory_config=mc,
                        program_config=lncfg)


def _spy(monkeypatch, owner, attr, seen: list) -> None:
    real = getattr(owner, attr)

    def spy(*a, **kw):
        seen.append(kw)
        return real(*a, **kw)
    monkeypatch.setattr(owner, attr, spy)


def test_da3_tiny_every_lever_meets_the_gate(ttnn, da3_tiny_sd, monkeypatch):
    fused, sdpa, reshard = [], [], []
    _spy(monkeypatch, ttnn.experimental, 'dit_minimal_matmul_addcmul_fused', fused)
    _spy(monkeypatch, ttnn.transformer, 'scaled_dot_product_attention', sdpa)
    _spy(monkeypatch, ttnn, 'to_memory_config', reshard)
    g = np.load(DATA / 'da3' / 'tiny_280x504.npz')
    img = np.array(Image.open(DATA / 'da3' / 'tiny_280x504.png').convert('RGB'))
    dtype = 'fast-hifi4+mask_free_sdpa+fused_residual+block_sharded'
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, dtype=dtype) as eng:
        assert eng.info.dtype == dtype
        blocks = len(eng.net.backbone.blocks)
        out = eng.infer(img)
    p = pcc(g['depth'][0], out['depth'])
    print(f'{dtype} DA3 tiny 280x504: depth PCC {p:.6f}')
    assert p >= 0.9999                                   # the DA3 gate
    runs = 2                                             # warm-up and capture
    assert len(fused) == runs * 2 * blocks               # proj and fc2 of every block
    assert len(sdpa) == runs * blocks and all(kw['attn_mask'] is None for kw in sdpa)
    # the stream into block shards once, each of the 4 taps back out
    assert len(reshard) == runs * 5


def test_dust3r_tiny_every_lever_meets_the_gate(ttnn, monkeypatch):
    rope, sdpa = [], []
    _spy(monkeypatch, ttnn.experimental, 'rotary_embedding_llama', rope)
    _spy(monkeypatch, ttnn.transformer, 'scaled_dot_product_attention', sdpa)
    sd = {k: torch.from_numpy(v) for k, v in dust3r_data.tiny_state_dict().items()}
    g = dust3r_data.fixture('tiny_80x112')
    dtype = 'fast+mask_free_sdpa+fused_residual+block_sharded+rope_kernel'
    with build_ttnn_engine('dust3r-tiny', state_dict=sd, dtype=dtype) as eng:
        cfg = eng.net.cfg
        out = eng.infer(*dust3r_data.pair_u8('80x112'))
    ps = [pcc(g['pts3d'][0], out['pts3d_1']), pcc(g['pts3d_in_other_view'][0], out['pts3d_2'])]
    print(f'{dtype} DUSt3R tiny 80x112: pts3d PCC {ps}')
    assert min(ps) >= 0.995                              # the DUSt3R gate
    # q and k of every encoder block, of every decoder block's self and cross attention
    assert len(rope) == 2 * (2 * cfg.enc_depth + 2 * 4 * cfg.dec_depth)
    assert all(kw['attn_mask'] is None for kw in sdpa)   # 35 tokens and no mask tensor
