"""Per-class device-time prices of one op, each founded on a published Blackhole measurement.

The classes and what founds them (figures in blackhole_figures.py, sources in
docs/ttnn-estimate.md "Sources"):
- matmul: a three-parameter kernel model per table series (config, dtype, fidelity), FITTED to
  the P150 GEMM tables of tt-metal's GEMM_FLOPS.md (11x10 rows; the 13x10 rows are held out):
      t = t0 + max(W * cycles_per_tile / (clock * eta), (pm + pn) * Kt * tile_bytes / rate)
  W = the busiest core's tile products (pm x pn output tiles, Kt deep), pm + pn the in0 / in1
  tile blocks it reads per K step: a fixed program cost, a compute term at efficiency eta and a
  block-read term, whichever binds. 'tuned' (in0 in L1) and 'oob' (in0 in DRAM, auto config).
- sdpa: t = t0 + q_chunks * u0 + k_iterations * c + products + scores * s on SDPA's busiest
  core, FITTED to the pplx-embed SDPA measurements (9 calls): c from the pair of rows that differ
  in the K chunk alone (scaled with the Q chunk x head width it rescales), the QK^T / PV products
  at the tuned table efficiency of their fidelity, t0, u0 and s by least squares.
- conv: the matmul model of the conv's own matmul (its activations are local shards, only its
  weights stream in), its variable part at kappa = the ResNet-50 demo's measured network
  throughput (fraction of the LoFi peak) / the LoFi bfloat8_b table efficiency: a conv runs at
  kappa of a matmul of the same work.
- norm, rope, eltwise and data movement: bytes at the measured DRAM rate (344 GB/s, per-tile
  readers 17.4 B/cycle a core), L1 operands at 64 B/cycle a core (no published L1 figure).
- every program: a fixed cost (the GEMM fit's median t0; no other class publishes one) and, in a
  trace, a dispatch gap = the measured 16 us in-trace launch floor less that fixed cost.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from devtools.ttnn import blackhole_figures as fig
from tt_depth_ros.engines.ttnn.config import sdpa_split as library_sdpa_split

CLOCK_HZ = fig.CLOCK_HZ
TILE_BYTES = {'BFLOAT16': 2048.0, 'FLOAT32': 4096.0, 'BFLOAT8_B': 1088.0, 'BFLOAT4_B': 576.0}
L1_BYTES_PER_CYCLE = 64          # per core (assumption: one NoC flit a cycle; no measured figure)
FIT_GRID = (11, 10)              # the GEMM rows the matmul model is fitted on (13x10: held out)
SERIES_DTYPES = ('BFLOAT16', 'BFLOAT8_B', 'BFLOAT4_B')


@dataclass(frozen=True)
class MatmulFit:
    """Kernel model of one GEMM-table series: t0 [s], eta, rate [bytes/s of block reads a core]."""

    config: str
    dtype: str
    fidelity: str
    t0: float
    eta: float
    rate: float
    rows: int                    # table rows it was fitted on


def _tiles(n: float) -> int:
    return -(-int(n) // 32)


def gemm_block(mt: int, nt: int, grid: tuple[int, int]) -> tuple[int, int]:
    """(pm, pn): output tiles of a 2D-multicast matmul's busiest core (M over y, N over x)."""
    return -(-mt // grid[1]), -(-nt // grid[0])


def matmul_kernel_s(fit: MatmulFit, pm: int, pn: int, kt: int, fidelity: str) -> float:
    """The fitted kernel time of a pm x pn output block Kt deep at `fidelity`."""
    compute = pm * pn * kt * fig.CYCLES_PER_TILE[fidelity] / (CLOCK_HZ * fit.eta)
    reads = (pm + pn) * kt * TILE_BYTES[fit.dtype] / fit.rate
    return fit.t0 + max(compute, reads)


def _row_features(rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w, r, y = [], [], []
    for row in rows:
        pm, pn = gemm_block(row.m // 32, row.n // 32, row.grid)
        w.append(pm * pn * (row.k // 32) * fig.CYCLES_PER_TILE[row.fidelity] / CLOCK_HZ)
        r.append((pm + pn) * (row.k // 32) * TILE_BYTES[row.dtype])
        y.append(row.device_s)
    return np.array(w), np.array(r), np.array(y)


def _fit_series(rows) -> tuple[float, float, float]:
    """(t0, eta, rate) minimising the squared log error over `rows` (grid search, refined).

    Deterministic and numpy-only: an 11-point grid over t0 in [0, 20] us, eta in [0.3, 1], rate
    in [1, 300] GB/s (log), then eleven refinements around the best point, each to half the span.
    """
    w, r, y = _row_features(rows)
    lo = np.array([0.0, 0.3, math.log(1e9)])
    hi = np.array([20e-6, 1.0, math.log(300e9)])
    best = None
    for _ in range(12):
        axes = [np.linspace(lo[i], hi[i], 11) for i in range(3)]
        t0, eta, lr = np.meshgrid(*axes, indexing='ij')
        t0, eta, rate = t0[..., None], eta[..., None], np.exp(lr)[..., None]
        model = t0 + np.maximum(w / eta, r / rate)
        err = (np.log(model / y) ** 2).sum(axis=-1)
        i = np.unravel_index(np.argmin(err), err.shape)
        best = np.array([axes[0][i[0]], axes[1][i[1]], axes[2][i[2]]])
        span = (hi - lo) / 4
        lo, hi = np.maximum(best - span, [0.0, 0.3, math.log(1e9)]), \
            np.minimum(best + span, [20e-6, 1.0, math.log(300e9)])
    return float(best[0]), float(best[1]), float(math.exp(best[2]))


@lru_cache(maxsize=1)
def matmul_fits() -> dict[tuple[str, str, str], MatmulFit]:
    """{(config, dtype, fidelity): MatmulFit} fitted on the traced 11x10 rows of each series."""
    groups: dict = {}
    for row in fig.gemm_rows():
        if row.trace and row.grid == FIT_GRID:
            groups.setdefault((row.config, row.dtype, row.fidelity), []).append(row)
    return {key: MatmulFit(*key, *_fit_series(rows), len(rows))
            for key, rows in sorted(groups.items())}


def matmul_fit(config: str, dtype: str, fidelity: str) -> MatmulFit:
    """The series that prices a matmul; the nearest measured one where the tables have none.

    dtype: the weights' (float32 operands run as bf16 series: the FPU reads them as TF32);
    a fidelity the series lacks takes the nearest measured fidelity of the same config and dtype
    (higher on a tie: HiFi3 -> HiFi4), its compute term at the requested fidelity's cycles; a
    dtype the config lacks (oob bf16 at HiFi4, oob bfloat8_b at HiFi2) likewise the nearest.
    """
    fits = matmul_fits()
    dtype = dtype if dtype in SERIES_DTYPES else 'BFLOAT16'
    if (config, dtype, fidelity) in fits:
        return fits[(config, dtype, fidelity)]
    passes = fig.CYCLES_PER_TILE[fidelity]
    same = [k for k in fits if k[0] == config and k[1] == dtype] or \
        [k for k in fits if k[0] == config]
    key = min(same, key=lambda k: (k[1] != dtype, abs(fig.CYCLES_PER_TILE[k[2]] - passes),
                                   -fig.CYCLES_PER_TILE[k[2]]))
    return fits[key]


def gemm_row_time_s(row: fig.GemmRow) -> float:
    """The matmul model's kernel time for one GEMM-table row (its own series)."""
    fit = matmul_fit(row.config, row.dtype, row.fidelity)
    pm, pn = gemm_block(row.m // 32, row.n // 32, row.grid)
    return matmul_kernel_s(fit, pm, pn, row.k // 32, row.fidelity)


@lru_cache(maxsize=1)
def program_fixed_s() -> float:
    """Fixed cost of one program: the median t0 of the GEMM fits (no other op publishes one)."""
    return float(np.median([f.t0 for f in matmul_fits().values()]))


def dispatch_gap_s() -> float:
    """In-trace time between programs: the measured 16 us launch floor less a program's t0."""
    return max(0.0, fig.LAUNCH_FLOOR_S.value - program_fixed_s())


# --- SDPA -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SdpaFit:
    """SDPA kernel model (module doc), in seconds.

    Per op, per Q chunk, per K iteration at the reference rescale width (REF_RESCALE), per
    score element.
    """

    t0: float
    per_q_chunk: float
    per_k_iteration: float
    per_score: float


REF_RESCALE = 256 * 128


def sdpa_fpu_eta(fidelity: str) -> float:
    """Efficiency of SDPA's QK^T and PV products: the tuned table series' of that fidelity.

    The pplx measurements all have 128-wide heads, so their products and their softmax (per
    score) cannot be told apart; the products are priced like the tables' matmuls and the
    softmax takes the rest, per score element (which keeps its cost at 64-wide heads).
    """
    return matmul_fit('tuned', 'BFLOAT8_B' if fidelity == 'LoFi' else 'BFLOAT16', fidelity).eta


def sdpa_work(batch: int, heads: int, seq_q: int, seq_k: int, dh: int, q_chunk: int,
              k_chunk: int, cores: int, fidelity: str) -> dict:
    """The busiest core's Q chunks, K iterations, product seconds and score elements."""
    busy, used = library_sdpa_split(batch, heads, -(-seq_q // q_chunk), cores)
    k_chunks = -(-seq_k // k_chunk)
    sk = k_chunks * k_chunk
    fpu = busy * 4.0 * q_chunk * sk * dh / 4096 * fig.CYCLES_PER_TILE[fidelity] / 16 / CLOCK_HZ
    return {'q_chunks': busy, 'iterations': busy * k_chunks,
            'fpu_s': fpu / sdpa_fpu_eta(fidelity), 'scores': busy * q_chunk * sk,
            'rescale': q_chunk * dh / REF_RESCALE, 'cores': used}


def sdpa_kernel_s(fit: SdpaFit, work: dict) -> float:
    return (fit.t0 + work['q_chunks'] * fit.per_q_chunk
            + work['iterations'] * fit.per_k_iteration * work['rescale']
            + work['fpu_s'] + work['scores'] * fit.per_score)


def _point_work(p: fig.SdpaPoint) -> dict:
    return sdpa_work(p.batch, p.heads, p.seq, p.seq, p.dh, p.q_chunk, p.k_chunk, p.cores,
                     p.fidelity)


@lru_cache(maxsize=1)
def sdpa_fit() -> SdpaFit:
    """Least squares (relative error) of t0, per Q chunk and per score on SDPA_PPLX.

    The per-K-iteration cost is fixed first from the one pair of rows that differ in the K chunk
    alone, the products' time from the tables (sdpa_fpu_eta): the rest is linear.
    """
    a, b = fig.SDPA_ITER_PAIR
    wa, wb = _point_work(a), _point_work(b)
    per_iter = (b.measured_s - a.measured_s) / (wb['iterations'] - wa['iterations'])
    rows, rhs = [], []
    for p in fig.SDPA_PPLX:
        w = _point_work(p)
        rest = p.measured_s - w['iterations'] * per_iter * w['rescale'] - w['fpu_s']
        rows.append(np.array([1.0, w['q_chunks'], w['scores']]) / p.measured_s)
        rhs.append(rest / p.measured_s)
    t0, per_q, per_score = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)[0]
    return SdpaFit(float(t0), float(per_q), float(per_iter), float(per_score))


# --- conv -------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def conv_kappa() -> float:
    """A conv's efficiency relative to a matmul of the same work, from ResNet-50 on a p150.

    The demo's measured device-kernel throughput as a fraction of the 110-core LoFi peak, over
    the LoFi bfloat8_b tuned table series' asymptotic efficiency (its fitted eta). The network
    figure counts every op of ResNet-50, so this prices convs on the slow side.
    """
    flops = fig.RESNET50_SAMPLES_PER_S.value * fig.RESNET50_MACS_PER_IMAGE * 2
    peak = 110 * 4096 * CLOCK_HZ
    return flops / peak / matmul_fit('tuned', 'BFLOAT8_B', 'LoFi').eta


def conv_kernel_s(fit: MatmulFit, pm: int, pn: int, kt: int, fidelity: str) -> float:
    """A conv's kernel time: its matmul's compute and weight-read terms at conv_kappa()."""
    compute = pm * pn * kt * fig.CYCLES_PER_TILE[fidelity] / (CLOCK_HZ * fit.eta)
    reads = pn * kt * TILE_BYTES[fit.dtype] / fit.rate
    return fit.t0 + max(compute, reads) / conv_kappa()


# --- bytes ------------------------------------------------------------------------------------

def dram_rate(cores: int) -> float:
    """Bytes/s an op's readers get from DRAM: the measured 344 GB/s, per-tile readers capped."""
    return min(fig.DRAM_BYTES_PER_S.value,
               cores * fig.DRAM_BYTES_PER_CYCLE_PER_CORE.value * CLOCK_HZ)


def l1_rate(cores: int) -> float:
    return cores * L1_BYTES_PER_CYCLE * CLOCK_HZ


def bytes_s(dram_bytes: float, l1_bytes: float, cores: int) -> float:
    """Time of an op bound by its bytes: DRAM and L1 traffic, whichever is longer."""
    return max(dram_bytes / dram_rate(cores), l1_bytes / l1_rate(cores))
