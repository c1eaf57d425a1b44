"""Published Blackhole p150 measurements the device-time estimate is founded on (data, cited).

Every figure here was measured on a p150 by someone else and published; docs/ttnn-estimate.md
"Sources" says where, and which part of the estimate each one founds. Nothing here is fitted:
the fits that turn these figures into op prices are in devtools/ttnn/op_classes.py.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CLOCK_HZ = 1.35e9               # Blackhole AICLK the reports convert cycles with (GEMM_FLOPS.md)
GEMM_CSV = Path(__file__).with_name('data') / 'gemm_p150.csv'
# Cycles per 32x32x32 tile product by fidelity (GEMM_FLOPS.md, section Utilization derivation
# formula; HiFi3 by the same rule: one 16-cycle pass per fidelity phase).
CYCLES_PER_TILE = {'LoFi': 16, 'HiFi2': 32, 'HiFi3': 48, 'HiFi4': 64}


@dataclass(frozen=True)
class GemmRow:
    """One row of the P150 GEMM tables (gemm_p150.csv), device-profiler time."""

    table: str          # 'tuned_11x10', 'oob_13x10', ...
    m: int
    k: int
    n: int
    grid: tuple[int, int]
    trace: bool
    dtype: str          # both operands: BFLOAT16, BFLOAT8_B, BFLOAT4_B
    fidelity: str
    in0_storage: str    # 'L1' (sharded) or 'DRAM'
    device_util: float  # ideal / device kernel time (fraction)
    device_s: float     # derived: ideal / device_util

    @property
    def config(self) -> str:
        """'tuned' (manual program config, in0/out L1-sharded while they fit) or 'oob' (auto)."""
        return self.table.split('_')[0]

    @property
    def cores(self) -> int:
        return self.grid[0] * self.grid[1]


@lru_cache(maxsize=1)
def gemm_rows() -> tuple[GemmRow, ...]:
    """Every P150 row of tt-metal's GEMM_FLOPS.md (data/gemm_p150.csv)."""
    lines = [ln for ln in GEMM_CSV.read_text().splitlines() if not ln.startswith('#')]
    out = []
    for r in csv.DictReader(lines):
        gx, gy = (int(v) for v in r['grid'].split('x'))
        out.append(GemmRow(r['table'], int(r['m']), int(r['k']), int(r['n']), (gx, gy),
                           r['use_trace'] == 'True', r['dtype'], r['math_fidelity'],
                           r['in0_storage'], float(r['device_util_pct']) / 100,
                           float(r['device_ns_derived']) * 1e-9))
    return tuple(out)


@dataclass(frozen=True)
class SdpaPoint:
    """One measured SDPA call (non-causal, Q [batch, heads, seq, dh], K/V seq x dh)."""

    batch: int
    heads: int
    seq: int
    dh: int
    q_chunk: int
    k_chunk: int
    cores: int
    fidelity: str
    measured_s: float


# tt-metal models/demos/blackhole/pplx_embed_4b, doc/github_issues/
# 03_sdpa_bs1_work_units_and_l1_footprint.md (stored 8203a65958df) and PERF_GUIDE.md section 9
# (0ba4bc7f8581): Qwen3-4B attention on one P150, Q [B,32,512,128], K/V [B,8,512,128] bfloat8_b
# in L1, LoFi, no fp32 accumulation, exp_approx; device-kernel time. The batched rows were taken
# under sustained load, when the board may have lowered AICLK to ~1.1-1.2 GHz (PERF_GUIDE §4).
SDPA_PPLX = (
    SdpaPoint(1, 32, 512, 128, 256, 256, 64, 'LoFi', 55.0e-6),
    SdpaPoint(1, 32, 512, 128, 256, 256, 80, 'LoFi', 55.4e-6),
    SdpaPoint(1, 32, 512, 128, 256, 128, 64, 'LoFi', 58.9e-6),
    SdpaPoint(1, 32, 512, 128, 256, 256, 120, 'LoFi', 67.6e-6),
    SdpaPoint(1, 32, 512, 128, 128, 128, 64, 'LoFi', 72.2e-6),
    SdpaPoint(1, 32, 512, 128, 512, 256, 64, 'LoFi', 79.1e-6),
    SdpaPoint(8, 32, 512, 128, 512, 512, 96, 'LoFi', 237.6e-6),
    SdpaPoint(16, 32, 512, 128, 512, 512, 96, 'LoFi', 454.5e-6),
    SdpaPoint(32, 32, 512, 128, 512, 512, 96, 'LoFi', 804.4e-6),
)
# The pair of rows that differ in the K chunk alone (256/256 vs 256/128 on 8x8): two more K
# iterations per Q chunk of 256 rows x 128 wide cost 3.9 us.
SDPA_ITER_PAIR = (SDPA_PPLX[0], SDPA_PPLX[2])


@dataclass(frozen=True)
class Figure:
    """One published measured figure and where it comes from."""

    value: float
    unit: str
    source: str


# DRAM: tt-metal tech_reports/Saturating_DRAM_bandwidth/Saturating_DRAM_bandwidth_Blackhole.md
# (stored 7ffb007c3963), table "Measured results": 128 MiB DRAM-interleaved read, 16 KB packets
# with a transaction-id double buffer from arbitrary cores: 344 GB/s (67 % of 512); per-tile
# reads with a barrier per block: 17.4 B/cycle per reader core.
DRAM_BYTES_PER_S = Figure(344e9, 'B/s', 'Saturating_DRAM_bandwidth_Blackhole.md, arbitrary '
                          'cores, 16 KB packets + transaction ids')
DRAM_BYTES_PER_CYCLE_PER_CORE = Figure(17.4, 'B/cycle', 'Saturating_DRAM_bandwidth_Blackhole.md, '
                                       'per-tile reads, barrier per block')
DRAM_PEAK_BYTES_PER_S = Figure(512e9, 'B/s', 'Saturating_DRAM_bandwidth_Blackhole.md, theoretical')

# RMSNorm: pplx_embed_4b doc/github_issues/04_rmsnorm_interleaved_bandwidth.md: [1,1,4096,2560]
# bfloat8_b DRAM-interleaved in and out, 120 cores, HiFi2 + fp32 accumulation: 90 us per call.
RMSNORM_SHAPE = (1, 1, 4096, 2560)
RMSNORM_DTYPE = 'BFLOAT8_B'
RMSNORM_S = Figure(90e-6, 's', '04_rmsnorm_interleaved_bandwidth.md, 120 cores')

# In-trace launch floor: changh95/tt-RF-DETR README.md (stored 0c4586095eef), step M1: decoder
# layers of ~55 launches on [1,300,256] tensors "purely launch-bound (~16 us in-trace launch
# floor on this p150a)".
LAUNCH_FLOOR_S = Figure(16e-6, 's', 'tt-RF-DETR README, step M1, p150a, in a metal trace')

# Convolution in a production CNN: tt-metal models/demos/blackhole/resnet50/tests/
# test_perf_device_resnet50.py (stored 0e61efb3d210): expected device-kernel throughput on a p150,
# batch 32: 12,000 samples/s; test_resnet50_performant.py: bfloat8_b activations and weights,
# LoFi. ResNet-50 at 224x224 is 4.09 GMAC per image (the standard count).
RESNET50_SAMPLES_PER_S = Figure(12000.0, 'samples/s', 'test_perf_device_resnet50.py, p150, '
                                'batch 32, bfloat8_b, LoFi')
RESNET50_MACS_PER_IMAGE = 4.09e9

# Host <-> device: tt-RF-DETR README, table Performance, host work per image: the upload of its
# persistent float32 [16, 101, 608] buffer (3.93 MB) takes 0.30 ms.
HOST_UPLOAD_BYTES_PER_S = Figure(16 * 101 * 608 * 4 / 0.30e-3, 'B/s',
                                 'tt-RF-DETR README, table Performance: 3.93 MB upload in 0.30 ms')
