"""Per-shape device configuration, derived in one commented place (as tt-metal model demos do).

Token rows are padded to a tile multiple (32) so every matmul/SDPA contracts over aligned dims;
padded keys are masked with an additive -1e9 mask tensor. SDPA chunks divide the padded length:
the K chunk is the largest of 256/128/64/32, the Q chunk per head count the one that leaves the
busiest core the fewest query rows (sdpa_q_chunk); the SDPA grid is the whole compute grid.
With the mask-free lever (Precision.mask_free_sdpa) the token stream keeps its real length as
its logical length instead: ttnn pads it to tiles implicitly, SDPA pads Q and K to its chunks
(which need not divide the length) and masks every key past the logical length in its kernel
(docs/ttnn-levers.md "Mask-free SDPA"), so no sequence needs a mask tensor; the K chunk is then
the ports' 256 shortened to cover the keys in as many chunks with the least padding
(mask_free_k_chunk).
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
    seq: int               # the token stream's length: tokens padded to a tile multiple, or
    #                        the tokens themselves when `logical` (SDPA masks in its kernel)
    k_chunk: int
    core_grid: tuple[int, int]
    logical: bool = False  # Precision.mask_free_sdpa: no padded token rows, no mask tensor

    @property
    def masked(self) -> bool:
        """True when SDPA needs a mask tensor over padded keys."""
        return self.seq != self.tokens

    @property
    def padded(self) -> int:
        """Tokens padded to a tile multiple: the rows each image's stream occupies in memory."""
        return pad_to(self.tokens)

    def q_chunk(self, heads: int, batch: int = 1) -> int:
        """SDPA's Q chunk for an attention of `heads` heads over this sequence."""
        return sdpa_q_chunk(self.seq, heads, batch, self.core_grid[0] * self.core_grid[1],
                            divides=not self.logical)


def shape_config(height: int, width: int, patch: int, prefix_tokens: int,
                 core_grid: tuple[int, int], logical: bool = False) -> ShapeConfig:
    """Derive every per-shape setting for an (height, width) input.

    Args:
        height: Network input rows (multiple of `patch`).
        width: Network input columns.
        patch: Patch size (14 DA3, 16 DUSt3R).
        prefix_tokens: Non-patch tokens (DA3: 1 cls; DUSt3R: 0).
        core_grid: Device compute grid (x, y): 12x10 with ETH dispatch, 11x10 otherwise.
        logical: the stream keeps the real token count (Precision.mask_free_sdpa).
    """
    if height % patch or width % patch or height <= 0 or width <= 0:
        raise ValueError(f'input {height}x{width} is not a positive multiple of the patch size '
                         f'{patch}; resize to the network grid first')
    gh, gw = height // patch, width // patch
    tokens = gh * gw + prefix_tokens
    if logical:
        return ShapeConfig(height, width, gh, gw, tokens, tokens, mask_free_k_chunk(tokens),
                           core_grid, logical=True)
    seq = pad_to(tokens)                      # e.g. 721 -> 736 (280x504), 1370 -> 1376 (518^2)
    chunk = next(c for c in SDPA_CHUNKS if seq % c == 0)
    return ShapeConfig(height, width, gh, gw, tokens, seq, chunk, core_grid)


SDPA_CHUNKS = (256, 128, 64, 32)
MASK_FREE_K_CHUNK = 256     # the measured ports' K chunk (docs/ttnn-levers.md "Mask-free SDPA")


def mask_free_k_chunk(tokens: int) -> int:
    """K chunk of a mask-free SDPA: as many chunks as 256 needs, each the shortest tile multiple.

    SDPA pads K to a chunk multiple and masks the rest, so the padding is work: 576 keys take
    3 chunks of 192 (not 256: 768), 1370 take 6 of 256 (6 x 224 = 1344 is short), 35 one of 64.
    """
    n = -(-tokens // MASK_FREE_K_CHUNK)
    return pad_to(-(-tokens // n))


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


def sdpa_q_chunk(seq: int, heads: int, batch: int, cores: int, divides: bool = True) -> int:
    """The Q chunk that leaves SDPA's busiest core the fewest query rows; the larger on a tie.

    Under sdpa_split, with one chunk size for every sequence, 16 heads of 768 tokens in 256-row
    chunks keep 48 of 110 cores busy with 256 rows each; 128-row chunks give 96 cores 128 rows.
    Every chunk streams its head's whole K and V again, so on a tie the larger chunk moves less.
    `divides=False` (mask-free SDPA): a chunk need not divide the sequence, SDPA pads the last
    one; no chunk longer than the tile-padded sequence.
    """
    def busiest_rows(chunk: int) -> int:
        return sdpa_split(batch, heads, -(-seq // chunk), cores)[0] * chunk

    fits = [c for c in SDPA_CHUNKS if (seq % c == 0 if divides else c <= pad_to(seq))]
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


def minimal_matmul_config(ttnn, grid: tuple[int, int], rows: int, k: int, n: int, *,
                          fp32_acc: bool = True):
    """Blocks of experimental.minimal_matmul (the fused residual matmul) over `grid`.

    The library splits the output as tt-metal's minimal_matmul_program_descriptor.cpp does: M
    over the grid's columns and N over its rows when M > N (else the other way round), each
    core a round_up(Mt, cores) / cores x ... tile block. The block is one core's whole share
    (at most 8 tiles a side), K streams 4 tiles at a time: its default 8 x 8 x 8 blocks with
    float32 weights asked for 2.0 MB of circular buffers on a 1.5 MB core (dry run,
    docs/ttnn-levers.md "Fused residual"). The subblock is the largest the destination holds
    (4 tiles with fp32 accumulation, else 8) that divides the block.
    """
    gx, gy = grid
    mt, nt = -(-rows // TILE), -(-n // TILE)
    m_cores, n_cores = (gx, gy) if rows > n else (gy, gx)
    m_blk = min(8, -(-mt // m_cores))
    n_blk = min(8, -(-nt // n_cores))
    limit = 4 if fp32_acc else 8
    sub = max(((h, w) for h in range(1, m_blk + 1) for w in range(1, n_blk + 1)
               if m_blk % h == 0 and n_blk % w == 0 and h * w <= limit),
              key=lambda hw: (hw[0] * hw[1], hw[1]))
    return ttnn.MinimalMatmulConfig(M_block_size=m_blk, K_block_size=4, N_block_size=n_blk,
                                    subblock_h=sub[0], subblock_w=sub[1],
                                    compute_with_storage_grid_size=ttnn.CoreCoord(gx, gy))


@dataclass(frozen=True)
class BlockShard:
    """Block sharding of a [rows, width] encoder stream over an (m_cores x n_cores) grid.

    M (token rows) goes along the grid's columns (x), the width along its rows (y): COL_MAJOR
    shards, transpose_mcast matmuls. n_cores is the largest divisor of the width's tiles that
    fits the grid's rows (ViT-L 32 tiles: 8 rows of 4), per_m = ceil(Mt / columns) and
    m_cores = ceil(Mt / per_m), so every core holds one shard, the last one short (DA3-L
    518x518: 43 tile rows as 11 x 4, the last 3): a sharded LayerNorm wants exactly one shard
    per core of its grid (shard_spec_validation.cpp "num_shards_h * num_shards_w == num_cores").
    """

    m_cores: int
    n_cores: int
    per_m: int             # tile rows per shard
    width_t: int           # the stream's width in tiles

    @property
    def grid(self) -> tuple[int, int]:
        return self.m_cores, self.n_cores

    def per_n(self, width: int) -> int:
        """Tiles per shard of a `width`-wide tensor on this grid."""
        return -(-pad_to(width) // TILE // self.n_cores)

    def memory_config(self, ttnn, width: int | None = None):
        """BLOCK_SHARDED L1 config of a [rows, width] tensor (width None: the stream's)."""
        wt = self.width_t if width is None else -(-width // TILE)
        crs = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0),
                                                ttnn.CoreCoord(self.m_cores - 1,
                                                               self.n_cores - 1))])
        spec = ttnn.ShardSpec(crs, [self.per_m * TILE, -(-wt // self.n_cores) * TILE],
                              ttnn.ShardOrientation.COL_MAJOR)
        return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                                 spec)

    def layer_norm_config(self, ttnn):
        block_w = self.width_t // self.n_cores
        return ttnn.LayerNormShardedMultiCoreProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(self.m_cores, self.n_cores),
            subblock_w=_largest_divisor(block_w, 4), block_h=self.per_m, block_w=block_w,
            inplace=False)

    def matmul_config(self, ttnn, k: int, n: int, *, sharded_in: bool, gelu: bool = False,
                      fp32_acc: bool = True):
        """2D-multicast config of a [rows, k] x [k, n] linear on the shard grid.

        A sharded in0 streams K one shard width at a time (in0_block_w = its tiles); an
        interleaved one 4 tiles (or the largest divisor of Kt below). The output block is a
        shard of an n-wide tensor (per_core_M x per_n(n)).
        """
        kt = -(-k // TILE)
        per_n = self.per_n(n)
        in0_w = -(-kt // self.n_cores) if sharded_in else _largest_divisor(kt, 4)
        sub_h, sub_w = _out_subblock(self.per_m, per_n, fp32_acc)
        return ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(self.m_cores, self.n_cores),
            in0_block_w=in0_w, out_subblock_h=sub_h, out_subblock_w=sub_w,
            per_core_M=self.per_m, per_core_N=per_n, transpose_mcast=True,
            fused_activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.GELU) if gelu else None,
            fuse_batch=True)


def block_shard(grid: tuple[int, int], rows: int, width: int) -> BlockShard:
    """The BlockShard of a [rows, width] stream (rows: tile rows of every image together)."""
    gx, gy = grid
    mt, wt = -(-rows // TILE), -(-width // TILE)
    n_cores = _largest_divisor(wt, gy)
    per_m = -(-mt // gx)
    return BlockShard(-(-mt // per_m), n_cores, per_m, wt)
