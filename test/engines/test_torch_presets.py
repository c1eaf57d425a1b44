"""Torch precision presets (engines/torch/presets.py): resolution, mechanics, reversibility.

Tiny models only; the full-size accuracy gates ride on the full-size parity tests
(test/models: DA3METRIC-LARGE, DA3-SMALL, DUSt3R; support.precision_gates).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from support.da3_fixtures import load_png_rgb, tiny_state_dict, write_safetensors
from support.dust3r_data import pair_u8
from support.dust3r_data import tiny_state_dict as dust3r_tiny_state_dict
from support.precision_gates import assert_active, check, hot_path
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.engines.torch.presets import (
    CHOICES,
    PRESETS,
    cpu_has_native_bf16,
    resolve_preset,
)
from tt_depth_ros.models.layers.linear_kernels import LinearKernel
from tt_depth_ros.ros.depth.params import DepthParams
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS
from tt_depth_ros.ros.runtime.engine_builder import build_node_engine

FLAGS = 'processor\t: 0\nflags\t\t: fpu sse2 avx2 fma {extra}\nbugs\t\t: spectre_v1\n'


@pytest.mark.parametrize('extra, native', [('avx512f avx512_bf16', True), ('amx_bf16', True),
                                           ('avx512f avx512_vnni', False), ('', False)])
def test_native_bf16_is_read_from_the_cpu_flags(extra, native):
    assert cpu_has_native_bf16(FLAGS.format(extra=extra)) is native
    assert cpu_has_native_bf16('processor\t: 0\n') is False   # no flags line


def test_resolution_per_device_and_errors():
    assert resolve_preset(None, 'cpu').name == 'float32'
    assert resolve_preset(torch.bfloat16, 'cpu').name == 'bfloat16'
    assert resolve_preset('auto', 'cpu', native_bf16=True).name == 'cpu-fast'
    assert resolve_preset('auto', 'cpu', native_bf16=False).name == 'float32'
    assert resolve_preset('auto', 'cuda:0').name == 'float32'
    with pytest.raises(ValueError, match="'int8' is for torch-cpu only"):
        resolve_preset('int8', 'cuda:0')
    with pytest.raises(ValueError, match="'float16' is for torch-cuda only"):
        resolve_preset('float16', 'cpu')
    with pytest.raises(ValueError, match='allowed'):
        resolve_preset('int4', 'cpu')
    assert set(CHOICES) == {'auto', *PRESETS}


def test_int8_kernel_is_per_channel_and_close():
    torch.manual_seed(0)
    w, b, x = torch.randn(48, 32) * torch.logspace(-2, 0, 48)[:, None], torch.randn(48), \
        torch.randn(5, 7, 32)
    want = torch.nn.functional.linear(x, w, b)
    got = LinearKernel(w, b, 'int8')(x)
    assert got.shape == want.shape and got.dtype == torch.float32
    # per-channel scales: the small-weight rows are as accurate (relatively) as the large ones
    err = ((got - want).abs().amax(dim=(0, 1)) / want.abs().amax(dim=(0, 1)))
    assert float(err.max()) < 0.03
    # and it is int8, not fp32 under another name: 8-bit weights and 7-bit activations leave
    # errors far above fp32 round-off (~1e-7) in every channel
    assert float(err.min()) > 1e-4
    assert LinearKernel(w, b, 'bfloat16')(x).dtype == torch.bfloat16
    with pytest.raises(ValueError, match='precision'):
        LinearKernel(w, b, 'fp8')


@pytest.fixture(scope='module')
def tiny_ref():
    rgb = load_png_rgb('tiny_280x504.png')
    with build_engine('da3metric-tiny', dtype='float32', backend='torch-cpu',
                      state_dict=tiny_state_dict()) as e:
        return rgb, e.infer(rgb)['depth']


# (median, p99) relative error bounds against fp32: about 2.5x what each preset gives on the tiny
# models (DUSt3R: per 3-D point of the pointmap; its random tiny network amplifies the error)
DA3_TINY_BOUNDS = {'bfloat16': (1.5e-2, 6e-2), 'float16': (1.5e-2, 6e-2),
                   'bf16-matmul': (6e-3, 3e-2), 'cpu-fast': (1.5e-2, 6e-2), 'int8': (3e-2, 1.3e-1)}
DUST3R_TINY_BOUNDS = {'bf16-matmul': (4e-2, 0.15), 'int8': (0.35, 0.8)}


@pytest.mark.parametrize('preset', ['bfloat16', 'float16', 'bf16-matmul', 'cpu-fast', 'int8'])
def test_da3_tiny_presets_switch_the_one_model(tiny_ref, preset):
    """Each preset: the same module (checkpoint state_dict unchanged), its parts switched.

    And it is active: every reduced-precision kernel runs in the forward (support.precision_gates
    hot_path), and the depth differs from fp32 by more than round-off, within the gate.
    """
    rgb, ref = tiny_ref
    p = PRESETS[preset]
    backend = 'torch-cpu'
    if 'cpu' not in p.devices:
        if not torch.cuda.is_available():
            pytest.skip(f'{preset!r} is a torch-cuda preset and this machine has no CUDA device')
        backend = 'torch-cuda'
    with build_engine('da3metric-tiny', backend=backend, state_dict=tiny_state_dict(),
                      dtype=preset) as eng:
        net = eng.model
        assert eng.info.dtype == preset
        blk = net.backbone.pretrained.blocks[0]
        assert blk.precision == p.matmul
        assert blk.attn.qkv.weight.dtype == getattr(torch, p.backbone_dtype)  # kernels: copies
        assert set(net.state_dict()) == set(type(net)(net.cfg).state_dict())
        assert (net.head.projects[0].weight.dtype == torch.bfloat16) is p.head_bf16
        assert net.head._ob_w.dtype == torch.float32          # logit convs stay fp32
        with hot_path(net) as seen:
            got = eng.infer(rgb)['depth']
        assert_active('da3metric-tiny 280x504', preset, net, seen)
        med, p99 = DA3_TINY_BOUNDS[preset]
        check('da3metric-tiny 280x504', preset, ref, got, median=med, p99=p99)
        # reversible (block matmuls): back to float32 is exact again
        if p.matmul != 'float32' and not p.head_bf16:
            net.set_fused(True)
            np.testing.assert_array_equal(eng.infer(rgb)['depth'], ref)


def test_dust3r_tiny_int8_and_bf16_matmul():
    u1, u2 = pair_u8('80x112')
    sd = dust3r_tiny_state_dict()
    with build_engine('dust3r-tiny', dtype='float32', backend='torch-cpu', state_dict=sd) as eng:
        ref = eng.infer(u1, u2)['pts3d_2']
        for preset, precision in (('int8', 'int8'), ('bf16-matmul', 'bfloat16')):
            eng.model.set_precision(precision)
            assert eng.model.dec_blocks[0].precision == eng.model.enc_blocks[0].precision
            with hot_path(eng.model) as seen:
                got = eng.infer(u1, u2)['pts3d_2']
            assert_active('dust3r-tiny 80x112', preset, eng.model, seen)
            med, p99 = DUST3R_TINY_BOUNDS[preset]
            check('dust3r-tiny 80x112', preset, ref, got, median=med, p99=p99, vector_axis=-1)
        eng.model.set_precision('float32')
        with hot_path(eng.model) as seen:
            np.testing.assert_array_equal(eng.infer(u1, u2)['pts3d_2'], ref)
        assert_active('dust3r-tiny 80x112', 'float32', eng.model, seen)


def test_node_parameter_reaches_the_engine(tmp_path):
    """torch_dtype (default 'auto') goes through the node's one build path into the engine."""
    spec = {s.name: s for s in COMMON_PARAMS}['torch_dtype']
    assert spec.default == 'auto' and set(spec.choices) == set(CHOICES)
    path = write_safetensors(tiny_state_dict(), tmp_path / 'model.safetensors')
    p = DepthParams(model='da3metric-tiny', weights_path=str(path), backend='torch-cpu')

    class Log:
        def __init__(self):
            self.lines: list[str] = []

        def info(self, m):
            self.lines.append(m)

        warning = info

    from tt_depth_ros.engines.cancel import CancelToken
    for value, want in (('int8', 'int8'),
                        ('auto', 'cpu-fast' if cpu_has_native_bf16() else 'float32')):
        log = Log()
        with build_node_engine(replace(p, torch_dtype=value), log, CancelToken()) as eng:
            assert eng.info.dtype == want
        assert any(f"-> '{want}'" in m or f"preset '{want}'" in m for m in log.lines), log.lines
