"""Precision presets of the ttnn engines: dtypes of weights and activations, fidelity per matmul.

A preset (`Precision`) is built by keyword; a preset that is another with a few settings changed
is `dataclasses.replace` of that one, so each entry of PRESETS reads as what it changes. The PCC
of every preset on the CPU stand-in, the gates it is judged by and the measured ports' anchor
configurations are in docs/ttnn-precision.md; `python -m benchmarks.ttnn_precision_table`
prints them.

- 'bfloat16': bf16 activations and weights, HiFi4 with fp32 accumulation on every matmul, conv
  and SDPA: the plain reduced-precision baseline (the DA3 port needed HiFi4 + fp32 accumulation).
- The float32 presets keep chosen tensors in float32 (TF32 operands in the FPU, fp32 in the
  SFPU/eltwise ops): the residual stream (patch embedding output, pos-embed, every block's
  x + attn / x + mlp, LayerNorm inputs/outputs) and the DPT head activations; `fp32_weights`
  names weight groups uploaded as float32: 'norm' (LayerNorm gamma/beta), 'folded' (the
  LayerScale-folded attention proj and fc2), 'patch' (patch-embedding conv), 'head' (DPT head),
  'all'. Attention (q/k/v, SDPA) and the MLP hidden stay bf16 unless `inner` is float32. A bf16
  residual stream accumulates one bf16 rounding per block and a bf16 head one per conv; those
  two, not the matmul operands, hold DA3's depth below its gate. Unverified on hardware: mixed
  fp32 x bf16 matmul operands and float32 conv activations/weights.
- 'fast-hifi4' is 'float32-residual-head' on the speed design's layout
  (docs/ttnn-precision.md "Presets"): program configs, L1 residency and a bfloat4_b SDPA mask
  change where tensors live, not a value (the mask's 0 stays 0 and its -9.4e8 underflows the
  softmax as -1e9 does), so its numbers are 'float32-residual-head''s.
- 'fast' is the speed design with a fidelity per matmul role (ROLES; FAST_ROLES_DA3,
  FAST_ROLES_DUST3R): HiFi2 where the stand-in's FPU model keeps the gate, HiFi3 where it does
  not. HiFi3 is three of HiFi4's four passes and, for bf16 x bf16, all of the product but the
  activation's last mantissa bit times the weight's low three (devtools/ttnn/standin/ops_math.py),
  so a role that needs more than HiFi2 takes HiFi3 first. 'fast-hifi3' takes fc1 and SDPA to
  HiFi3 as well: with the levers mask_free_sdpa and block_sharded it is the DA3 default.
  DUSt3R's 'fast' keeps the residual stream and head bf16 (its pointmap gate holds there; the
  float32 activations are wired for DA3 only).

- The measured ports' precision levers, opt-in presets judged by the anchor gate (ANCHORS:
  the port's own precision on the same stand-in and weights): 'fast-hifi2' (DA3: qkv, proj and
  fc2 at HiFi2 with a weight debias), 'fast-hifi2-bf16-head' (that, and the DPT head bf16 at
  HiFi3), 'fast-all-hifi2' (the head's convs at HiFi2 too; DUSt3R: 'fast' with its head's
  convs at HiFi2), 'fast-lofi-mlp' (DUSt3R: the decoder's MLPs at LoFi, weights rounded on the
  host).

The defaults (DEFAULTS): DA3 'fast-hifi3+mask_free_sdpa+block_sharded' at the DA3 gate (depth
PCC >= 0.9999), DUSt3R 'fast' with all four levers at its own (pts3d PCC >= 0.995). A default may
name levers ('+').
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

_BF16, _F32 = 'bfloat16', 'float32'

# Matmul roles of the ViT blocks (TtLinear / SDPA call sites), of the DUSt3R decoder's MLP
# (dec_fc1 / dec_fc2: fc1's / fc2's setting unless the preset names them) and of the DPT head's
# convs (reassemble: the neck's level resizes, ConvT x4 / x2 and the stride-2 conv; rn: the four
# layer_rn convs; rcu: the fusion blocks' residual conv units; out_first / out_hidden: the
# output's 3x3 at path1 and at full resolution); any other matmul, conv or norm uses the
# preset's own fidelity and accumulation.
ROLES = ('qkv', 'proj', 'fc1', 'fc2', 'sdpa', 'reassemble', 'rn', 'rcu', 'out_first',
         'out_hidden', 'dec_fc1', 'dec_fc2')
_FALLBACK = {'dec_fc1': 'fc1', 'dec_fc2': 'fc2'}
HEAD_ROLES = ('reassemble', 'rn', 'rcu', 'out_first', 'out_hidden')


@dataclass(frozen=True)
class RoleSetting:
    """Fidelity, accumulation and (optionally) weight dtype of one matmul role.

    Args:
        role: one of ROLES.
        fidelity: 'LoFi', 'HiFi2', 'HiFi3' or 'HiFi4'.
        fp32_acc: fp32 destination accumulation (and packer L1 accumulation); False = bf16 Dst.
        weights: the role's weight dtype ('bfloat8_b', ...); None = the preset's.
        debias: scale the role's weights by 1 / (1 - shrink), cancelling the mean shrink of
            the activation bits its fidelity truncates (`Precision.debias_shrink`;
            docs/ttnn-precision.md "Port levers").
    """

    role: str
    fidelity: str
    fp32_acc: bool = True
    weights: str | None = None
    debias: bool = False


# Explicit mantissa bits of a dtype, and how many of each matmul operand the FPU multiplies
# (devtools/ttnn/standin/ops_math.py, after the ISA's fidelity phases): in0 (activations, SrcB)
# 6 at LoFi / HiFi2, all 10 of TF32 from HiFi3; in1 (weights, SrcA) 4 at LoFi, 9 from HiFi2.
# The FPU truncates the rest, so every dropped bit shrinks an operand on average.
_MANTISSA = {'float32': 23, 'bfloat16': 7, 'bfloat8_b': 6, 'bfloat4_b': 2}
_SRCB_BITS = {'LoFi': 6, 'HiFi2': 6, 'HiFi3': 10, 'HiFi4': 10}
_SRCA_BITS = {'LoFi': 4, 'HiFi2': 9, 'HiFi3': 9, 'HiFi4': 9}
# The activation dtype field a role's matmul reads: the LayerNorm output (residual) for qkv and
# fc1, the attention output / MLP hidden (inner) for proj and fc2, the head's for its convs.
_ROLE_INPUT = {'qkv': 'residual', 'fc1': 'residual', 'proj': 'inner', 'fc2': 'inner',
               'dec_fc1': 'residual', 'dec_fc2': 'inner',
               **{r: 'head' for r in HEAD_ROLES}}


def truncation_shrink(mantissa_bits: int, kept_bits: int) -> float:
    """Mean relative shrink of a value with `mantissa_bits` truncated to `kept_bits`.

    The dropped bits are uniform, their mean (2^-kept - 2^-mantissa) / 2 of the exponent's unit;
    relative to a significand log-uniform on [1, 2) (E[1/m] = 1 / (2 ln 2)).
    """
    if mantissa_bits <= kept_bits:
        return 0.0
    return (2.0 ** -kept_bits - 2.0 ** -mantissa_bits) / 2 / (2 * math.log(2))


def round_mantissa(w, bits: int):
    """float32 torch values rounded to nearest (ties even) at `bits` explicit mantissa bits."""
    import torch
    m, e = torch.frexp(w.to(torch.float64))                 # m in [0.5, 1)
    scale = 2.0 ** (bits + 1)
    return torch.ldexp(torch.round(m * scale) / scale, e).to(torch.float32)


def _roles(fidelity: dict[str, str], **weights: str) -> tuple[RoleSetting, ...]:
    """{role: fidelity} (fp32 accumulation) [+ role=weight dtype] -> RoleSettings."""
    return tuple(RoleSetting(r, f, weights=weights.get(r)) for r, f in fidelity.items())


# Per-role fidelity of the 'fast' presets, each the cheapest that keeps the family's gate on the
# stand-in's FPU model (docs/ttnn-precision.md "Per-role fidelity"). bf16 weights everywhere:
# bfloat8_b weights on the linears miss both gates (DA3's fc1 and DUSt3R's fc1 included: the
# DUSt3R-L margin of a bfloat8_b fc1 is below the stand-in's noise). DA3: HiFi2 only on fc1 and
# SDPA; qkv, proj and fc2 at HiFi2 drop the depth below the gate (their outputs enter the
# residual stream or the softmax unnormalised), and so do the RCUs below HiFi4 (they add into
# the head's running sum at full resolution). DUSt3R: every linear and SDPA at HiFi2, the
# output's two 3x3 convs at HiFi2, the other head convs at HiFi3 (all at HiFi2, its
# 'fast-all-hifi2', is within the stand-in's noise of the gate).
FAST_ROLES_DA3 = _roles({'qkv': 'HiFi3', 'proj': 'HiFi3', 'fc1': 'HiFi2', 'fc2': 'HiFi3',
                         'sdpa': 'HiFi2', 'reassemble': 'HiFi3', 'rn': 'HiFi3',
                         'out_first': 'HiFi3', 'out_hidden': 'HiFi3'})
FAST_ROLES_DUST3R = _roles({'qkv': 'HiFi2', 'proj': 'HiFi2', 'fc1': 'HiFi2', 'fc2': 'HiFi2',
                            'sdpa': 'HiFi2', 'reassemble': 'HiFi3', 'rn': 'HiFi3',
                            'rcu': 'HiFi3', 'out_first': 'HiFi2', 'out_hidden': 'HiFi2'})


@dataclass(frozen=True, kw_only=True)
class Precision:
    """One precision preset (module docstring); built by keyword, derived by `replace`."""

    name: str
    weights: str = _BF16           # bulk weight dtype
    fidelity: str = 'HiFi4'        # math fidelity of any matmul without a role setting
    fp32_acc: bool = True          # fp32 accumulation of any matmul without a role setting
    residual: str = _BF16          # dtype of the residual stream (and its LayerNorms)
    head: str = _BF16              # dtype of the DPT head activations
    inner: str = _BF16             # dtype of q/k/v, heads, SDPA output and MLP hidden
    fp32_weights: tuple[str, ...] = ()   # weight groups uploaded float32 ('all': every weight)
    roles: tuple[RoleSetting, ...] = ()  # per-role matmul settings (ROLES)
    bf16_weights: tuple[str, ...] = ()   # weight groups kept bf16 when the bulk is bfloat8_b
    program_configs: bool = False  # ViT linears with 2D-multicast program configs (config.py)
    l1_inner: bool = False         # q|k|v, heads, SDPA output and MLP hidden in L1 (interleaved)
    l1_residual: bool = False      # the encoder's residual stream and LayerNorm outputs in L1
    resize_hi_lo: bool = True      # a bf16 head's resizes as bf16 hi + lo matrices (resize.py)
    mask: str = _BF16              # the SDPA key mask (0 stays 0 in a block float, -1e9 huge)
    l1_resize: bool = False        # a head resize's intermediates in L1 when they fit (resize.py)
    round_weights: bool = False    # matmul / conv weights rounded to nearest on the host to the
    #                                bits their fidelity multiplies (host_weight), which the
    #                                FPU would truncate
    # The measured ports' structural levers (docs/ttnn-levers.md), each off unless named:
    fused_residual: bool = False   # proj / fc2 add the residual (LayerScale as the gate) in
    #                                dit_minimal_matmul_addcmul_fused (layers/block.py)
    block_sharded: bool = False    # encoder residual stream block-sharded in L1, sharded
    #                                LayerNorm and matmul configs (config.block_shard)
    mask_free_sdpa: bool = False   # the token stream keeps its real length: SDPA masks the tile
    #                                padding in its kernel, no mask tensor (config.shape_config)
    rope_kernel: bool = False      # RoPE as rotary_embedding_llama, the channel permutation
    #                                folded into the q/k weight rows (layers/rope2d.py)

    def __post_init__(self):
        bad = [getattr(r, 'role', r) for r in self.roles
               if not isinstance(r, RoleSetting) or r.role not in ROLES]
        if bad:
            raise ValueError(f'precision {self.name!r}: roles must be RoleSettings of known '
                             f'matmul roles, got {bad}; allowed roles: {ROLES}')
        dup = sorted({r.role for r in self.roles if sum(s.role == r.role for s in self.roles) > 1})
        if dup:
            raise ValueError(f'precision {self.name!r}: matmul roles set twice: {dup}')
        if any(r.debias and r.role not in _ROLE_INPUT for r in self.roles):
            raise ValueError(f'precision {self.name!r}: debias scales a role\'s weights; the '
                             f'roles with weights are {tuple(_ROLE_INPUT)}')
        size = {'float32': 4, 'bfloat16': 2}
        for role in ('proj', 'fc2') if self.fused_residual else ():
            w = self.weights_name('folded', role)
            if size.get(w, 1) != size.get(self.residual, 1):
                raise ValueError(
                    f'precision {self.name!r}: fused_residual adds the {self.residual} residual '
                    f'inside the {role} matmul, which ttnn allows only with weights of its tile '
                    f'size ("ternary_a_tile_size == in1_tile_size"), not {w}: put \'folded\' in '
                    'fp32_weights (or keep fused_residual off)')

    def role_setting(self, role: str | None) -> RoleSetting | None:
        """The RoleSetting of `role` (or of the role it falls back to), None without one."""
        r = next((r for r in self.roles if r.role == role), None)
        return self.role_setting(_FALLBACK[role]) if r is None and role in _FALLBACK else r

    def weights_dtype(self, ttnn, group: str | None = None, role: str | None = None):
        """Dtype of a weight of `group` ('norm', 'folded', 'patch', 'head' or None = bulk).

        A matmul role with its own weight dtype (RoleSetting.weights) takes that one.
        """
        return getattr(ttnn, self.weights_name(group, role))

    def weights_name(self, group: str | None = None, role: str | None = None) -> str:
        """weights_dtype's answer as the dtype's name ('float32', 'bfloat16', ...)."""
        if 'all' in self.fp32_weights or (group is not None and group in self.fp32_weights):
            return _F32
        r = self.role_setting(role)
        if r is not None and r.weights is not None:
            return r.weights
        if group is not None and group in self.bf16_weights:
            return _BF16
        return self.weights

    def debias_shrink(self, role: str) -> float:
        """Mean relative shrink of `role`'s activations in the FPU (truncation_shrink)."""
        act = getattr(self, _ROLE_INPUT[role])
        return truncation_shrink(_MANTISSA[act], _SRCB_BITS[self.matmul_setting(role)[0]])

    def host_weight(self, w, group: str | None = None, role: str | None = None):
        """A matmul / conv weight (torch) as the engine uploads it, float32.

        With the role's `debias`, divided by (1 - debias_shrink); with `round_weights`, rounded
        to nearest at the mantissa bits the role's fidelity multiplies. Biases are no matmul
        operand and go up as they are.
        """
        import torch
        w = w.detach().to(torch.float32)
        r = self.role_setting(role)
        if r is not None and r.debias:
            w = w / (1.0 - self.debias_shrink(role))
        bits = _SRCA_BITS[self.matmul_setting(role)[0]]
        if self.round_weights and bits < _MANTISSA[self.weights_name(group, role)]:
            w = round_mantissa(w, bits)
        return w

    def bias_dtype(self, ttnn, group: str | None = None, role: str | None = None):
        """Biases are bf16 next to bf16/bfloat8_b weights, float32 next to float32 weights."""
        w = self.weights_dtype(ttnn, group, role)
        return ttnn.float32 if w == ttnn.float32 else ttnn.bfloat16

    def act(self, ttnn, where: str):
        """Dtype of 'residual', 'head', 'inner' activations or of the SDPA 'mask'."""
        return getattr(ttnn, getattr(self, where))

    def matmul_setting(self, role: str | None = None) -> tuple[str, bool]:
        """(math fidelity, fp32 accumulation) of a matmul of `role` (None: the preset's own)."""
        r = self.role_setting(role)
        return (self.fidelity, self.fp32_acc) if r is None else (r.fidelity, r.fp32_acc)

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


BFLOAT16 = Precision(name='bfloat16')
FLOAT32_RESIDUAL = replace(BFLOAT16, name='float32-residual', residual=_F32,
                           fp32_weights=('norm', 'folded', 'patch'))
FLOAT32_RESIDUAL_HEAD = replace(FLOAT32_RESIDUAL, name='float32-residual-head', head=_F32,
                                fp32_weights=('norm', 'folded', 'patch', 'head'))
# The speed design's layout on float32-residual-head's numbers. The SDPA mask in bfloat4_b: SDPA
# reads it once per head, and 0 stays exactly 0 while -1e9 reads back as -9.4e8 (the real
# library's packing, which the stand-in matches bit for bit: devtools/ttnn/conformance).
FAST_HIFI4 = replace(FLOAT32_RESIDUAL_HEAD, name='fast-hifi4', program_configs=True,
                     l1_inner=True, l1_residual=True, mask='bfloat4_b', l1_resize=True)
# The speed design: per-role fidelity, and the LayerScale-folded proj / fc2 weights bf16 (half
# the bytes; their roles' fidelity decides their accuracy).
FAST_DA3 = replace(FAST_HIFI4, name='fast', fp32_weights=('norm', 'patch', 'head'),
                   roles=FAST_ROLES_DA3)


def _with_roles(p: Precision, *settings: RoleSetting) -> tuple[RoleSetting, ...]:
    """The roles of `p`, with `settings` replacing (or adding) those of the same role."""
    new = {r.role: r for r in settings}
    return tuple(new.pop(r.role, r) for r in p.roles) + tuple(new.values())


# The DA3 port's precision levers on 'fast' (docs/ttnn-precision.md "Port levers"): qkv, proj
# and fc2 at HiFi2 with a weight debias; then also the DPT head's activations and weights bf16,
# its convs at HiFi3 and its resizes one bf16 matrix a side; then the head's convs at HiFi2 too.
FAST_HIFI2 = replace(FAST_DA3, name='fast-hifi2', roles=_with_roles(
    FAST_DA3, *(RoleSetting(r, 'HiFi2', debias=True) for r in ('qkv', 'proj', 'fc2'))))
FAST_HIFI2_BF16_HEAD = replace(
    FAST_HIFI2, name='fast-hifi2-bf16-head', head=_BF16, fp32_weights=('norm', 'patch'),
    resize_hi_lo=False,
    roles=_with_roles(FAST_HIFI2, *(RoleSetting(r, 'HiFi3') for r in HEAD_ROLES)))
# DA3's 'fast' with fc1 and SDPA at HiFi3 as well: every ViT matmul role at HiFi3, the cheapest
# per-role setting found that keeps DA3's default gate with the structural levers on.
FAST_HIFI3 = replace(FAST_DA3, name='fast-hifi3', roles=_with_roles(
    FAST_DA3, RoleSetting('fc1', 'HiFi3'), RoleSetting('sdpa', 'HiFi3')))
FAST_ALL_HIFI2 = replace(FAST_HIFI2_BF16_HEAD, name='fast-all-hifi2', roles=_with_roles(
    FAST_HIFI2_BF16_HEAD, *(RoleSetting(r, 'HiFi2') for r in HEAD_ROLES)))
# DUSt3R's 'fast' (FAMILY_PRESETS): the residual stream and the head bf16, one bf16 matrix per
# head resize side (hi + lo buys nothing at its gate).
FAST_DUST3R = replace(FAST_DA3, residual=_BF16, head=_BF16, fp32_weights=(),
                      roles=FAST_ROLES_DUST3R, resize_hi_lo=False)
# The DUSt3R port's lever on its decoder: both MLP linears at LoFi (one FPU pass, not two). LoFi
# multiplies 4 of a bf16 weight's 7 mantissa bits: rounded on the host, not truncated.
FAST_LOFI_MLP = replace(FAST_DUST3R, name='fast-lofi-mlp', round_weights=True, roles=(
    *FAST_ROLES_DUST3R, RoleSetting('dec_fc1', 'LoFi'), RoleSetting('dec_fc2', 'LoFi')))
# DUSt3R's 'fast' with the head's convs at HiFi2 too, so every role at HiFi2 as in DA3's preset
# of that name: it passes the anchor gate with room, but its dithered PCC straddles the 0.995
# default gate (docs/ttnn-precision.md "Anchor gate"), so it is opt-in.
FAST_ALL_HIFI2_DUST3R = replace(FAST_DUST3R, name='fast-all-hifi2', roles=_with_roles(
    FAST_DUST3R, *(RoleSetting(r, 'HiFi2') for r in HEAD_ROLES)))

PRESETS = {p.name: p for p in (
    BFLOAT16,
    replace(BFLOAT16, name='bfloat16-hifi2', fidelity='HiFi2'),
    replace(BFLOAT16, name='bfloat8_b', weights='bfloat8_b'),
    replace(BFLOAT16, name='bfloat8_b-lofi', weights='bfloat8_b', fidelity='LoFi',
            fp32_acc=False),
    FLOAT32_RESIDUAL,
    FLOAT32_RESIDUAL_HEAD,
    Precision(name='float32', weights=_F32, residual=_F32, head=_F32, inner=_F32,
              fp32_weights=('all',)),
    FAST_DA3,
    FAST_HIFI4,
    FAST_HIFI3,
    FAST_HIFI2,
    FAST_HIFI2_BF16_HEAD,
    FAST_ALL_HIFI2,
    FAST_LOFI_MLP,
)}

# Presets that differ by family: DUSt3R's 'fast' and 'fast-all-hifi2'.
FAMILY_PRESETS = {'dust3r': {p.name: p for p in (FAST_DUST3R, FAST_ALL_HIFI2_DUST3R)}}

# The measured ports' precision on this engine: the bar of the anchor gate, on the same stand-in
# and weights (docs/ttnn-precision.md "Anchor gate"). Only the precision is the ports' (dtypes,
# fidelity and accumulation per matmul role); the layout is 'fast''s, which moves no value. Not
# user presets. Matmuls a port's record does not name keep HiFi4 with fp32 accumulation here:
# a slightly stricter bar.
# DA3 port (its card): bf16 weights and activations; qkv, proj and fc2 at HiFi2 with a weight
# debias; fc1, SDPA and the DPT head at HiFi3; fp32 accumulation.
# DUSt3R port (changh95/tt-mast3r `ttnn_dust3r.py`): bf16 everywhere; every linear and SDPA at
# ttnn's default compute config (HiFi2, bf16 Dst), the DPT convs at HiFi4 with fp32 accumulation.
ANCHORS = {
    'da3': replace(FAST_HIFI4, name='da3-port', residual=_BF16, head=_BF16, fp32_weights=(),
                   roles=(RoleSetting('qkv', 'HiFi2', debias=True),
                          RoleSetting('proj', 'HiFi2', debias=True),
                          RoleSetting('fc2', 'HiFi2', debias=True),
                          RoleSetting('fc1', 'HiFi3'), RoleSetting('sdpa', 'HiFi3'),
                          *(RoleSetting(r, 'HiFi3') for r in HEAD_ROLES))),
    'dust3r': replace(FAST_DUST3R, name='dust3r-port', roles=(
        *(RoleSetting(r, 'HiFi2', fp32_acc=False) for r in ('qkv', 'proj', 'fc1', 'fc2',
                                                             'sdpa')),
        *(RoleSetting(r, 'HiFi4') for r in HEAD_ROLES))),
}

# DA3: every ViT role at HiFi3 with the structural levers that move no value or raise the
# depth's PCC; the cheapest DA3 design found at its default gate (docs/ttnn-precision.md
# "Anchor gate"). DUSt3R: 'fast' with every structural lever; on its bf16 residual stream the
# fused residual rounds once less than linear + add, and the other three move no value.
DEFAULTS = {'da3': 'fast-hifi3+mask_free_sdpa+block_sharded',
            'dust3r': 'fast+fused_residual+mask_free_sdpa+rope_kernel+block_sharded'}
CHOICES = ('auto',) + tuple(PRESETS)     # the nodes' ttnn_precision; 'auto' = DEFAULTS
DA3_ONLY = ('float32-residual', 'float32-residual-head', 'float32', 'fast-hifi4', 'fast-hifi3',
            'fast-hifi2', 'fast-hifi2-bf16-head')
DUST3R_ONLY = ('fast-lofi-mlp',)     # sets the DUSt3R decoder's roles


# The structural levers a preset name may switch on: 'fast-hifi4+mask_free_sdpa+fused_residual'
LEVERS = ('fused_residual', 'block_sharded', 'mask_free_sdpa', 'rope_kernel')


def parse_precision(dtype, family: str = 'da3') -> Precision:
    """Map the engine `dtype` argument to a Precision; ValueError for an unknown preset.

    Args:
        dtype: A PRESETS name, 'bf16' (= 'bfloat16'), None (the family's default) or a
            Precision (a measured variant; its name keys the weight cache). A name may add
            LEVERS after '+' ('fast+mask_free_sdpa'): the preset with those switches on.
        family: 'da3' or 'dust3r' (DEFAULTS; the float32 presets are wired for DA3 only).
    """
    if isinstance(dtype, Precision):
        return dtype
    name, *levers = str(DEFAULTS[family] if dtype is None else dtype).split('+')
    name = 'bfloat16' if name == 'bf16' else name
    if name not in PRESETS:
        raise ValueError(f'ttnn dtype={dtype!r}; allowed: {sorted(PRESETS)} (None = '
                         f'{DEFAULTS[family]!r} for {family}), each optionally followed by '
                         f'+lever for levers of {LEVERS}')
    if family != 'da3' and name in DA3_ONLY:
        raise ValueError(f'ttnn dtype={name!r} is wired for DA3 only; {family} allows '
                         f'{sorted(set(PRESETS) - set(DA3_ONLY))}')
    if family != 'dust3r' and name in DUST3R_ONLY:
        raise ValueError(f'ttnn dtype={name!r} sets the DUSt3R decoder only; {family} allows '
                         f'{sorted(set(PRESETS) - set(DUST3R_ONLY))}')
    bad = [lever for lever in levers if lever not in LEVERS]
    if bad or len(set(levers)) != len(levers):
        raise ValueError(f'ttnn dtype={dtype!r}: levers {levers} must be distinct, from '
                         f'{LEVERS}')
    preset = FAMILY_PRESETS.get(family, {}).get(name, PRESETS[name])
    if not levers:
        return preset
    return replace(preset, name='+'.join([name, *levers]), **{lever: True for lever in levers})
