"""The measured DUSt3R port (changh95/tt-mast3r) as data: its ttnn calls, configs and timings.

Facts only, read from the port's public files (not its code): every call names the function
of changh95/tt-mast3r `models/demos/mast3r/tt/ttnn_dust3r.py` (stored commit 076d8eadf3bd) it
comes from and the call as written there; every measurement names its row of
`DEVICE_VALIDATION.md` (same commit), section "Results (device, 2026-09-13)", table "What ran,
in order". The port runs a 512x512 pair
(32x32 = 1024 tokens per view), its encoder at batch 2, on a p150a with Tensix dispatch (11x10
grid, `device.compute_with_storage_grid_size()`), tt-metal v0.78.0-dev.

player.py runs these calls through the real ttnn 0.81.1 library on a mock p150 and hands the
device ops it records to the estimator (benchmarks/ttnn_validate.py).

Call fields: 'call' (what player.py issues), 'in' / 'out' (tensor names within a stage), shapes
and settings, 'site' (function in ttnn_dust3r.py: the call as written). Matmul settings the port
does not pass are the library's defaults (recorded by the library, not assumed here).
"""
from __future__ import annotations

SOURCE = {'repo': 'changh95/tt-mast3r', 'commit': '076d8eadf3bd8d9a633b8707a8fb8695f689a42b',
          'code': 'ttnn_dust3r.py (changh95/tt-mast3r models/demos/mast3r/tt/ttnn_dust3r.py)',
          'measurements': 'DEVICE_VALIDATION.md, "Results (device, 2026-09-13)"'}
GRID = (11, 10)
H = W = 512
TOKENS = 1024                       # 32 x 32 per view

# The port's knobs per measured configuration (DEVICE_VALIDATION.md, table What ran, in order):
# TT_FUSED=1 (rotary_embedding_llama, conv weight cache, DPT TILE reshape + relu fusion) always;
# MAST3R_FUSED_MM selects _mm_residual's form, MAST3R_SDPA_CHUNKS the SDPA program config.
VARIANTS = {
    'rope': {'residual': 'linear+add', 'sdpa_chunks': None},          # step 2a / 2b
    'dit': {'residual': 'dit', 'sdpa_chunks': None},                  # step 3
    'sdpa': {'residual': 'linear+add', 'sdpa_chunks': (128, 256)},    # step 4
    'dit+sdpa': {'residual': 'dit', 'sdpa_chunks': (128, 256)},       # steps 3+4: the default
}

_E = 'encoder_block_device_pre'
_D = 'decoder_block_device_pre'


def _mm(x, out, k, n, site, activation=None):
    """_mm: `ttnn.linear(h, w, bias=b[, activation=...])`, no program or compute config."""
    return {'call': 'linear', 'in': [x], 'out': out, 'k': k, 'n': n, 'bias': True,
            'activation': activation, 'site': f'{site}: _mm -> ttnn.linear(h, w, bias=b'
                                              + (f', activation="{activation}")' if activation
                                                 else ')')}


def _mm_residual(x, residual, k, n, site, out=None):
    """_mm_residual: residual + h @ W + b, in one of two forms (VARIANTS['residual']).

    'linear+add': ttnn.linear then ttnn.add(residual, y); 'dit' (MAST3R_FUSED_MM=dit):
    dit_minimal_matmul_addcmul_fused(h, W, 1.0, residual, ones[1,1,N], bias_tensor=b,
    config=MinimalMatmulConfig(4, 4, 4, 2x2, grid), compute_kernel_config=HiFi2, no fp32
    accumulation, packer_l1_acc) (_fused_consts 'dit_cfg', 'mm_ck').
    """
    return {'call': 'residual_linear', 'in': [x, residual], 'out': out or residual, 'k': k,
            'n': n,
            'dit_blocks': (4, 4, 4, 2, 2), 'dit_fidelity': 'HiFi2', 'dit_fp32_acc': False,
            'dit_packer_l1_acc': True, 'site': f'{site}: _mm_residual'}


def _ln(x, out, site):
    return {'call': 'layer_norm', 'in': [x], 'out': out, 'epsilon': 1e-6,
            'site': f'{site}: ttnn.layer_norm(x, weight=g, bias=b, epsilon=1e-6)'}


def _rope(x, seq, site):
    """_apply_rope (llama): one rotary_embedding_llama per q or k.

    rotary_embedding_llama(x, cos, sin, trans_mat, is_decode_mode=False,
    compute_kernel_config=rope_ck: HiFi4, fp32 dest acc, packer_l1_acc False); cos/sin
    [1, 1, N, 64] bf16 TILE, trans_mat [1, 1, 32, 32].
    """
    return {'call': 'rope_llama', 'in': [x], 'out': x, 'seq': seq, 'dh': 64,
            'fidelity': 'HiFi4', 'fp32_acc': True, 'packer_l1_acc': False,
            'site': f'{site}: _apply_rope -> ttnn.experimental.rotary_embedding_llama'}


def _sdpa(q, k, v, out, site):
    """_sdpa: non-causal SDPA, no mask, no compute config.

    scaled_dot_product_attention(q, k, v, is_causal=False[, program_config=
    SDPAProgramConfig(grid, q_chunk, k_chunk, exp_approx_mode=False)]).
    """
    return {'call': 'sdpa', 'in': [q, k, v], 'out': out,
            'site': f'{site}: _sdpa -> ttnn.transformer.scaled_dot_product_attention'}


# --- patch embedding + encoder (full_encoder; the trace's persistent [2, 3, 512, 512] input) ---
PATCH_EMBED = [
    {'call': 'reshape', 'in': ['img'], 'out': 'p', 'shape': (2, 3, 32, 16, 32, 16),
     'site': 'patch_embed_device: ttnn.reshape(tt_img, (B, C, hp, p, wp, p))'},
    {'call': 'permute', 'in': ['p'], 'out': 'p', 'dims': (0, 2, 4, 1, 3, 5),
     'site': 'patch_embed_device: ttnn.permute(tt_img, (0, 2, 4, 1, 3, 5))'},
    {'call': 'reshape', 'in': ['p'], 'out': 'p', 'shape': (2, TOKENS, 768),
     'site': 'patch_embed_device: ttnn.reshape(tt_img, (B, N, C * p * p))'},
    {'call': 'to_layout', 'in': ['p'], 'out': 'p', 'layout': 'TILE',
     'site': 'patch_embed_device: ttnn.to_layout(tt_patches, ttnn.TILE_LAYOUT)'},
    {'call': 'linear', 'in': ['p'], 'out': 'x', 'k': 768, 'n': 1024, 'bias': True,
     'activation': None, 'site': 'patch_embed_device: ttnn.linear(tt_patches, tt_w, bias=tt_b)'},
]
ENCODER_BLOCK = [                        # B=2, N=1024, D=1024, 16 heads of 64
    _ln('x', 'n1', _E),
    _mm('n1', 'qkv', 1024, 3072, _E),
    {'call': 'split_heads', 'in': ['qkv'], 'out': ['q', 'k', 'v'], 'heads': 16,
     'site': f'{_E}: ttnn.transformer.split_query_key_value_and_split_heads(tt_qkv, '
             'num_heads=heads, transpose_key=False)'},
    _rope('q', TOKENS, _E),
    _rope('k', TOKENS, _E),
    _sdpa('q', 'k', 'v', 'ctx', _E),
    {'call': 'concat_heads', 'in': ['ctx'], 'out': 'ctx',
     'site': f'{_E}: ttnn.transformer.concatenate_heads(tt_ctx)'},
    _mm_residual('ctx', 'x', 1024, 1024, _E),
    _ln('x', 'n2', _E),
    _mm('n2', 'h', 1024, 4096, _E, activation='gelu'),
    _mm_residual('h', 'x', 4096, 1024, _E),
]
ENCODER_NORM = [_ln('x', 'x', 'full_encoder (enc_norm)')]

# --- decoder (full_decoder; per depth, branch 1 then branch 2) ---------------------------------
DECODER_EMBED = [
    {'call': 'slice', 'in': ['enc'], 'out': 'e1', 'begin': (0, 0, 0), 'end': (1, TOKENS, 1024),
     'site': 'TtDust3r._graph: ttnn.slice(tt_enc, [0, 0, 0], [1, N, 1024])'},
    {'call': 'slice', 'in': ['enc'], 'out': 'e2', 'begin': (1, 0, 0), 'end': (2, TOKENS, 1024),
     'site': 'TtDust3r._graph: ttnn.slice(tt_enc, [1, 0, 0], [2, N, 1024])'},
    _mm('e1', 'f1', 1024, 768, 'full_decoder (decoder_embed)'),
    _mm('e2', 'f2', 1024, 768, 'full_decoder (decoder_embed)'),
]


def _decoder_branch(x: str, y: str, out: str) -> list[dict]:
    """decoder_block_device_pre(tt_x=x, tt_y=y): B=1, N=M=1024, D=768, 12 heads of 64."""
    return [
        _ln(x, 'n1', _D),
        _mm('n1', 'qkv', 768, 2304, _D),
        {'call': 'split_heads', 'in': ['qkv'], 'out': ['q', 'k', 'v'], 'heads': 12,
         'site': f'{_D}: split_query_key_value_and_split_heads(tt_qkv, num_heads=heads, '
                 'transpose_key=False)'},
        _rope('q', TOKENS, _D), _rope('k', TOKENS, _D),
        _sdpa('q', 'k', 'v', 'ctx', _D),
        {'call': 'concat_heads', 'in': ['ctx'], 'out': 'ctx',
         'site': f'{_D}: ttnn.transformer.concatenate_heads(tt_ctx)'},
        _mm_residual('ctx', x, 768, 768, _D, out=out),
        _ln(out, 'n2', _D),
        _ln(y, 'yn', _D),
        _mm('n2', 'qc', 768, 768, _D),
        _mm('yn', 'kvc', 768, 1536, _D),
        {'call': 'split_heads', 'in': ['qc', 'kvc'], 'out': ['q', 'k', 'v'], 'heads': 12,
         'site': f'{_D}: split_query_key_value_and_split_heads(tt_qc, kv_input_tensor=tt_kvc, '
                 'num_heads=heads, transpose_key=False)'},
        _rope('q', TOKENS, _D), _rope('k', TOKENS, _D),
        _sdpa('q', 'k', 'v', 'ctx', _D),
        {'call': 'concat_heads', 'in': ['ctx'], 'out': 'ctx',
         'site': f'{_D}: ttnn.transformer.concatenate_heads(tt_ctx)'},
        _mm_residual('ctx', out, 768, 768, _D),
        _ln(out, 'n3', _D),
        _mm('n3', 'h', 768, 3072, _D, activation='gelu'),
        _mm_residual('h', out, 3072, 768, _D),
    ]


# One depth: both branches read the previous depth's f1, f2 (full_decoder's loop).
DECODER_DEPTH = _decoder_branch('f1', 'f2', 'g1') + _decoder_branch('f2', 'f1', 'g2') + [
    {'call': 'rename', 'in': ['g1', 'g2'], 'out': ['f1', 'f2'],
     'site': 'full_decoder: tt_f1, tt_f2 = nf1, nf2'}]
DECODER_NORM = [_ln('f1', 't1', 'full_decoder (dec_norm)'), _ln('f2', 't2', 'full_decoder '
                                                                 '(dec_norm)')]


# --- DPT head (dpt_head_device, one branch; B=1, tokens 32x32; fused: TILE tap reshape, relu
# fused into the resconv conv1 and head2 convs, prepared conv weights cached) ------------------
def _conv(x, out, cin, cout, hw, k=3, stride=1, pad=1, bias=True, relu=False, site=''):
    """_conv2d: a 3x3 (or strided) conv of the DPT head.

    ttnn.conv2d(..., compute_config=_DPT_KCFG (HiFi4, fp32 dest acc, packer_l1_acc),
    [conv_config=Conv2dConfig(activation=relu)], return_weights_and_bias=True).
    """
    return {'call': 'conv2d', 'in': [x], 'out': out, 'cin': cin, 'cout': cout, 'hw': hw, 'k': k,
            'stride': stride, 'pad': pad, 'bias': bias, 'relu': relu, 'fidelity': 'HiFi4',
            'fp32_acc': True, 'packer_l1_acc': True, 'site': f'dpt_head_device: _conv2d {site}'}


def _convt(x, out, cin, cout, hw, k, site):
    """_conv_t2d: ttnn.conv_transpose2d(..., return_weights_and_bias=True), no compute config."""
    return {'call': 'conv_transpose2d', 'in': [x], 'out': out, 'cin': cin, 'cout': cout,
            'hw': hw, 'k': k, 'stride': k, 'pad': 0, 'site': f'dpt_head_device: _conv_t2d {site}'}


def _lin1x1(x, out, cin, cout, site):
    """_linear_1x1: [to_layout(TILE) if row-major] + ttnn.linear(tt_x, w_lin, bias=b_lin)."""
    return {'call': 'linear', 'in': [x], 'out': out, 'k': cin, 'n': cout, 'bias': True,
            'activation': None, 'tile_first': True, 'site': f'dpt_head_device: _linear_1x1 {site}'}


def _resconv(x, out, hw, site):
    """_resconv: ttnn.relu(x); conv1 (relu fused); conv2; ttnn.add(x, conv2)."""
    return [{'call': 'relu', 'in': [x], 'out': 'rx', 'site': f'_resconv {site}: ttnn.relu'},
            _conv('rx', 'c1', 256, 256, hw, relu=True, site=f'{site} conv1'),
            _conv('c1', 'c2', 256, 256, hw, site=f'{site} conv2'),
            {'call': 'add', 'in': [x, 'c2'], 'out': out, 'site': f'_resconv {site}: ttnn.add'}]


def _resize_out(x, out, hw, ch, site, cout=None):
    """_ffb tail: a bilinear x2 resize of a flat map, then (cout) its 1x1 out_conv.

    _flat_to_nhwc (to_layout RM + reshape), ttnn.upsample(scale_factor=2, mode="bilinear"),
    _nhwc_to_flat (sharded_to_interleaved(DRAM) if sharded, reshape, to_layout TILE), then
    _linear_1x1.
    """
    ops = [{'call': 'to_layout', 'in': [x], 'out': 'u', 'layout': 'ROW_MAJOR',
            'site': f'_flat_to_nhwc {site}'},
           {'call': 'reshape', 'in': ['u'], 'out': 'u', 'shape': (1, hw, hw, ch),
            'site': f'_flat_to_nhwc {site}'},
           {'call': 'upsample', 'in': ['u'], 'out': 'u', 'scale': 2,
            'site': f'{site}: ttnn.upsample(x, scale_factor=2, mode="bilinear")'},
           {'call': 'sharded_to_interleaved', 'in': ['u'], 'out': 'u',
            'site': f'_nhwc_to_flat {site}: ttnn.sharded_to_interleaved(x, DRAM) if sharded'},
           {'call': 'reshape', 'in': ['u'], 'out': 'u', 'shape': (1, 1, 4 * hw * hw, ch),
            'site': f'_nhwc_to_flat {site}'},
           {'call': 'to_layout', 'in': ['u'], 'out': 'u' if cout else out, 'layout': 'TILE',
            'site': f'_nhwc_to_flat {site}'}]
    if cout:
        ops.append(_lin1x1('u', out, ch, cout, site))
    return ops


def _fusion(x, skip, out, hw, r):
    """_ffb(x, refinenet r, skip): [resconv(skip) + add] + resconv + resize + 1x1 out_conv."""
    ops = []
    if skip:
        ops += _resconv(skip, 'sp', hw, f'refinenet{r} u1')
        ops.append({'call': 'add', 'in': [x, 'sp'], 'out': x, 'site': f'_ffb r{r}: ttnn.add'})
    ops += _resconv(x, 'rc', hw, f'refinenet{r} u2')
    return ops + _resize_out('rc', out, hw, 256, f'_ffb r{r}', cout=256)


DPT_HEAD = [
    *[{'call': 'reshape', 'in': [t], 'out': t, 'shape': (1, 1, TOKENS, c),
       'site': '_tokens_to_nhwc(tile=True): ttnn.reshape(tt_t, (1, 1, N, C))'}
      for t, c in (('t0', 1024), ('t1', 768), ('t2', 768), ('t3', 768))],
    _lin1x1('t0', 'l1', 1024, 96, 'ap0'), _convt('l1', 'l1', 96, 96, 32, 4, 'ap0 (x4)'),
    _lin1x1('t1', 'l2', 768, 192, 'ap1'), _convt('l2', 'l2', 192, 192, 32, 2, 'ap1 (x2)'),
    _lin1x1('t2', 'l3', 768, 384, 'ap2'),
    _lin1x1('t3', 'l4', 768, 768, 'ap3'),
    _conv('l4', 'l4', 768, 768, 32, stride=2, site='ap3 (stride 2)'),
    _conv('l1', 'l1', 96, 256, 128, bias=False, site='layer1_rn'),
    _conv('l2', 'l2', 192, 256, 64, bias=False, site='layer2_rn'),
    _conv('l3', 'l3', 384, 256, 32, bias=False, site='layer3_rn'),
    _conv('l4', 'l4', 768, 256, 16, bias=False, site='layer4_rn'),
    *_fusion('l4', None, 'p4', 16, 4),
    *_fusion('p4', 'l3', 'p3', 32, 3),
    *_fusion('p3', 'l2', 'p2', 64, 2),
    *_fusion('p2', 'l1', 'p1', 128, 1),
    _conv('p1', 'x', 256, 128, 256, site='head.0'),
    *_resize_out('x', 'x', 256, 128, 'head'),
    _conv('x', 'x', 128, 128, 512, relu=True, site='head.2 (relu fused)'),
    _lin1x1('x', 'out', 128, 4, 'head.4'),
]

# Stages as the harness times them: inputs uploaded by the stage, outputs read back by it.
# (name, [(calls, repeat)], inputs {name: (shape, layout)}, readback bytes)
STAGES = {
    'encoder': ([(PATCH_EMBED, 1), (ENCODER_BLOCK, 24), (ENCODER_NORM, 1)],
                {'img': ((2, 3, H, W), 'ROW_MAJOR')}, 2 * TOKENS * 1024 * 2),
    'decoder': ([(DECODER_EMBED, 1), (DECODER_DEPTH, 12), (DECODER_NORM, 1)],
                {'enc': ((2, TOKENS, 1024), 'TILE')}, 2 * TOKENS * 768 * 2),
    'DPT head': ([(DPT_HEAD, 1)],
                 {'t0': ((1, TOKENS, 1024), 'TILE'), 't1': ((1, TOKENS, 768), 'TILE'),
                  't2': ((1, TOKENS, 768), 'TILE'), 't3': ((1, TOKENS, 768), 'TILE')},
                 H * W * 32 * 2),
}
# Host traffic of each harness measurement (bytes up, bytes down): full_encoder uploads the
# image, full_decoder the two encoder outputs (both read their outputs back, to_torch);
# dpt_head_device the four taps, and reads back its [1, 1, 262144, 4] TILE output (16.8 MB,
# 32-wide tiles: DEVICE_VALIDATION.md section 4); the traced pair uploads the image, reads two
# outputs.
HOST_BYTES = {'encoder': (2 * 3 * H * W * 2, 2 * TOKENS * 1024 * 2),
              'decoder': (2 * TOKENS * 1024 * 2, 2 * TOKENS * 768 * 2),
              'DPT head': ((1024 + 3 * 768) * TOKENS * 2, H * W * 32 * 2),
              'pair': (2 * 3 * H * W * 2, 2 * H * W * 32 * 2)}

# Measured, p150a, wall clock of test_mast3r.py (best of --runs). 'eager' = MAST3R_TRACE=0: one
# ttnn call per op with host dispatch (the fused graph is device-bound: trace alone saved 0.2 ms).
MEASURED = [
    {'what': 'encoder', 'variant': 'rope', 'ms': 21.05, 'mode': 'eager',
     'source': 'step "2a fused eager, per stage": full_encoder 0.9996 / 21.05 ms'},
    {'what': 'decoder', 'variant': 'rope', 'ms': 29.55, 'mode': 'eager',
     'source': 'step "2a fused eager, per stage": full_decoder 1.0000 / 29.55'},
    {'what': 'DPT head', 'variant': 'rope', 'ms': 16.60, 'mode': 'eager',
     'source': 'step "2a fused eager, per stage": dpt_head_device 1.0000 / 16.60 '
               '(dpt_head_device_2: 17.77)'},
    {'what': 'pair', 'variant': 'rope', 'ms': 93.68, 'mode': 'traced',
     'source': 'step "2b fused traced e2e": 93.68 ms'},
    {'what': 'pair', 'variant': 'dit', 'ms': 88.71, 'mode': 'traced',
     'source': 'step "3 fused matmuls (traced)": dit 0.9976 / 88.71 ms'},
    {'what': 'pair', 'variant': 'sdpa', 'ms': 79.31, 'mode': 'traced',
     'source': 'step "4 SDPA chunks (traced)": 128,256 0.9974 / 79.31 ms'},
    {'what': 'pair', 'variant': 'dit+sdpa', 'ms': 72.96, 'mode': 'traced',
     'source': 'step "3+4 combined": 0.9970 / 72.96 ms best-of-25 (final gate 72.92 ms)'},
]
