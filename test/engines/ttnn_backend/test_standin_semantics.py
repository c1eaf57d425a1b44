"""The stand-in reproduces the traps that decide correctness on hardware (docs/ttnn.md §8).

If one of these stopped raising, the engine tests above would stop proving anything.
"""
import math

import numpy as np
import pytest
import torch


def _open(ttnn, l1_small=32768, trace=1 << 26):
    return ttnn.open_device(device_id=0, l1_small_size=l1_small, trace_region_size=trace)


def _dev_tensor(ttnn, dev, shape=(1, 1, 32, 64)):
    return ttnn.from_torch(torch.randn(shape), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                           device=dev)


def test_trace_capture_rules(ttnn):
    dev = _open(ttnn)
    x = _dev_tensor(ttnn, dev)
    y = ttnn.relu(x)                       # warm: program cached
    ttnn.deallocate(y)
    tid = ttnn.begin_trace_capture(dev, cq_id=0)
    out = ttnn.relu(x)                     # recorded, not executed
    assert math.isnan(float(out._data[0, 0, 0, 0]))
    with pytest.raises(RuntimeError, match='trace capture'):
        ttnn.from_torch(torch.zeros(1, 1, 32, 64), layout=ttnn.TILE_LAYOUT, device=dev)
    with pytest.raises(RuntimeError, match='trace capture'):
        ttnn.to_torch(x)
    with pytest.raises(RuntimeError, match='program cache miss'):
        ttnn.gelu(x)                       # never run eagerly
    ttnn.end_trace_capture(dev, tid, cq_id=0)
    with pytest.raises(RuntimeError, match='active trace'):
        ttnn.relu(x)                       # allocation while a trace exists
    host = ttnn.from_torch(-torch.ones(1, 1, 32, 64), dtype=ttnn.bfloat16,
                           layout=ttnn.TILE_LAYOUT)
    ttnn.copy_host_to_device_tensor(host, x)
    ttnn.execute_trace(dev, tid, cq_id=0, blocking=False)
    assert float(ttnn.to_torch(out).abs().max()) == 0.0          # relu of the new contents
    with pytest.raises(RuntimeError, match='live trace'):
        ttnn.close_device(dev)
    ttnn.release_trace(dev, tid)
    with pytest.raises(RuntimeError, match='live device tensor'):
        ttnn.close_device(dev)
    ttnn.deallocate(out)
    ttnn.deallocate(x)
    ttnn.close_device(dev)


def test_defaults_that_bite(ttnn):
    dev = _open(ttnn)
    t = ttnn.from_torch(torch.randn(1, 64, 64))
    assert t.layout == ttnn.ROW_MAJOR_LAYOUT                       # from_torch default
    with pytest.raises(RuntimeError, match='TILE'):
        ttnn.from_torch(torch.randn(4, 4), dtype=ttnn.bfloat8_b)
    x = ttnn.from_torch(torch.randn(1, 64, 64) * 3 + 1, dtype=ttnn.bfloat16,
                        layout=ttnn.TILE_LAYOUT, device=dev)
    ref = torch.nn.functional.layer_norm(ttnn.to_torch(x).float(), (64,), eps=1e-12)
    np.testing.assert_allclose(ttnn.to_torch(ttnn.layer_norm(x)).float().numpy(), ref.numpy(),
                               atol=0.02)
    rm = ttnn.to_device(t, dev)
    with pytest.raises(RuntimeError, match='TILE'):
        ttnn.softmax(rm)
    qkv = ttnn.from_torch(torch.randn(1, 32, 3 * 64), dtype=ttnn.bfloat16,
                          layout=ttnn.TILE_LAYOUT, device=dev)
    q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(qkv, num_heads=2)
    assert tuple(k.shape) == (1, 2, 32, 32) and tuple(q.shape) == (1, 2, 32, 32)  # K^T
    q2, k2, v2 = ttnn.transformer.split_query_key_value_and_split_heads(
        qkv, num_heads=2, transpose_key=False)
    causal = ttnn.to_torch(ttnn.transformer.scaled_dot_product_attention(q2, k2, v2))
    full = ttnn.to_torch(ttnn.transformer.scaled_dot_product_attention(q2, k2, v2,
                                                                       is_causal=False))
    np.testing.assert_array_equal(causal[:, :, 0].float().numpy(),       # row 0 sees itself
                                  ttnn.to_torch(v2)[:, :, 0].float().numpy())
    assert not torch.equal(causal, full)
    mask_l1 = ttnn.from_torch(torch.zeros(1, 1, 32, 32), dtype=ttnn.bfloat16,
                              layout=ttnn.TILE_LAYOUT, device=dev,
                              memory_config=ttnn.L1_MEMORY_CONFIG)
    with pytest.raises(RuntimeError, match='must be in DRAM'):     # the real library's rule
        ttnn.transformer.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask_l1,
                                                      is_causal=False)
    with pytest.raises(TypeError):
        ttnn.conv2d(x, x)                                          # keyword-only


def test_padding_and_alignment(ttnn):
    dev = _open(ttnn)
    x = ttnn.from_torch(torch.randn(1, 37, 50), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                        device=dev)
    assert tuple(x.padded_shape) == (1, 64, 64)
    r = ttnn.reshape(x, (1, 50, 37))                               # no pad_value: undefined
    assert torch.isnan(r._data[0, 0, 40])
    w = ttnn.from_torch(torch.randn(37, 8), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                        device=dev)
    with pytest.raises(RuntimeError, match='undefined'):
        ttnn.matmul(r, w)
    r0 = ttnn.reshape(x, (1, 50, 37), pad_value=0.0)
    assert ttnn.matmul(r0, w).shape == (1, 50, 8)
    with pytest.raises(RuntimeError, match='tile-aligned'):
        ttnn.softmax(x)
    conv_in = ttnn.from_torch(torch.randn(1, 1, 64, 32), dtype=ttnn.bfloat16,
                              layout=ttnn.TILE_LAYOUT, device=dev)
    small = ttnn.open_device(device_id=0)       # same device: already open
    assert small is dev
    dev.l1_small_size = 0
    with pytest.raises(RuntimeError, match='L1_SMALL'):
        ttnn.conv2d(input_tensor=conv_in, weight_tensor=ttnn.from_torch(torch.randn(8, 32, 3, 3)),
                    device=dev, in_channels=32, out_channels=8, batch_size=1, input_height=8,
                    input_width=8, kernel_size=(3, 3), padding=(1, 1))


def test_grid_and_dispatch(ttnn):
    with pytest.raises(RuntimeError, match='ETH'):
        ttnn.open_device(device_id=0, dispatch_core_config=ttnn.DispatchCoreConfig(
            ttnn.DispatchCoreType.ETH))
    with pytest.raises(RuntimeError, match='ROW'):
        ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    dev = _open(ttnn)
    g = dev.compute_with_storage_grid_size()
    assert (g.x, g.y) == (11, 10)
    x = _dev_tensor(ttnn, dev)
    w = _dev_tensor(ttnn, dev, (64, 32))
    with pytest.raises(RuntimeError, match='exceeds'):
        ttnn.linear(x, w, core_grid=ttnn.CoreGrid(x=12, y=10))     # fine on 12x10, not 11x10


def test_float32_matmul_operands_enter_the_fpu_as_tf32(ttnn):
    """float32 tensors keep fp32 in storage/eltwise, but a matmul sees 10 mantissa bits (TF32).

    Without this the float32 precision presets would look exact on the stand-in.
    """
    from devtools.ttnn.standin.numerics import exact_arithmetic
    dev = _open(ttnn)
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1, 1, 32, 64, generator=g), torch.randn(1, 1, 64, 32, generator=g)
    ta, tb = (ttnn.from_torch(t, dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=dev)
              for t in (a, b))
    cfg = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                           fp32_dest_acc_en=True)

    def tf32(x):
        return (x.contiguous().view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32)

    def summed(x, w):          # the stand-in's sums: exact (float64), rounded once to float32
        return (x.double() @ w.double()).float()

    y = ttnn.to_torch(ttnn.matmul(ta, tb, compute_kernel_config=cfg))
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, summed(tf32(a), tf32(b)), rtol=0, atol=0)
    assert (y - a @ b).abs().max() > 1e-4                  # not full fp32
    s = ttnn.to_torch(ttnn.add(ta, ta))                    # eltwise stays fp32
    torch.testing.assert_close(s, a + a, rtol=0, atol=0)
    with exact_arithmetic():
        torch.testing.assert_close(ttnn.to_torch(ttnn.matmul(ta, tb, compute_kernel_config=cfg)),
                                   summed(a, b), rtol=0, atol=0)
    for t in (ta, tb):
        ttnn.deallocate(t)
    ttnn.close_device(dev)
