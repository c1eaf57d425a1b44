"""The stand-in computes the same bits on every CPU (devtools/ttnn/standin/numerics.py `rounded`).

Its PCCs decide presets by margins of 1e-5 (docs/ttnn-precision.md "Anchor gate"), so they must
not depend on which SIMD kernels torch, MKL and oneDNN pick on the machine at hand. Each op whose
float32 result depends on its summation order or on a vectorised exp / erf runs here in two
processes, one with the CPU's own kernels and one held to AVX2; their outputs must agree bit for
bit. The same float32 torch ops are hashed beside them: where those agree too, this CPU offers
the two processes no different kernels and the comparison proves nothing (skipped).
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
AVX2 = {'ATEN_CPU_CAPABILITY': 'avx2', 'MKL_ENABLE_INSTRUCTIONS': 'AVX2',
        'ONEDNN_MAX_CPU_ISA': 'AVX2'}

SCRIPT = r'''
import hashlib, json, torch
from devtools.ttnn import standin as ttnn

def digest(t):
    return hashlib.sha256(t.float().contiguous().numpy().tobytes()).hexdigest()[:16]

g = torch.Generator().manual_seed(7)
a = torch.randn(1, 1, 128, 2048, generator=g)
w = torch.randn(2048, 256, generator=g) / 45
img = torch.randn(1, 40, 40, 64, generator=g)
kernel = torch.randn(64, 64, 3, 3, generator=g) / 24
q, k, v = (torch.randn(1, 2, 320, 64, generator=g) for _ in range(3))
torch_f32 = {'matmul': digest(a[0, 0] @ w), 'softmax': digest(torch.softmax(a * 4, -1)),
             'gelu': digest(torch.nn.functional.gelu(a)),
             'conv': digest(torch.nn.functional.conv2d(img.permute(0, 3, 1, 2), kernel,
                                                       padding=1))}
dev = ttnn.open_device(device_id=0, l1_small_size=32768)
def up(x, dtype=ttnn.bfloat16):
    return ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=dev)
hifi4 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                         fp32_dest_acc_en=True)
x = up(a, ttnn.float32)
outs = {
    'linear gelu': ttnn.linear(up(a), up(w), activation='gelu', dtype=ttnn.float32,
                               compute_kernel_config=hifi4),
    'linear tf32': ttnn.linear(x, up(w, ttnn.float32), dtype=ttnn.float32,
                               compute_kernel_config=hifi4),
    'softmax': ttnn.softmax(ttnn.multiply(x, 4.0), dim=-1),
    'layer_norm': ttnn.layer_norm(x),
    'exp': ttnn.exp(x),
    'sdpa': ttnn.transformer.scaled_dot_product_attention(up(q), up(k), up(v), is_causal=False,
                                                          compute_kernel_config=hifi4),
    'conv': ttnn.conv2d(
        input_tensor=up(img.reshape(1, 1, 1600, 64)), weight_tensor=ttnn.from_torch(kernel),
        bias_tensor=None, device=dev, in_channels=64, out_channels=64, batch_size=1,
        input_height=40, input_width=40, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1),
        dtype=ttnn.float32, conv_config=ttnn.Conv2dConfig(weights_dtype=ttnn.bfloat16),
        compute_config=hifi4),
}
print(json.dumps({'torch_f32': torch_f32,
                  'standin': {n: digest(ttnn.to_torch(t)) for n, t in outs.items()}}))
'''


def _run(extra_env: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in AVX2}
    env.update(extra_env, PYTHONPATH=str(ROOT), OMP_NUM_THREADS='1')
    out = subprocess.run([sys.executable, '-c', SCRIPT], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_standin_ops_give_the_same_bits_with_other_cpu_kernels():
    native, avx2 = _run({}), _run(AVX2)
    differ = sorted(n for n, h in native['torch_f32'].items() if h != avx2['torch_f32'][n])
    print(f'float32 torch ops that differ between the two kernel sets: {differ}')
    if not differ:
        pytest.skip('this CPU gives both processes the same kernels (no AVX-512): nothing to tell')
    assert native['standin'] == avx2['standin'], json.dumps([native['standin'], avx2['standin']])
    assert len(set(native['standin'].values())) == len(native['standin'])     # all computed
    assert hashlib.sha256(b'').hexdigest()[:16] not in native['standin'].values()
