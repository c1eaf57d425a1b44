"""Number formats of the ttnn stand-in: bf16 round-to-nearest-even, bfloat8_b blocks, tile padding.

Mirrors the host conversions of tt-metal's `tensor/` (docs/ttnn.md §8); the conformance check
(`devtools/ttnn/conformance/`) compares these functions bit for bit with the real ttnn 0.81.1 wheel.
Values are kept as float32 torch tensors that hold exactly representable values of the format.
"""
from __future__ import annotations

import contextlib

import torch

TILE = 32        # tile edge: the last two dims of a TILE tensor are padded to multiples of 32
BFP_GROUP = 16   # bfloat8_b: one shared exponent per 16 values (one row of a 16x16 face)
_EXACT = {'on': False}
_DITHER = {'seed': None, 'rel': 0.0}


@contextlib.contextmanager
def exact_arithmetic():
    """Test diagnostics only: keep float32 values instead of bf16/bfloat8_b rounding.

    With it, an engine's remaining difference to an fp32 reference is its math, not precision.
    """
    _EXACT['on'] = True
    try:
        yield
    finally:
        _EXACT['on'] = False


def exact_on() -> bool:
    """True inside `exact_arithmetic()`."""
    return _EXACT['on']


@contextlib.contextmanager
def dither(seed: int, rel: float):
    """Noise measurement only: perturb every fp32-accumulated sum by up to `rel` of itself.

    The device sums a matmul's products in an order the stand-in does not know (and BLAS sums
    them in another on every CPU): those float32 sums differ in their last bits. `jitter`
    perturbs the matmul, SDPA and conv sums by a seeded, deterministic amount (a hash of the
    value's bits and `seed`, uniform in [-rel, rel) relative): another equally plausible
    summation. The spread of a PCC over seeds is how much of it is rounding luck
    (benchmarks/ttnn_precision_table.py --noise-seeds). Deferred ops must finish inside.
    """
    before = dict(_DITHER)
    _DITHER.update(seed=int(seed), rel=float(rel))
    try:
        yield
    finally:
        _DITHER.update(before)


def f64(x: torch.Tensor) -> torch.Tensor:
    """`x` in float64: where the stand-in sums or evaluates a function (`rounded`)."""
    return x.to(torch.float64)


def rounded(x: torch.Tensor) -> torch.Tensor:
    """A float64 result rounded once to float32: the same value on every CPU.

    float32 BLAS, conv and reduction kernels sum in an order set by the CPU's vector width
    (AVX2, AVX-512, AMX), and vectorised exp / erf differ in their last bit between them, so a
    float32 stand-in gives another PCC on another machine (docs/ttnn-precision.md "Machine
    independence"). Summed and evaluated in float64, a result is the exact one to ~1e-16 and
    rounds to the same float32 on any CPU (but for values within 1e-16 of a float32 tie). The
    device's Dst summation order is unknown either way: `dither` measures what another order
    would do.
    """
    return x.to(torch.float32)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim as every stand-in op evaluates it (softmax, SDPA): `rounded`."""
    return rounded(torch.softmax(f64(x), dim=-1))


def jitter(x: torch.Tensor) -> torch.Tensor:
    """A float32 sum `x` perturbed under `dither`; `x` itself otherwise."""
    if _DITHER['seed'] is None or x.is_meta:
        return x
    bits = x.to(torch.float32).contiguous().view(torch.int32).to(torch.int64)
    h = (bits * 0x9E3779B1 + _DITHER['seed'] * 0x85EBCA77 + 0x27D4EB2F) & 0xFFFFFFFF
    h = (h ^ (h >> 15)) * 0x2C1B3C6D & 0xFFFFFFFF
    h = (h ^ (h >> 12)) & 0xFFFFFF
    u = h.to(torch.float64) / float(1 << 23) - 1.0                   # uniform in [-1, 1)
    return (x.to(torch.float64) * (1.0 + _DITHER['rel'] * u)).to(torch.float32)


@contextlib.contextmanager
def arithmetic(*, exact: bool):
    """Compute as `exact_arithmetic()` was when a deferred op was launched (lazy.py)."""
    before, _EXACT['on'] = _EXACT['on'], exact
    try:
        yield
    finally:
        _EXACT['on'] = before


def round_bf16(x: torch.Tensor) -> torch.Tensor:
    """Round float32 to the nearest bfloat16 (ties to even), returned as float32."""
    return x.to(torch.float32).to(torch.bfloat16).to(torch.float32)


# mantissa bits of each block-float dtype (quantize_bfp)
BFP_WIDTHS = {'BFLOAT8_B': 7, 'BFLOAT4_B': 3}


def quantize_bfp(x: torch.Tensor, width: int) -> torch.Tensor:
    """Quantise to a block float, bfloat8_b (width 7) or bfloat4_b (3); float32 values out.

    Every 16 consecutive values along the last dim (one 16-wide face row; rows of a 32x32 tile
    hold two) share the exponent e = the largest biased exponent among them. As tt-metal's host
    packer does (`convert_u32_to_bfp`): each value's 24-bit significand (hidden bit set) is
    shifted right by e - its own exponent, TRUNCATING the bits shifted out, and the remaining
    24-bit value is rounded to `width` bits, ties to even (2.5 -> 2, 3.5 -> 4), clipped to
    2**width - 1 (the exponent is not bumped). So a value a few ulps above a tie whose extra bits
    were shifted out rounds as the tie (real 0.81.1, bfloat8_b: -0.020019537 in a group with
    e = 2^-4 -> -0.01953125, not -0.0205078); a magnitude that rounds to 0 reads back as +0 (sign
    dropped); zeros and denormals are 0. The value is m * 2**(e - (width - 1)). The conformance
    check compares both widths with the real package bit for bit.
    """
    if x.shape[-1] % BFP_GROUP:
        raise ValueError(f'block floats need a last dim padded to {BFP_GROUP}, got '
                         f'{tuple(x.shape)}')
    g = x.to(torch.float32).contiguous().reshape(*x.shape[:-1], x.shape[-1] // BFP_GROUP,
                                                 BFP_GROUP)
    bits = g.view(torch.int32)
    own = (bits >> 23) & 0xFF                               # biased exponent (0: zero/denormal)
    sig = torch.where(own > 0, (bits & 0x7FFFFF) | 0x800000, torch.zeros_like(bits))
    shared = own.amax(dim=-1, keepdim=True)
    shifted = sig >> torch.clamp(shared - own, max=31)      # truncating shift
    drop = 24 - width
    q, rem = shifted >> drop, shifted & ((1 << drop) - 1)
    half = 1 << (drop - 1)
    up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    mag = torch.clamp(q + up.to(torch.int32), max=(1 << width) - 1).to(torch.float32)
    step = torch.exp2((shared - 127 - (width - 1)).to(torch.float32))
    out = torch.where(g < 0, -mag, mag) * step
    out = torch.where(mag > 0, out, torch.zeros_like(out))  # a zero magnitude is +0
    return out.reshape(x.shape)


def quantize(x: torch.Tensor, dtype) -> torch.Tensor:
    """Re-quantise values to a ttnn dtype (the stand-in's per-op output rounding)."""
    if x.is_meta or (_EXACT['on'] and dtype.name in ('BFLOAT16', 'BFLOAT8_B')):
        return x.to(torch.float32)
    name = dtype.name
    if name == 'BFLOAT16':
        return round_bf16(x)
    if name in BFP_WIDTHS:
        return quantize_bfp(x, BFP_WIDTHS[name])
    if name == 'FLOAT32':
        return x.to(torch.float32)
    if name in ('UINT8', 'UINT16', 'UINT32', 'INT32'):
        return torch.round(x.to(torch.float32))
    raise TypeError(f'stand-in: unsupported dtype {dtype}')


def padded_dims(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Tile-padded shape: the last two dims rounded up to multiples of 32 (rank >= 1)."""
    shape = tuple(int(s) for s in shape)
    if len(shape) == 1:
        return (-(-shape[0] // TILE) * TILE,)
    return shape[:-2] + tuple(-(-s // TILE) * TILE for s in shape[-2:])


def pad_to_tiles(x: torch.Tensor, value: float = 0.0) -> torch.Tensor:
    """Pad the last two dims to tile multiples with `value` (NaN models undefined padding)."""
    target = padded_dims(tuple(x.shape))
    if target == tuple(x.shape):
        return x.clone()
    out = torch.empty(target, dtype=torch.float32, device=x.device)   # fill only the padding
    if x.dim() == 1:
        out[:x.shape[0]] = x
        out[x.shape[0]:] = value
        return out
    h, w = x.shape[-2:]
    out[..., :h, :w] = x
    out[..., h:, :] = value
    out[..., :h, w:] = value
    return out


def unpad(x: torch.Tensor, logical: tuple[int, ...]) -> torch.Tensor:
    """Logical view of padded data."""
    return x[tuple(slice(0, s) for s in logical)]
