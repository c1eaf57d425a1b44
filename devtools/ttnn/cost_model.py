"""p150 device-time ESTIMATES for device-op records (pure Python, no ttnn; never a measurement).

Input: one record per device operation of a forward, as devtools/ttnn/dryrun/op_records.py reads
them from the real ttnn 0.81.1 library's graph capture on a mock p150 (device operation, program
factory, tensor shapes / dtypes / layouts / memory configs, math fidelity, fp32 accumulation, the
cores of its circular buffers), or as devtools/ttnn/reference_designs builds them for a measured
port. Output, per op, per group and in total, three figures side by side
(docs/ttnn-estimate.md):
- roofline ('ideal_ms'): each op at the hardware's peak, no efficiency: the largest of its MACs
  at the recorded fidelity (2*M*K*N / (cores * 4096) cycles x fidelity passes, split over the
  recorded grid in whole tiles), its DRAM bytes at 512 GB/s (capped by 64 B/cycle a core) and its
  L1 bytes at 64 B/cycle a core. This and only this is a floor.
- estimate ('estimate_ms'): each op priced by its class from published Blackhole measurements
  (op_classes.py: matmul fitted to tt-metal's P150 GEMM tables, SDPA to measured SDPA calls,
  conv from ResNet-50, bytes at the measured DRAM rate), plus the in-trace dispatch gap per op;
  'kernel_ms' is the same without the gaps (a device-profiler kernel sum).
- single factor ('single_factor_ms'): the roofline / 0.335, the one efficiency of tt-metal's
  Blackhole ViT-base demo applied to every op (calibration()): the estimate this package printed
  before the per-class model; kept to show how far one factor is off.
Left out of all three: NoC contention, DRAM bank conflicts, SFPU cost of eltwise math, a lowered
AICLK under sustained load, host and PCIe time.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from devtools.ttnn import op_classes as oc
from devtools.ttnn.stages import STAGES, stage_of
from tt_depth_ros.engines.ttnn.config import sdpa_split as library_sdpa_split

CLOCK_HZ = 1.35e9                  # Blackhole AI clock
MULADDS_PER_CYCLE_LOFI = 4096      # tt-metal perf model: 2*M*K*N / (cores * 4096) cycles at LoFi
FIDELITY_PASSES = {'LoFi': 1, 'HiFi2': 2, 'HiFi3': 3, 'HiFi4': 4}
DRAM_BYTES_PER_S = 512e9           # p150 GDDR6 peak
NOC_BYTES_PER_CYCLE = 64           # per core: one 64 B NoC flit per cycle (assumption)
L1_BYTES_PER_CYCLE = 64            # per core, local L1 for sharded operands (assumption)
P150_GRID = (13, 10)               # unharvested compute grid with ETH dispatch; 12x10 on Tensix
# ttnn's default fidelity when a record names none: matmul and SDPA HiFi2 (bf16; the SDPA
# program's own default), conv HiFi4 (op_records.py; tt-metal's SDPA and conv2d op sources)
DEFAULT_FIDELITY = {'matmul': 'HiFi2', 'sdpa': 'HiFi2', 'conv': 'HiFi4', 'rope': 'HiFi4'}

# Bytes per element of each dtype (block floats: a 32x32 tile holds 1024 mantissas plus 64
# shared exponent bytes: bfloat8_b 1088 B per tile, bfloat4_b 576 B).
DTYPE_BYTES = {'BFLOAT16': 2.0, 'FLOAT32': 4.0, 'BFLOAT8_B': 1088 / 1024,
               'BFLOAT4_B': 576 / 1024, 'UINT8': 1.0, 'UINT16': 2.0, 'INT32': 4.0,
               'UINT32': 4.0}

GROUPS = ('attention', 'MLP', 'norm', 'head', 'data movement', 'camera resize', 'embed/other')

# Device-operation names (lower case, substrings) by what the hardware does.
_MATMUL = ('matmul',)
_SDPA = ('sdpa', 'scaleddotproduct', 'scaled_dot_product')
_CONV = ('conv2d', 'conv')
_NORM = ('layernorm', 'layer_norm', 'groupnorm', 'rmsnorm')
_ROPE = ('rotary',)
_DATA_MOVEMENT = ('reshape', 'view', 'permute', 'transpose', 'concat', 'slice', 'pad', 'tilize',
                  'untilize', 'typecast', 'copy', 'clone', 'reshard', 'sharded', 'move', 'fold',
                  'repeat', 'createqkvheads', 'create_qkv_heads', 'splitqueryvalue', 'concatheads',
                  'concatenate_heads', 'upsample', 'fill', 'split', 'to_layout', 'tolayout',
                  'to_memory_config', 'tomemoryconfig', 'nlp', 'halo')

# Engine source files whose ops form each group (the innermost matching frame of the call stack).
_HEAD_FILES = ('ttnn/da3/head.py', 'ttnn/dust3r/dpt_head.py', 'layers/dpt_neck.py',
               'layers/dpt_fusion.py', 'layers/dpt_output.py', 'layers/resize.py')
# (the CroCo decoder's cross-attention residual step is called from dust3r/decoder_block.py)
_ATTENTION_MARKS = ('layers/attention.py', 'layers/rope2d.py', '(attention_step)', '(_cross)',
                    'ttnn/dust3r/decoder_block.py')
_MLP_MARKS = ('(mlp_step)',)
# the upstream camera -> network resize traced before the network (every op of it, data movement
# included: it is the device's share of a stage the host no longer runs)
_CAMERA_FILES = ('layers/camera_resize.py',)


def op_kind(device_op: str) -> str:
    """'matmul', 'sdpa', 'conv', 'norm', 'rope', 'data movement' or 'eltwise' for a device op."""
    n = device_op.lower().replace('::', '_')
    if any(k in n for k in _SDPA):
        return 'sdpa'
    if any(k in n for k in _ROPE):
        return 'rope'
    if any(k in n for k in _MATMUL):
        return 'matmul'
    if any(k in n for k in _CONV) and 'convert' not in n:
        return 'conv'
    if any(k in n for k in _NORM):
        return 'norm'
    if any(k in n for k in _DATA_MOVEMENT):
        return 'data movement'
    return 'eltwise'


def group_of(rec: dict) -> str:
    """Op group of a record: its kind (norm, data movement) else its engine call stack."""
    kind = op_kind(rec['device_op'])
    stack = rec.get('stack') or []
    if rec.get('group') in GROUPS:           # a reference design's record names its group
        return rec['group']
    if any(f in frame for frame in stack for f in _CAMERA_FILES):
        return 'camera resize'
    if kind in ('norm', 'data movement'):
        return kind
    if any(f in frame for frame in stack for f in _HEAD_FILES):
        return 'head'
    for frame in stack:            # innermost first: the nearest block step decides
        if any(m in frame for m in _ATTENTION_MARKS):
            return 'attention'
        if any(m in frame for m in _MLP_MARKS):
            return 'MLP'
    return 'embed/other'


def tensor_bytes(t: dict) -> float:
    """Bytes a tensor occupies on device: its buffer's size when recorded, else from its shape."""
    if t.get('bytes'):
        return float(t['bytes'])
    shape = t.get('padded') or t['shape']
    return math.prod(int(v) for v in shape) * DTYPE_BYTES.get(str(t['dtype']).upper(), 2.0)


def _dims(t: dict) -> list[int]:
    return [int(v) for v in (t.get('padded') or t['shape'])]


def op_flops(rec: dict) -> float:
    """2*M*K*N of a matmul / conv (as a matmul over the prepared weights) or QK^T + PV of SDPA."""
    kind = op_kind(rec['device_op'])
    ins, outs = rec['inputs'], rec['outputs']
    if kind == 'sdpa':
        q, k = _dims(ins[0]), _dims(ins[1])
        batch_heads = math.prod(q[:-2])
        return 4.0 * batch_heads * q[-2] * k[-2] * q[-1]
    if kind in ('matmul', 'conv'):
        out = _dims(outs[0])
        m, n = math.prod(out[:-1]), out[-1]
        if kind == 'matmul':
            k = _dims(ins[0])[-1]
        else:       # conv: the weight operand is [1, 1, K = kh*kw*Cin (padded), Cout]
            k = _dims(rec['weight'])[-2] if rec.get('weight') else _dims(ins[1])[-2]
        return 2.0 * m * k * n
    return 0.0


@dataclass(frozen=True)
class OpCost:
    """The roofline of one device op (seconds; bytes; flops)."""

    group: str
    kind: str
    name: str
    cores: int
    fidelity: str | None
    flops: float
    dram_bytes: float
    l1_bytes: float
    compute_s: float
    dram_s: float
    l1_s: float

    @property
    def ideal_s(self) -> float:
        return max(self.compute_s, self.dram_s, self.l1_s)

    @property
    def bound(self) -> str:
        best = max(self.compute_s, self.dram_s, self.l1_s)
        if best <= 0:
            return 'none'
        return 'compute' if best == self.compute_s else 'DRAM' if best == self.dram_s else 'L1'


TILE_CYCLES_LOFI = 2 * 32 ** 3 / MULADDS_PER_CYCLE_LOFI   # one 32x32x32 tile product: 16


def _tiles(n: int) -> int:
    return -(-int(n) // 32)


def compute_cycles(rec: dict, grid_cores: int) -> tuple[float, int]:
    """(LoFi cycles of the busiest core, cores doing work) of a matmul / SDPA / conv record.

    With the compute grid recorded ('grid' [x, y]) the work is split the way the library's
    programs split it, in whole tiles: a 2D-multicast matmul gives each core a block of
    ceil(Mt / y) x ceil(Nt / x) output tiles, other matmuls and convs ceil(output tiles / cores),
    SDPA ceil(batch * heads * q chunks / cores) chunks of q_chunk x padded-Sk. Without a grid
    (hand-made records): 2*M*K*N / (cores * 4096), cores = the record's or `grid_cores`.
    """
    kind = op_kind(rec['device_op'])
    flops = op_flops(rec)
    grid = rec.get('grid')
    if not grid:
        cores = int(rec.get('cores') or grid_cores)
        return flops / (cores * MULADDS_PER_CYCLE_LOFI), cores
    gx, gy = int(grid[0]), int(grid[1])
    cores = int(rec.get('cores') or gx * gy)
    if kind == 'sdpa':
        q, k = _dims(rec['inputs'][0]), _dims(rec['inputs'][1])
        qc, kc = rec.get('chunks') or (32, 32)
        busy, used = sdpa_split(q, qc, cores)
        sk = -(-k[-2] // kc) * kc
        return busy * 4.0 * qc * sk * q[-1] / MULADDS_PER_CYCLE_LOFI, used
    out = _dims(rec['outputs'][0])
    kt = _tiles(flops / (2.0 * math.prod(out)))       # K in tiles (from 2*M*K*N)
    mt, nt = _tiles(math.prod(out[:-1])), _tiles(out[-1])
    if kind == 'matmul' and '2d' in str(rec.get('factory', '')).lower():
        pm, pn = -(-mt // gy), -(-nt // gx)
        used = -(-mt // pm) * -(-nt // pn)
        return pm * pn * kt * TILE_CYCLES_LOFI, used
    units = mt * nt
    busy = -(-units // cores)
    return busy * kt * TILE_CYCLES_LOFI, min(units, cores)


def sdpa_split(q: list[int], q_chunk: int, cores: int) -> tuple[int, int]:
    """(q chunks of the busiest core, cores used) of an SDPA with query dims `q` [.., B, H, S, dh].

    The library's split (batch, then heads, then q chunks) is written once, where the engine
    picks its chunks: tt_depth_ros.engines.ttnn.config.sdpa_split.
    """
    b, heads = math.prod(q[:-3]) if len(q) > 3 else 1, q[-3] if len(q) > 2 else 1
    return library_sdpa_split(b, heads, -(-q[-2] // q_chunk), cores)


def sdpa_reads(rec: dict) -> dict[int, float]:
    """How many times SDPA reads each input (by position) from where it lives.

    Q, K and V once: ttnn 0.81.1's SDPA forwards a head's K and V from core to core along a
    chain of the cores working on that head (SDPAProgramConfig.max_cores_per_head_batch;
    tt-metal docs/plans/sdpa_kv_chain_implementation_status.md), so every Q chunk after the
    first gets them over the NoC (sdpa_restream_bytes), not from DRAM. The DUSt3R port measured
    its encoder (24 SDPAs in 32-row chunks) at 21.05 ms, which per-chunk DRAM reads alone would
    exceed. A mask is read for every head and batch, even when it broadcasts over heads.
    """
    q = _dims(rec['inputs'][0])
    reads = {1: 1.0, 2: 1.0}
    if len(rec['inputs']) > 3:
        mask = _dims(rec['inputs'][3])
        reads[3] = math.prod(q[:-2]) / max(1, math.prod(mask[:-2]))
    return reads


def sdpa_restream_bytes(rec: dict) -> float:
    """K and V bytes SDPA moves core to core: once more for every Q chunk after the first."""
    q = _dims(rec['inputs'][0])
    qc = (rec.get('chunks') or (32, 32))[0]
    chunks = -(-q[-2] // qc)
    return (chunks - 1) * sum(tensor_bytes(t) for t in rec['inputs'][1:3])


def moved_tensors(rec: dict) -> list[tuple[dict, float]]:
    """(tensor, fraction of its bytes the op moves) for every tensor of a record.

    Every tensor once, whole (an output that is also an input, written in place, once), except
    for slices: a slice reads only its output's worth of its input, a slice-write (the
    DRAM-sliced conv path) writes only its input's worth into a larger output, so the larger
    side counts only as much as the smaller one holds; and SDPA, whose K, V and mask move as
    often as its reader streams them (sdpa_reads).
    """
    outs = list(rec['outputs'])
    out_ids = {t.get('id') for t in outs} - {None}
    ins = [t for t in rec['inputs'] if t.get('id') is None or t['id'] not in out_ids]
    if rec.get('weight'):
        ins.append(rec['weight'])
    pairs = [(t, 1.0) for t in ins + outs]
    if op_kind(rec['device_op']) == 'sdpa':
        reads = sdpa_reads(rec)
        pairs = [(t, reads.get(i, 1.0)) for i, t in enumerate(rec['inputs'])] + \
            [(t, 1.0) for t in outs]
    if 'slice' in rec['device_op'].lower() and ins and outs:
        b_in = sum(tensor_bytes(t) for t in ins)
        b_out = sum(tensor_bytes(t) for t in outs)
        if b_in > b_out > 0:
            pairs = [(t, b_out / b_in) for t in ins] + [(t, 1.0) for t in outs]
        elif b_out > b_in > 0:
            pairs = [(t, 1.0) for t in ins] + [(t, b_in / b_out) for t in outs]
    return pairs


def op_cost(rec: dict, grid_cores: int) -> OpCost:
    """Roofline of one record; `grid_cores` stands in when the record names no core count."""
    kind = op_kind(rec['device_op'])
    cores = int(rec.get('cores') or grid_cores)
    fid = rec.get('math_fidelity')
    flops = op_flops(rec)
    compute_s = 0.0
    if flops:
        fid = fid or DEFAULT_FIDELITY[kind]
        cycles, cores = compute_cycles(rec, grid_cores)
        compute_s = cycles * FIDELITY_PASSES[fid] / CLOCK_HZ
    dram = l1 = 0.0
    for t, share in moved_tensors(rec):
        where = str(t.get('buffer') or 'DRAM').upper()
        if where == 'DRAM':
            dram += tensor_bytes(t) * share
        elif where == 'L1':
            l1 += tensor_bytes(t) * share
    if kind == 'sdpa':
        l1 += sdpa_restream_bytes(rec)
    dram_rate = min(DRAM_BYTES_PER_S, cores * NOC_BYTES_PER_CYCLE * CLOCK_HZ)
    return OpCost(group_of(rec), kind, rec['device_op'], cores, fid if flops else None, flops,
                  dram, l1, compute_s, dram / dram_rate,
                  l1 / (cores * L1_BYTES_PER_CYCLE * CLOCK_HZ))


@dataclass(frozen=True)
class Calibration:
    """The efficiency factor and where it comes from (see calibration())."""

    efficiency: float              # model ideal / measured device-kernel time
    measured_s: float              # per batch
    ideal_s: float                 # the full model on the demo's op list
    compute_only_s: float          # its matmul roofline alone
    compute_only_fraction: float   # compute_only_s / measured_s (~26 % for the demo)
    source: str


# tt-metal models/demos/blackhole/vit (ViT-base patch16-224 on a p150): test_vit_device_perf.py
# expects 4,300 device-kernel samples/s at batch 10 ("AVG DEVICE KERNEL SAMPLES/S", 3 % margin);
# tt/ttnn_optimized_sharded_vit_bh.py: 12x10 grid, bfloat8_b activations and weights, matmuls with
# no compute kernel config (LoFi), block-sharded L1 linears, height-sharded attention (seq 197
# padded to 224), one DRAM round trip of the context layer per block (its workaround of
# tenstorrent/tt-metal issue #22640).
VIT_DEMO = dict(batch=10, samples_per_s=4300.0, grid=(12, 10), seq=224, hidden=768, mlp=3072,
                heads=12, layers=12, patches=196, patch_k=1024, classes=1152)


def _t(shape, dtype='BFLOAT8_B', buffer='L1'):
    return {'shape': list(shape), 'padded': list(shape), 'dtype': dtype, 'buffer': buffer}


def vit_base_demo_records(cfg: dict = VIT_DEMO) -> list[dict]:
    """The demo's device ops as records (what its configuration says each op reads and writes)."""
    b, s, d, f, h = cfg['batch'], cfg['seq'], cfg['hidden'], cfg['mlp'], cfg['heads']
    dh = d // h
    cores = cfg['grid'][0] * cfg['grid'][1]

    def rec(op, ins, outs, stack, fid='LoFi'):
        return {'device_op': op, 'inputs': ins, 'outputs': outs, 'stack': [stack],
                'math_fidelity': fid, 'cores': cores}

    def lin(k, n, stack, m=b * s):
        return rec('Matmul', [_t((m, k)), _t((k, n), buffer='DRAM')], [_t((m, n))], stack)

    x = _t((b, s, d))
    layer = [
        rec('LayerNorm', [x], [x], 'layer_norm'),
        lin(d, 3 * d, '(attention_step)'),
        rec('Reshard', [_t((b * s, 3 * d))], [_t((b * s, 3 * d))], 'reshard'),
        rec('CreateQKVHeads', [_t((b * s, 3 * d))], [_t((b, h, s, dh))] * 3, 'split'),
        rec('Matmul', [_t((b, h, s, dh)), _t((b, h, dh, s))], [_t((b, h, s, s))],
            '(attention_step)'),
        rec('BinaryMul', [_t((b, h, s, s))], [_t((b, h, s, s))], '(attention_step)'),
        rec('Softmax', [_t((b, h, s, s))], [_t((b, h, s, s))], '(attention_step)'),
        rec('Matmul', [_t((b, h, s, s)), _t((b, h, s, dh))], [_t((b, h, s, dh))],
            '(attention_step)'),
        rec('ConcatHeads', [_t((b, h, s, dh))], [x], 'concat'),
        rec('ShardedToInterleaved', [x], [_t((b, s, d), buffer='DRAM')], 'to_memory_config'),
        rec('InterleavedToSharded', [_t((b, s, d), buffer='DRAM')], [x], 'to_memory_config'),
        lin(d, d, '(attention_step)'),
        rec('BinaryAdd', [x, x], [x], '(attention_step)'),
        rec('LayerNorm', [x], [x], 'layer_norm'),
        lin(d, f, '(mlp_step)'),
        lin(f, d, '(mlp_step)'),
        rec('BinaryAdd', [x, x], [x], '(mlp_step)'),
    ]
    m_embed = -(-b * cfg['patches'] // 32) * 32
    out = [lin(cfg['patch_k'], d, 'embed', m=m_embed)]
    out += layer * cfg['layers']
    out.append(lin(d, cfg['classes'], 'classifier'))
    return out


def calibration(cfg: dict = VIT_DEMO) -> Calibration:
    """EFFICIENCY = the model's ideal time for the ViT demo / its measured device-kernel time.

    The same model on both sides: whatever it leaves out of the demo (SFPU math of softmax and
    GELU, per-op kernel overheads, NoC traffic of the multicast matmuls) is in the factor, so a
    design like the demo's (sharded L1, LoFi bf8 matmuls) gets the demo's measured speed. A design
    whose time goes elsewhere (DRAM-interleaved activations, HiFi4) is scaled by the same factor:
    that is the estimate's largest uncertainty.
    """
    grid = cfg['grid'][0] * cfg['grid'][1]
    costs = [op_cost(r, grid) for r in vit_base_demo_records(cfg)]
    ideal = sum(c.ideal_s for c in costs)
    compute = sum(c.compute_s for c in costs)
    measured = cfg['batch'] / cfg['samples_per_s']
    return Calibration(ideal / measured, measured, ideal, compute, compute / measured,
                       'tt-metal models/demos/blackhole/vit: 4,300 device-kernel samples/s, '
                       'batch 10, p150, 12x10 grid, bfloat8_b, LoFi, block-sharded L1')


def compute_floor_s(records: list[dict], grid_cores: int) -> float:
    """Seconds of every matmul / SDPA / conv MAC at its recorded fidelity, nothing else.

    The MACs are spread perfectly over all `grid_cores` cores: no layout, kernel or
    data-movement choice beats it, so a preset whose calibrated floor exceeds a target cannot
    reach it.
    """
    cycles = 0.0
    for r in records:
        flops = op_flops(r)
        if flops:
            fid = r.get('math_fidelity') or DEFAULT_FIDELITY[op_kind(r['device_op'])]
            cycles += flops / (grid_cores * MULADDS_PER_CYCLE_LOFI) * FIDELITY_PASSES[fid]
    return cycles / CLOCK_HZ


# --- the per-class estimate (op_classes.py) ----------------------------------------------------

@dataclass(frozen=True)
class ClassCost:
    """One op priced by its class: kernel seconds and which published figure priced it."""

    cls: str            # matmul, sdpa, conv, norm, rope, eltwise, data movement
    kernel_s: float     # device kernel time
    basis: str          # the model / series that priced it


def _block(mt: int, nt: int, rec: dict, cores: int) -> tuple[int, int]:
    """(pm, pn) output tiles of the busiest core.

    A sharded output's shard is that block; else the 2D split on a recorded grid (2D-multicast
    and minimal matmuls), else the op's tiles spread over its cores as a squarish block.
    """
    out = rec['outputs'][0]
    shard = out.get('shard_shape')
    if shard and str(out.get('memory_layout', '')).upper().endswith('SHARDED'):
        return _tiles(shard[0]), _tiles(shard[1])
    grid = rec.get('grid')
    factory = str(rec.get('factory', '')).lower() + rec['device_op'].lower()
    if grid and ('2d' in factory or 'minimal' in factory):
        return oc.gemm_block(mt, nt, (int(grid[0]), int(grid[1])))
    busy = -(-mt * nt // max(1, cores))
    pm = min(mt, max(1, math.isqrt(busy - 1) + 1))
    return pm, -(-busy // pm)


def _matmul_parts(rec: dict, cores: int) -> tuple[int, int, int]:
    out = _dims(rec['outputs'][0])
    mt, nt = _tiles(math.prod(out[:-1])), _tiles(out[-1])
    kt = _tiles(op_flops(rec) / (2.0 * math.prod(out)))
    pm, pn = _block(mt, nt, rec, cores)
    return pm, pn, kt


def _weight_dtype(rec: dict) -> str:
    w = rec.get('weight') or (rec['inputs'][1] if len(rec['inputs']) > 1 else rec['inputs'][0])
    return str(w.get('dtype', 'BFLOAT16')).upper()


def class_cost(rec: dict, cost: OpCost, grid_cores: int) -> ClassCost:
    """The per-class kernel time of one record (its roofline `cost` gives the bytes it moves).

    Never below the roofline; SDPA and the bytes-bound classes at least a program's fixed cost
    plus their bytes at the measured rates.
    """
    kind = op_kind(rec['device_op'])
    cores = int(rec.get('cores') or grid_cores)
    fixed = oc.program_fixed_s()
    moved = fixed + oc.bytes_s(cost.dram_bytes, cost.l1_bytes, cores)
    fid = rec.get('math_fidelity') or DEFAULT_FIDELITY.get(kind, 'HiFi4')
    if kind in ('matmul', 'conv') and cost.flops:
        config = 'tuned' if str(rec['inputs'][0].get('buffer') or 'DRAM').upper() == 'L1' \
            else 'oob'
        if kind == 'conv':
            config = 'tuned'        # conv2d shards its input itself
        fit = oc.matmul_fit(config, _weight_dtype(rec), fid)
        pm, pn, kt = _matmul_parts(rec, cores)
        # the GEMM tables' DRAM rows include their operands' DRAM traffic (faster than the
        # 344 GB/s of a generic reader): never below the roofline, else the fitted price
        if kind == 'matmul':
            t = oc.matmul_kernel_s(fit, pm, pn, kt, fid)
            return ClassCost(kind, max(t, cost.ideal_s),
                             f'GEMM {fit.config} {fit.dtype} {fit.fidelity}')
        # a conv's activations are its own L1 shards (halo'd): only its weights stream in
        t = oc.conv_kernel_s(fit, pm, pn, kt, fid)
        return ClassCost(kind, max(t, cost.ideal_s),
                         f'ResNet-50 x GEMM {fit.config} {fit.dtype} {fit.fidelity}')
    if kind == 'sdpa':
        q, k = _dims(rec['inputs'][0]), _dims(rec['inputs'][1])
        qc, kc = rec.get('chunks') or (32, 32)
        b = math.prod(q[:-3]) if len(q) > 3 else 1
        work = oc.sdpa_work(b, q[-3] if len(q) > 2 else 1, q[-2], k[-2], q[-1], qc, kc,
                            cores, fid)
        return ClassCost(kind, max(oc.sdpa_kernel_s(oc.sdpa_fit(), work), moved),
                         'pplx SDPA fit')
    if kind == 'norm':
        # two passes over the input (statistics, then normalise) and one write, at the measured
        # DRAM rate (the RMSNorm figure of blackhole_figures is the check of this)
        x = rec['inputs'][0]
        in_dram = str(x.get('buffer') or 'DRAM').upper() == 'DRAM'
        second = tensor_bytes(x)
        return ClassCost(kind, fixed + oc.bytes_s(cost.dram_bytes + (second if in_dram else 0),
                                                  cost.l1_bytes + (0 if in_dram else second),
                                                  cores),
                         'bytes x DRAM report')
    if kind == 'rope':
        # one x @ T tile product per tile at its fidelity, the rest its bytes
        tiles = math.prod(_dims(rec['inputs'][0])) / 1024
        fpu = -(-tiles // cores) * oc.fig.CYCLES_PER_TILE[fid] / oc.CLOCK_HZ
        return ClassCost(kind, max(moved, fixed + fpu), 'bytes x DRAM report')
    return ClassCost(kind, moved, 'bytes x DRAM report')


def op_estimate(rec: dict, grid_cores: int) -> tuple[OpCost, ClassCost]:
    """(roofline, per-class price) of one record."""
    cost = op_cost(rec, grid_cores)
    return cost, class_cost(rec, cost, grid_cores)


def regrid(records: list[dict], grid: tuple[int, int]) -> list[dict]:
    """The records as they would run on another compute grid (12x10: ETH dispatch).

    The mock p150 refuses ETH dispatch, so a 12x10 forward cannot be recorded; each 11x10 record
    is moved instead: an op that used the whole recorded grid (or names no core count) gets the
    whole new grid, its tiles split over it again (compute_cycles, _block, SDPA's split read
    the grid), so its per-core work shrinks as the grid grows. An op on a subset of the grid
    (a sharded tensor's cores) keeps its cores: its shards do not move by themselves.
    """
    out = []
    for r in records:
        old = r.get('grid')
        whole = (old[0] * old[1]) if old else None
        new = dict(r, grid=[grid[0], grid[1]])
        if r.get('cores') in (None, whole):
            new['cores'] = grid[0] * grid[1] if r.get('cores') else None
        out.append(new)
    return out


def estimate(records: list[dict], grid_cores: int, efficiency: float | None = None) -> dict:
    """Per-op, per-group, per-class and total figures of a forward's records (JSON-ready).

    efficiency: the single factor (None: calibration()'s, from the ViT-base demo).
    """
    cal = calibration()
    eff = cal.efficiency if efficiency is None else float(efficiency)
    gap = oc.dispatch_gap_s()
    pairs = [op_estimate(r, grid_cores) for r in records]
    stage = [stage_of(r) for r in records]

    def row(sel: list) -> dict:
        ideal = sum(c.ideal_s for c, _ in sel)
        kernel = sum(k.kernel_s for _, k in sel)
        by_bound = {}
        for c, _ in sel:
            by_bound[c.bound] = by_bound.get(c.bound, 0.0) + c.ideal_s
        return {'ops': len(sel), 'gflop': sum(c.flops for c, _ in sel) / 1e9,
                'dram_mb': sum(c.dram_bytes for c, _ in sel) / 1e6,
                'l1_mb': sum(c.l1_bytes for c, _ in sel) / 1e6,
                'ideal_ms': ideal * 1e3, 'kernel_ms': kernel * 1e3,
                'estimate_ms': (kernel + gap * len(sel)) * 1e3,
                'single_factor_ms': ideal / eff * 1e3,
                'bound': max(by_bound, key=by_bound.get) if by_bound else '-'}

    floor = compute_floor_s(records, grid_cores)
    return {'kind': 'ESTIMATE (from the real library\'s op decisions and published Blackhole '
                    'measurements; not a measurement)',
            'grid_cores': grid_cores, 'ops': len(pairs), 'single_factor': eff,
            'calibration': asdict(cal), 'dispatch_gap_us': gap * 1e6,
            'groups': {g: row([p for p in pairs if p[0].group == g]) for g in GROUPS},
            'classes': {k: row([p for p in pairs if p[1].cls == k])
                        for k in sorted({p[1].cls for p in pairs})},
            'stages': {s: row([p for p, st in zip(pairs, stage) if st == s])
                       for s in STAGES if s in stage},
            'total': row(pairs),
            'compute_floor': {'ideal_ms': floor * 1e3, 'single_factor_ms': floor / eff * 1e3},
            'per_op': [dict(asdict(c), ideal_s=c.ideal_s, bound=c.bound, cls=k.cls,
                            kernel_s=k.kernel_s, basis=k.basis) for c, k in pairs],
            'leaves_out': LEAVES_OUT}


LEAVES_OUT = ('NoC contention and DRAM bank conflicts; the SFPU cost of eltwise math; a lowered '
              'AICLK under sustained load; fp32 accumulation (the GEMM tables do not say); '
              'host, PCIe upload and readback time')


def format_table(est: dict, title: str) -> str:
    """Per group: the roofline, the per-class estimate and the single-factor figure."""
    lines = [f'{title}: ESTIMATE, not a measurement ({est["grid_cores"]} cores, {est["ops"]} '
             f'device ops, {est["dispatch_gap_us"]:.1f} us dispatch gap per op in a trace)',
             f'{"group":<14}{"ops":>5}{"GFLOP":>8}{"DRAM MB":>9}{"roofline":>10}'
             f'{"estimate":>10}{"kernels":>9}{"1-factor":>10}  roofline bound']
    for g, row in est['groups'].items():
        if row['ops']:
            lines.append(f'{g:<14}{row["ops"]:>5}{row["gflop"]:>8.1f}{row["dram_mb"]:>9.1f}'
                         f'{row["ideal_ms"]:>10.3f}{row["estimate_ms"]:>10.3f}'
                         f'{row["kernel_ms"]:>9.3f}{row["single_factor_ms"]:>10.3f}  '
                         f'{row["bound"]}')
    t = est['total']
    lines.append(f'{"total ms":<14}{est["ops"]:>5}{t["gflop"]:>8.1f}{t["dram_mb"]:>9.1f}'
                 f'{t["ideal_ms"]:>10.3f}{t["estimate_ms"]:>10.3f}{t["kernel_ms"]:>9.3f}'
                 f'{t["single_factor_ms"]:>10.3f}')
    lines.append('by class (estimate ms): ' + ', '.join(
        f'{k} {v["estimate_ms"]:.2f} ({v["ops"]})' for k, v in est['classes'].items()))
    lines.append('by stage (estimate ms; DA3\'s backbone is its encoder): ' + ', '.join(
        f'{k} {v["estimate_ms"]:.2f} ({v["ops"]})' for k, v in est['stages'].items()))
    f = est['compute_floor']
    lines.append(f'compute roofline alone (every MAC at its fidelity on all {est["grid_cores"]} '
                 f'cores, nothing else): {f["ideal_ms"]:.3f} ms')
    lines.append(f'left out: {est["leaves_out"]}')
    return '\n'.join(lines)
