"""Precision knobs of the ttnn engines (docs/ttnn.md §3): dtypes of weights and activations.

'bfloat16': bf16 activations and weights, HiFi4 with fp32 accumulation on every matmul, conv and
SDPA (the DA3 port needed this for PCC >= 0.99); DUSt3R's default until 'fast'. On the synthetic
DA3 weights it stops at depth PCC ~0.9996 (tiny) / ~0.9989 (Large), short of the issue's 0.9999.

The float32 presets keep chosen tensors in float32 (TF32 operands in the FPU, fp32 in the
SFPU/eltwise ops): the residual stream (patch embedding output, pos-embed, every block's
x + attn / x + mlp, LayerNorm inputs/outputs) and the DPT head activations; `fp32_weights` names
weight groups uploaded as float32: 'norm' (LayerNorm gamma/beta), 'folded' (the LayerScale-folded
attention proj and fc2), 'patch' (patch-embedding conv), 'head' (DPT head), 'all'. Attention
(q/k/v, SDPA) and the MLP hidden stay bf16 unless `inner` is float32.
'float32-residual-head' (residual + head in float32) is the cheapest precision that reaches depth
PCC >= 0.9999 on the stand-in (0.99994 tiny, 0.99991 Large; Large linear/LN weights 899 vs 631 MB
in bf16, one op fewer per forward). Table and costs:
test/engines/ttnn_backend/test_da3_precision.py. Unverified on hardware: mixed fp32 x bf16 matmul
operands and float32 conv activations/weights. 'fast-hifi4', the DA3 default, is that precision
on the speed design's layout (below).

The defaults (DEFAULTS) are the speed design's layout: DA3 'fast-hifi4' at the DA3 gate (depth
PCC >= 0.9999), DUSt3R 'fast' at its own (pts3d >= 0.995). DA3's 'fast' (0.9998) is opt-in.

'fast' is the speed design (README "ttnn speed design"): the ViT linears get 2D-multicast program
configs (config.linear_program_config; GELU fused into fc1), q/k/v, heads, the SDPA output,
the MLP hidden and the encoder's residual stream with its LayerNorm outputs live in L1 (the
SDPA mask cannot: ttnn requires it in DRAM), and each matmul role has its own fidelity / weight
dtype (ROLES, FAST_ROLES_*). Measured with the stand-in's FPU model (operand truncation per
fidelity, bf16 destination without fp32 accumulation: devtools/ttnn/standin/ops_math.py) by
benchmarks/ttnn_precision_table.py: bfloat8_b weights on every linear miss the gates (DA3-Large
depth PCC 0.9988, DUSt3R tiny pts3d 0.981), and so does HiFi2 on every DA3 linear (0.9997: it
truncates the bf16 activations, in0, to 7 significant bits); DA3's fc1 and SDPA take HiFi2 and
its other linears and most head convs HiFi3, DUSt3R's linears HiFi2 (bf16 weights: a bfloat8_b
fc1 misses its gate on some CPUs) and its head convs HiFi2 / HiFi3 (FAST_ROLES_*).
"""
from __future__ import annotations

from dataclasses import dataclass

_BF16, _F32 = 'bfloat16', 'float32'

# Matmul roles of the ViT blocks (TtLinear / SDPA call sites) and of the DPT head's convs
# (reassemble: the neck's level resizes, ConvT x4 / x2 and the stride-2 conv; rn: the four
# layer_rn convs; rcu: the fusion blocks' residual conv units; out_first / out_hidden: the
# output's 3x3 at path1 and at full resolution); any other matmul, conv or norm uses the
# preset's own fidelity and accumulation.
ROLES = ('qkv', 'proj', 'fc1', 'fc2', 'sdpa', 'reassemble', 'rn', 'rcu', 'out_first',
         'out_hidden')
# role: (math fidelity, fp32 accumulation[, weights]) of the 'fast' presets, measured on the
# stand-in's FPU model against the golden fp32 outputs (benchmarks/ttnn_precision_table.py; table
# in README "ttnn speed design"). bfloat8_b everywhere misses both gates on the rule-v1 weights
# (DA3-Large depth PCC 0.9988, DUSt3R tiny pts3d 0.981). HiFi3 is three of HiFi4's four passes
# and, for a bf16 activation times bf16 weights, almost all of its product: HiFi2 computes the
# activation's top 6 mantissa bits times all 7 of the weight's, and HiFi3 adds the activation's
# last bit times the weight's top 4 (ops_math.py), so most matmuls that need more than HiFi2 take
# HiFi3. DA3-Large holds its gate (0.9998) with bf16 weights, fc1 and SDPA at HiFi2 and qkv, proj,
# fc2 and the head's convs at HiFi3 except the RCUs (depth PCC 0.999820; all at HiFi4 but fc1 and
# SDPA 0.999832; the RCUs at HiFi3 too 0.999808, at HiFi2 0.999577; fc1 also bfloat8_b: 0.99965;
# every linear HiFi2: 0.99970; SDPA and qkv at HiFi2 0.999710, SDPA and fc2 0.999769, SDPA and
# proj 0.999808: too close). DUSt3R (gate 0.995) takes HiFi2 on every linear and SDPA on bf16
# weights (0.99580; SDPA at HiFi4 0.99593; a bfloat8_b fc1, recorded at 0.99533 on an earlier
# stop's machine, measures 0.99491 on this AMD EPYC with the same code: the stand-in's torch
# kernels differ by CPU, so a margin of a few 1e-4 is no margin; a LoFi fc1 0.993446, a LoFi fc2
# 0.992196), HiFi2 on the output's two 3x3 convs and HiFi3 on the other head convs (pts3d
# 0.99581; its head all HiFi2 0.99191; the layer_rn and RCU convs at HiFi2 too 0.995134).
FAST_ROLES_DA3 = (('qkv', 'HiFi3', True), ('proj', 'HiFi3', True), ('fc1', 'HiFi2', True),
                  ('fc2', 'HiFi3', True), ('sdpa', 'HiFi2', True), ('reassemble', 'HiFi3', True),
                  ('rn', 'HiFi3', True), ('out_first', 'HiFi3', True),
                  ('out_hidden', 'HiFi3', True))
FAST_ROLES_DUST3R = (('qkv', 'HiFi2', True), ('proj', 'HiFi2', True),
                     ('fc1', 'HiFi2', True), ('fc2', 'HiFi2', True),
                     ('sdpa', 'HiFi2', True), ('reassemble', 'HiFi3', True),
                     ('rn', 'HiFi3', True), ('rcu', 'HiFi3', True),
                     ('out_first', 'HiFi2', True), ('out_hidden', 'HiFi2', True))

PRESETS = {
    # name: (bulk weights, math fidelity, fp32 accumulation, residual, head, inner, fp32 weights
    #        [, per-role matmul settings, bf16 weight groups, program configs, L1 inner,
    #        L1 residual, bf16 head resizes as hi + lo, SDPA mask, L1 resize intermediates])
    'bfloat16': ('bfloat16', 'HiFi4', True, _BF16, _BF16, _BF16, ()),
    'bfloat16-hifi2': ('bfloat16', 'HiFi2', True, _BF16, _BF16, _BF16, ()),
    'bfloat8_b': ('bfloat8_b', 'HiFi4', True, _BF16, _BF16, _BF16, ()),
    'bfloat8_b-lofi': ('bfloat8_b', 'LoFi', False, _BF16, _BF16, _BF16, ()),
    'float32-residual': ('bfloat16', 'HiFi4', True, _F32, _BF16, _BF16,
                         ('norm', 'folded', 'patch')),
    'float32-residual-head': ('bfloat16', 'HiFi4', True, _F32, _F32, _BF16,
                              ('norm', 'folded', 'patch', 'head')),
    'float32': ('float32', 'HiFi4', True, _F32, _F32, _F32, ('all',)),
    # The speed design (README "ttnn speed design"): ViT linears with program configs (GELU
    # fused), q/k/v, heads, MLP hidden and the residual stream in L1, fc1 and SDPA at HiFi2;
    # the residual stream and the DPT head stay float32 (bf16 there misses the DA3 gate). The
    # SDPA mask in bfloat4_b: SDPA reads it once per head (16 x 3.8 MB per DA3-L 518x518 call in
    # bf16, 1.1 MB in bfloat4_b); 0 stays exactly 0 and -1e9 reads back as -9.4e8 (the real
    # library's packing, which the stand-in matches bit for bit: devtools/ttnn/conformance).
    'fast': ('bfloat16', 'HiFi4', True, _F32, _F32, _BF16, ('norm', 'patch', 'head'),
             FAST_ROLES_DA3, (), True, True, True, True, 'bfloat4_b', True),
    # The DA3 default: 'float32-residual-head' numbers on the speed design's layout. Program
    # configs, L1 residency and the bfloat4_b mask change where tensors live, not a value (the
    # mask's 0 stays 0 and its -9.4e8 underflows the softmax as -1e9 does), so with HiFi4 + fp32
    # accumulation everywhere and the same float32 groups the stand-in gives the same depth
    # (DA3-Large 280x504 PCC 0.999909) at about half the estimated time (README "Presets today").
    'fast-hifi4': ('bfloat16', 'HiFi4', True, _F32, _F32, _BF16,
                   ('norm', 'folded', 'patch', 'head'), (), (), True, True, True, True,
                   'bfloat4_b', True),
}

# A preset that differs by family: DUSt3R's 'fast' keeps the residual stream and the head bf16
# (its pts3d gate, PCC >= 0.995, holds there; the float32 activations are wired for DA3 only),
# and its head resizes take one bf16 matrix per side (pts3d 0.99593 vs 0.99578 with hi + lo).
FAMILY_PRESETS = {'dust3r': {
    'fast': ('bfloat16', 'HiFi4', True, _BF16, _BF16, _BF16, (), FAST_ROLES_DUST3R, (), True,
             True, True, False, 'bfloat4_b', True),
}}

DEFAULTS = {'da3': 'fast-hifi4', 'dust3r': 'fast'}
CHOICES = ('auto',) + tuple(PRESETS)     # the nodes' ttnn_precision; 'auto' = DEFAULTS
DA3_ONLY = ('float32-residual', 'float32-residual-head', 'float32', 'fast-hifi4')


@dataclass(frozen=True)
class Precision:
    """One precision setting (see PRESETS)."""

    name: str
    weights: str
    fidelity: str
    fp32_acc: bool
    residual: str = _BF16
    head: str = _BF16
    inner: str = _BF16
    fp32_weights: tuple = ()
    roles: tuple = ()              # ((role, fidelity, fp32 accumulation[, weights]), ...)
    bf16_weights: tuple = ()       # weight groups kept bf16 when the bulk is bfloat8_b
    program_configs: bool = False  # ViT linears with 2D-multicast program configs (config.py)
    l1_inner: bool = False         # q|k|v, heads, SDPA output and MLP hidden in L1 (interleaved)
    l1_residual: bool = False      # the encoder's residual stream and LayerNorm outputs in L1
    resize_hi_lo: bool = True      # a bf16 head's resizes as bf16 hi + lo matrices (resize.py)
    mask: str = _BF16              # the SDPA key mask (0 stays 0 in a block float, -1e9 huge)
    l1_resize: bool = False        # a head resize's intermediates in L1 when they fit (resize.py)

    def __post_init__(self):
        bad = [r[0] for r in self.roles if r[0] not in ROLES or len(r) not in (3, 4)]
        if bad:
            raise ValueError(f'precision {self.name!r}: unknown matmul roles {bad}; '
                             f'allowed: {ROLES}')

    def weights_dtype(self, ttnn, group: str | None = None, role: str | None = None):
        """Dtype of a weight of `group` ('norm', 'folded', 'patch', 'head' or None = bulk).

        A matmul role with its own weight dtype (a 4th entry in `roles`) takes that one.
        """
        if 'all' in self.fp32_weights or (group is not None and group in self.fp32_weights):
            return ttnn.float32
        for r in self.roles:
            if r[0] == role and len(r) == 4:
                return getattr(ttnn, r[3])
        if group is not None and group in self.bf16_weights:
            return ttnn.bfloat16
        return getattr(ttnn, self.weights)

    def bias_dtype(self, ttnn, group: str | None = None, role: str | None = None):
        """Biases are bf16 next to bf16/bfloat8_b weights, float32 next to float32 weights."""
        w = self.weights_dtype(ttnn, group, role)
        return ttnn.float32 if w == ttnn.float32 else ttnn.bfloat16

    def act(self, ttnn, where: str):
        """Dtype of 'residual', 'head', 'inner' activations or of the SDPA 'mask'."""
        return getattr(ttnn, getattr(self, where))

    def matmul_setting(self, role: str | None = None) -> tuple[str, bool]:
        """(math fidelity, fp32 accumulation) of a matmul of `role` (None: the preset's own)."""
        for r in self.roles:
            if r[0] == role:
                return r[1], r[2]
        return self.fidelity, self.fp32_acc

    def inner_memory(self, ttnn):
        """L1 for the 'inner' activations (q/k/v, heads, MLP hidden) if l1_inner, else None."""
        return ttnn.L1_MEMORY_CONFIG if self.l1_inner else None

    def residual_memory(self, ttnn):
        """Where the encoder blocks keep x, LN(x) and the proj/fc2 outputs: L1 or DRAM."""
        return ttnn.L1_MEMORY_CONFIG if self.l1_residual else ttnn.DRAM_MEMORY_CONFIG

    def kernel_config(self, ttnn, role: str | None = None):
        fidelity, fp32_acc = self.matmul_setting(role)
        return ttnn.WormholeComputeKernelConfig(
            math_fidelity=getattr(ttnn.MathFidelity, fidelity),
            math_approx_mode=False, fp32_dest_acc_en=fp32_acc, packer_l1_acc=fp32_acc)


def parse_precision(dtype, family: str = 'da3') -> Precision:
    """Map the engine `dtype` argument to a Precision; ValueError for an unknown preset.

    Args:
        dtype: A PRESETS name, 'bf16' (= 'bfloat16'), None (the family's default) or a
            Precision (a measured variant; its name keys the weight cache).
        family: 'da3' or 'dust3r' (DEFAULTS; the float32 presets are wired for DA3 only).
    """
    if isinstance(dtype, Precision):
        return dtype
    if dtype is None:
        name = DEFAULTS[family]
    else:
        name = 'bfloat16' if dtype == 'bf16' else str(dtype)
    if name not in PRESETS:
        raise ValueError(f'ttnn dtype={dtype!r}; allowed: {sorted(PRESETS)} (None = '
                         f'{DEFAULTS[family]!r} for {family})')
    if family != 'da3' and name in DA3_ONLY:
        raise ValueError(f'ttnn dtype={name!r} is wired for DA3 only; {family} allows '
                         f'{sorted(set(PRESETS) - set(DA3_ONLY))}')
    return Precision(name, *FAMILY_PRESETS.get(family, {}).get(name, PRESETS[name]))
