"""What the REAL ttnn 0.81.1 (mock p150, 11x10) accepts of the structural levers' ops, case by case.

    .venv/bin/python -m devtools.ttnn.dryrun.probe_levers [--grid 11x10|12x10|13x10]

Each case builds zero tensors of the engine's shapes (DA3-L 518x518: 1370 tokens, padded 1376;
DUSt3R-L: two views of 768) and calls one op through the bridge (bridge.py); it prints OK with
the output's shape, or FAIL with the library's first TT_FATAL / TT_THROW line and the message
after it. The cases that fail are the evidence of docs/ttnn-levers.md: the library's limits
each lever's configuration keeps inside. Exit status 0 when every case came out as that page
says (`expect`), else 1.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

from devtools.ttnn.dryrun import environment
from devtools.ttnn.dryrun.bridge import Bridge
from devtools.ttnn.dryrun.driver import mock_descriptor


def _first_error(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    fatal = [i for i, ln in enumerate(lines) if 'TT_FATAL' in ln or 'TT_THROW' in ln]
    if not fatal:
        return lines[-1][:300] if lines else type(e).__name__
    i = fatal[0]
    detail = [ln for ln in lines[i + 1:i + 8] if not ln.startswith(('---', 'backtrace', '/'))
              and 'info:' not in ln]
    return ' | '.join([lines[i].split('/')[-1]] + detail[:2])[:400]


def cases(ttnn, dev):
    """[(label, expect 'OK'/'FAIL', thunk)] (module doc)."""
    l1, dram = ttnn.L1_MEMORY_CONFIG, ttnn.DRAM_MEMORY_CONFIG
    grid = dev.compute_with_storage_grid_size()

    def up(shape, dtype='bfloat16', mem=dram):
        return ttnn.from_torch(torch.zeros(shape), dtype=getattr(ttnn, dtype),
                               layout=ttnn.TILE_LAYOUT, device=dev, memory_config=mem)

    def ck(fid='HiFi3', fp32=True):
        return ttnn.WormholeComputeKernelConfig(math_fidelity=getattr(ttnn.MathFidelity, fid),
                                                math_approx_mode=False, fp32_dest_acc_en=fp32,
                                                packer_l1_acc=fp32)

    def mm_cfg(m, n, sub=(1, 4)):
        return ttnn.MinimalMatmulConfig(M_block_size=m, K_block_size=4, N_block_size=n,
                                        subblock_h=sub[0], subblock_w=sub[1],
                                        compute_with_storage_grid_size=grid)

    def dit(x_dt, w_dt, res_dt, cfg=None, rows=1376):
        kw = {'config': cfg} if cfg is not None else {}
        return lambda: ttnn.experimental.dit_minimal_matmul_addcmul_fused(
            up((1, rows, 1024), x_dt, l1), up((1024, 1024), w_dt), 1.0,
            up((1, rows, 1024), res_dt, l1), up((1, 1024), 'float32'), up((1, 1024), w_dt),
            memory_config=l1, dtype=getattr(ttnn, res_dt), compute_kernel_config=ck(), **kw)

    def shard(gx, gy, sh, sw, col):
        crs = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0),
                                                ttnn.CoreCoord(gx - 1, gy - 1))])
        o = ttnn.ShardOrientation.COL_MAJOR if col else ttnn.ShardOrientation.ROW_MAJOR
        return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                                 ttnn.ShardSpec(crs, [sh, sw], o))

    def sharded_ln(gx, gy, per_m, col):
        mc = shard(gx, gy, per_m * 32, 128, col)
        cfg = ttnn.LayerNormShardedMultiCoreProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(gx, gy), subblock_w=4, block_h=per_m,
            block_w=4, inplace=False)
        w = up((1, 1024))
        return lambda: ttnn.layer_norm(ttnn.to_memory_config(up((1, 1376, 1024), mem=l1), mc),
                                       epsilon=1e-6, weight=w, bias=w, memory_config=mc,
                                       program_config=cfg)

    def sdpa(s_logical, qc, kc, mask=False):
        def run():
            q = up((1, 16, 1376, 64), mem=l1)
            k = ttnn.slice(up((1, 16, 1376, 64), mem=l1), [0, 0, 0, 0], [1, 16, s_logical, 64],
                           [1, 1, 1, 1])
            pc = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=grid, q_chunk_size=qc,
                                        k_chunk_size=kc)
            m = up((1, 1, 1376, s_logical), 'bfloat4_b') if mask else None
            return ttnn.transformer.scaled_dot_product_attention(
                q, k, k, attn_mask=m, is_causal=False, scale=0.125, program_config=pc,
                memory_config=l1, compute_kernel_config=ck('HiFi2'))
        return run

    def rope(dt):
        return lambda: ttnn.experimental.rotary_embedding_llama(
            up((2, 16, 768, 64), dt, l1), up((1, 1, 768, 64), dt), up((1, 1, 768, 64), dt),
            up((1, 1, 32, 32), dt), is_decode_mode=False, memory_config=l1,
            compute_kernel_config=ck('HiFi4'))

    return [
        ('fused residual: bf16 residual, bf16 weights', 'OK', dit('bfloat16', 'bfloat16',
                                                                  'bfloat16')),
        ('fused residual: float32 residual, bf16 weights', 'FAIL',
         dit('bfloat16', 'bfloat16', 'float32')),
        ('fused residual: float32 residual and weights, default blocks', 'FAIL',
         dit('bfloat16', 'float32', 'float32')),
        ('fused residual: float32 residual and weights, 4x4x4 blocks', 'OK',
         dit('bfloat16', 'float32', 'float32', mm_cfg(4, 4))),
        ('block shards: LayerNorm, 43 tile rows as 9 shards on 10 core rows', 'FAIL',
         sharded_ln(8, 10, 5, False)),
        ('block shards: LayerNorm, 43 tile rows as 11 shards on 11 core columns', 'OK',
         sharded_ln(min(11, grid.x), 8, 4, True)),
        ('mask-free SDPA: 1370 keys, no mask, q128/k256', 'OK', sdpa(1370, 128, 256)),
        ('mask-free SDPA: 1370 keys, no mask, q96/k224 (chunks need not divide)', 'OK',
         sdpa(1370, 96, 224)),
        ('mask-free SDPA: reshape 1376 -> 1370 rows (a view)', 'FAIL',
         lambda: ttnn.reshape(up((1, 16, 1376, 64)), (1, 16, 1370, 64))),
        ('RoPE kernel: bf16', 'OK', rope('bfloat16')),
        ('RoPE kernel: float32', 'FAIL', rope('float32')),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--grid', choices=('11x10', '12x10', '13x10'), default='11x10')
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix='tt_depth_ros_probe_'))
    env = environment.side_env()
    env['TT_METAL_MOCK_CLUSTER_DESC_PATH'] = str(mock_descriptor(a.grid, work))
    b = Bridge(str(environment.ensure_dryrun_venv()), env, work / 'real_ttnn.log')
    ttnn = b.module
    dev = ttnn.open_device(device_id=0, l1_small_size=32768, trace_region_size=1 << 26)
    g = dev.compute_with_storage_grid_size()
    print(f'real ttnn 0.81.1, mock p150, grid {g.x}x{g.y}')
    wrong = 0
    try:
        for label, expect, thunk in cases(ttnn, dev):
            try:
                out = thunk()
                got, what = 'OK', list(out.shape)
            except Exception as e:       # the library's verdict, reported, not raised
                got, what = 'FAIL', _first_error(e)
            wrong += got != expect
            print(f'{got:4} {label}: {what}' + ('' if got == expect else
                                                 f'   <-- expected {expect}'))
    finally:
        ttnn.close_device(dev)
        b.close()
    return 1 if wrong else 0


if __name__ == '__main__':
    sys.exit(main())
