"""Per-shape device configuration, derived in one commented place (as tt-metal model demos do).

Token rows are padded to a tile multiple (32) so every matmul/SDPA contracts over aligned dims;
padded keys are masked with an additive -1e9 (SDPA masking of a non-aligned logical length is
unverified on hardware, docs/ttnn.md §5). SDPA chunks divide the padded length (ttnn requires
chunk | length): the K chunk is the largest of 256/128/64/32, the Q chunk per head count the one
that leaves the busiest core the fewest query rows (sdpa_q_chunk); the SDPA grid is the whole
compute grid.
The ViT linears of a preset with program configs (precision 'fast') get a 2D-multicast matmul
config sized from their tile counts (linear_program_config); the real library's validation and
circular-buffer checks in the dry run (devtools/ttnn/dryrun) are the judge of what fits.
"""
from __future__ import annotations

from dataclasses import dataclass

TILE = 32
"""Tile side of ttnn's TILE layout (elements)."""


def pad_to(n: int, m: int = TILE) -> int:
    """N rounded up to a multiple of m."""
    return -(-n // m) * m


@dataclass(frozen=True)
class ShapeConfig:
    height: int
    width: int
    grid_h: int            # patch rows (H / patch)
    grid_w: int            # patch cols
    tokens: int            # real tokens (patches + prefix)
    seq: int               # tokens padded to a tile multiple
    k_chunk: int
    core_grid: tuple[int, int]

    @property
    def masked(self) -> bool:
        return self.seq != self.tokens

    def q_chunk(self, heads: int, batch: int = 1) -> int:
        """SDPA's Q chunk for an attention of `heads` heads over this sequence."""
        return sdpa_q_chunk(self.seq, heads, batch, self.core_grid[0] * self.core_grid[1])


def shape_config(height: int, width: int, patch: int, prefix_tokens: int,
                 core_grid: tuple[int, int]) -> ShapeConfig:
    """Derive every per-shape setting for an (height, width) input.

    Args:
        height: Network input rows (multiple of `patch`).
        width: Network input columns.
        patch: Patch size (14 DA3, 16 DUSt3R).
        prefix_tokens: Non-patch tokens (DA3: 1 cls; DUSt3R: 0).
        core_grid: Device compute grid (x, y): 12x10 with ETH dispatch, 11x10 otherwise.
    """
    if height % patch or width % patch or height <= 0 or width <= 0:
        raise ValueError(f'input {height}x{width} is not a positive multiple of the patch size '
                         f'{patch}; resize to the network grid first')
    gh, gw = height // patch, width // patch
    tokens = gh * gw + prefix_tokens
    seq = pad_to(tokens)                      # e.g. 721 -> 736 (280x504), 1370 -> 1376 (518^2)
    chunk = next(c for c in SDPA_CHUNKS if seq % c == 0)
    return ShapeConfig(height, width, gh, gw, tokens, seq, chunk, core_grid)


SDPA_CHUNKS = (256, 128, 64, 32)


def sdpa_split(batch: int, heads: int, chunks: int, cores: int) -> tuple[int, int]:
    """(Q chunks on SDPA's busiest core, cores busy), as the library's SDPA program splits work.

    tt-metal's sdpa_program_factory parallelises batch first, then heads, then Q chunks: batch
    factor min(B, cores), head factor min(cores / that, heads), Q factor min(cores / both,
    chunks), each core taking the ceiling of its share (16 heads on 110 cores: 96 busy). The
    p150 cost estimate prices SDPA with the same split (devtools/ttnn/cost_model.py).
    """
    bf = min(batch, cores)
    hf = min(cores // bf, heads)
    qf = min(cores // (bf * hf), chunks)
    return -(-batch // bf) * -(-heads // hf) * -(-chunks // qf), bf * hf * qf


def sdpa_q_chunk(seq: int, heads: int, batch: int, cores: int) -> int:
    """The Q chunk that leaves SDPA's busiest core the fewest query rows; the larger on a tie.

    Under sdpa_split, with one chunk size for every sequence, 16 heads of 768 tokens in 256-row
    chunks keep 48 of 110 cores busy with 256 rows each; 128-row chunks give 96 cores 128 rows.
    Every chunk streams its head's whole K and V again, so on a tie the larger chunk moves less.
    """
    def busiest_rows(chunk: int) -> int:
        return sdpa_split(batch, heads, seq // chunk, cores)[0] * chunk

    fits = [c for c in SDPA_CHUNKS if seq % c == 0]
    return min(fits, key=lambda c: (busiest_rows(c), -c))


def _largest_divisor(n: int, limit: int) -> int:
    return next(d for d in range(min(n, limit), 0, -1) if n % d == 0)


def _out_subblock(per_m: int, per_n: int, fp32_acc: bool) -> tuple[int, int]:
    """(h, w) tiles the destination holds: <= 4 with fp32 accumulation, else 8; 1 high if narrow."""
    limit = 4 if fp32_acc else 8
    sub_w = _largest_divisor(per_n, limit)
    return (1 if sub_w < per_n else _largest_divisor(per_m, limit // sub_w)), sub_w


def linear_program_config(ttnn, grid: tuple[int, int], rows: int, k: int, n: int, *,
                          gelu: bool = False, fp32_acc: bool = True):
    """2D-multicast program config of a [rows, k] x [k, n] linear over the whole compute grid.

    In tiles (Mt = rows/32, Kt = k/32, Nt = n/32; grid x columns, y rows): each core computes a
    per_core_M x per_core_N block, per_core_M = ceil(Mt / y), per_core_N = ceil(Nt / x) (DA3-L
    518x518: Mt 43 -> 5 on 10 rows; qkv Nt 96 -> 9, fc1 128 -> 12, proj/fc2 32 -> 3 on 11 columns).
    K streams in blocks of in0_block_w tiles (4 when it divides Kt): the circular buffers are
    double-buffered in0 (per_core_M x 4) and in1 (4 x per_core_N) blocks plus the output block.
    The output subblock (what the destination register holds at once) is at most 4 tiles with
    fp32 accumulation, else 8; when it is narrower than per_core_N it is one tile high. GELU is
    fused into the matmul (no separate unary op over the output).
    """
    gx, gy = grid
    mt, kt, nt = -(-rows // 32), -(-k // 32), -(-n // 32)
    per_m, per_n = -(-mt // gy), -(-nt // gx)
    sub_h, sub_w = _out_subblock(per_m, per_n, fp32_acc)
    return ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(gx, gy), in0_block_w=_largest_divisor(kt, 4),
        out_subblock_h=sub_h, out_subblock_w=sub_w, per_core_M=per_m, per_core_N=per_n,
        transpose_mcast=False,
        fused_activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.GELU) if gelu else None,
        fuse_batch=True)


def resize_program_config(ttnn, grid: tuple[int, int], ho: int, h: int, c: int, batches: int,
                          *, fp32_acc: bool = True):
    """1D config of a head resize step A (1, 1, Ho, H) @ X (1, B, H, C), A reused per batch.

    With the program the library picks, a batch-1 first operand is reused across the second's
    batches only when X and the result are DRAM-interleaved; this config (in1 multicast,
    batches not fused) takes them in L1 too (probed on 0.81.1; test_standin_agrees.py). Its
    rules: one block spans all of C (per_core_N = Ct), per_core_M <= Mt, in0_block_w divides
    Kt. The Ho rows of a batch are split so that the batches times the splits come near the
    grid's core count (a 16-batch step on 110 cores: 6 splits of Mt).
    """
    gx, gy = grid
    mt, kt, ct = -(-ho // 32), -(-h // 32), -(-c // 32)
    splits = max(1, min(mt, (gx * gy) // max(1, batches)))
    per_m = -(-mt // splits)
    sub_h, sub_w = _out_subblock(per_m, ct, fp32_acc)
    return ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(gx, gy), in0_block_w=_largest_divisor(kt, 4),
        out_subblock_h=sub_h, out_subblock_w=sub_w, per_core_M=per_m, per_core_N=ct,
        fuse_batch=False, fused_activation=None, mcast_in0=False)
