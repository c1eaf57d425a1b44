"""The p150 cost estimate (benchmarks/ttnn_estimate.py, devtools/ttnn/cost_model.py).

The cost model on hand-made op records (matmul cycles at a fidelity, a DRAM-bound eltwise, the
ViT-base calibration), and the whole estimate on the tiny DA3 engine through the real ttnn 0.81.1
library (side venv; a loud skip without Python 3.12, a failure in CI: conftest.py).
"""
import json
import math
import subprocess
import sys
from pathlib import Path

from devtools.ttnn import cost_model as cost

ROOT = Path(__file__).resolve().parents[2]


def t(shape, dtype='BFLOAT16', buffer='DRAM'):
    return {'shape': list(shape), 'padded': list(shape), 'dtype': dtype, 'buffer': buffer}


def test_matmul_cycles_scale_with_fidelity_and_cores():
    m, k, n = 1024, 4096, 2048
    rec = {'device_op': 'MatmulDeviceOperation', 'inputs': [t((1, m, k), buffer='L1'),
                                                            t((k, n), buffer='L1')],
           'outputs': [t((1, m, n), buffer='L1')], 'math_fidelity': 'HiFi2', 'cores': 100,
           'stack': ['tt_depth_ros/engines/ttnn/common.py:1 (__call__)',
                     'tt_depth_ros/engines/ttnn/layers/block.py:2 (mlp_step)']}
    c = cost.op_cost(rec, 130)
    cycles = 2 * m * k * n / (100 * 4096) * 2                  # HiFi2: two passes
    assert c.flops == 2 * m * k * n
    assert math.isclose(c.compute_s * cost.CLOCK_HZ, cycles)
    assert c.bound == 'compute' and c.kind == 'matmul' and c.group == 'MLP'
    hifi4 = cost.op_cost(dict(rec, math_fidelity='HiFi4', cores=None), 50)
    assert math.isclose(hifi4.compute_s, c.compute_s * 2 * 100 / 50)   # x2 passes, half cores


def test_compute_floor_bounds_every_layout():
    """The floor counts MACs x fidelity passes over the whole grid and nothing else.

    So it is below the estimate of the same ops however they are split or laid out.
    """
    m, k, n = 1376, 1024, 4096
    mm = {'device_op': 'MatmulDeviceOperation', 'inputs': [t((1, m, k)), t((k, n))],
          'outputs': [t((1, m, n))], 'math_fidelity': 'HiFi4', 'grid': [11, 10],
          'factory': 'MatmulMultiCoreReuseMcast2DProgramFactory', 'stack': []}
    add = {'device_op': 'BinaryNgDeviceOperation', 'inputs': [t((1, m, n))] * 2,
           'outputs': [t((1, m, n))], 'stack': []}
    lofi = dict(mm, math_fidelity='LoFi')
    floor = cost.compute_floor_s([mm, add, lofi], 110)
    assert math.isclose(floor * cost.CLOCK_HZ, 2 * m * k * n / (110 * 4096) * (4 + 1))
    est = cost.estimate([mm, add, lofi], 110)
    assert math.isclose(est['compute_floor']['ideal_ms'], floor * 1e3)
    assert est['compute_floor']['ideal_ms'] < est['total']['ideal_ms']
    assert math.isclose(est['compute_floor']['calibrated_ms'],
                        est['compute_floor']['ideal_ms'] / est['efficiency'])
    assert 'compute floor' in cost.format_table(est, 'x')


def test_dram_bound_eltwise_is_priced_by_bytes():
    x = t((1, 1, 1024, 1024))                                   # 2 MiB of bf16
    rec = {'device_op': 'BinaryNgDeviceOperation', 'inputs': [x, x], 'outputs': [x],
           'cores': 110, 'stack': ['tt_depth_ros/engines/ttnn/layers/block.py:1 (attention_step)']}
    c = cost.op_cost(rec, 110)
    assert c.flops == 0 and c.compute_s == 0 and c.bound == 'DRAM'
    assert c.dram_bytes == 3 * 1024 * 1024 * 2
    assert math.isclose(c.ideal_s, 3 * 2 ** 21 / 512e9)
    one = cost.op_cost(dict(rec, cores=1), 110)                 # one core cannot fill DRAM
    assert math.isclose(one.ideal_s, 3 * 2 ** 21 / (64 * cost.CLOCK_HZ))
    assert c.group == 'attention'
    bf8 = cost.op_cost(dict(rec, inputs=[t((32, 32), 'BFLOAT8_B')], outputs=[]), 110)
    assert bf8.dram_bytes == 1088                               # one bfloat8_b tile


def test_sdpa_and_groups():
    q = t((1, 16, 1376, 64))
    rec = {'device_op': 'SDPAOperation', 'inputs': [q, q, q], 'outputs': [q],
           'math_fidelity': 'HiFi4', 'cores': 110,
           'stack': ['tt_depth_ros/engines/ttnn/layers/attention.py:9 (__call__)']}
    c = cost.op_cost(rec, 110)
    assert c.flops == 4 * 16 * 1376 * 1376 * 64 and c.group == 'attention'
    # the library splits heads first: 16 heads x 6 q slices on 110 cores; 43 chunks of 32 rows
    # -> 8 on the busiest core, 96 cores busy
    grid = dict(rec, grid=[11, 10], chunks=[32, 32])
    cycles, used = cost.compute_cycles(grid, 110)
    assert used == 96 and math.isclose(cycles, 8 * 4 * 32 * 1376 * 64 / 4096)
    # every q chunk streams its head's K and V again; a head-broadcast mask moves once per head
    mask = t((1, 1, 1376, 1376))
    dram = cost.op_cost(dict(grid, inputs=[q, q, q, mask]), 110)
    head = 1376 * 64 * 2
    assert math.isclose(dram.dram_bytes, 16 * head * (1 + 43 + 43 + 1) + 16 * 1376 ** 2 * 2)
    assert dram.bound == 'DRAM'
    big = cost.op_cost(dict(grid, chunks=[256, 256], inputs=[t((1, 16, 768, 64))] * 3,
                            outputs=[t((1, 16, 768, 64))]), 110)
    assert big.cores == 48                              # 3 chunks x 16 heads: the old DUSt3R rule
    assert cost.group_of({'device_op': 'LayerNormDeviceOperation', 'stack': []}) == 'norm'
    assert cost.group_of({'device_op': 'PermuteDeviceOperation', 'stack': []}) == \
        'data movement'
    assert cost.group_of({'device_op': 'Conv2dDeviceOperation',
                          'stack': ['tt_depth_ros/engines/ttnn/layers/conv.py:1 (__call__)',
                                    'tt_depth_ros/engines/ttnn/layers/dpt_fusion.py:1 (x)']}) \
        == 'head'
    assert cost.group_of({'device_op': 'ReshapeViewDeviceOperation',   # data movement too
                          'stack': ['tt_depth_ros/engines/ttnn/layers/camera_resize.py:5 (c)',
                                    'tt_depth_ros/engines/ttnn/da3/model.py:1 (forward)']}) \
        == 'camera resize'


def test_calibration_on_the_vit_base_demo():
    cal = cost.calibration()
    # ViT-base per image (seq 197 padded to 224): 12 x (qkv + qk + pv + proj + ff1 + ff2) MACs
    s, d, f = 224, 768, 3072
    layer = s * d * 3 * d + 2 * s * s * d + s * d * d + 2 * s * d * f
    flops = 10 * 2 * (12 * layer + s * d * 1152) + 2 * 1984 * 1024 * 768
    assert math.isclose(cal.compute_only_s, flops / (120 * 4096 * 1.35e9), rel_tol=1e-9)
    assert math.isclose(cal.measured_s, 10 / 4300)
    assert 0.25 < cal.compute_only_fraction < 0.28                # the "~26 %"
    assert cal.ideal_s > cal.compute_only_s and 0.3 < cal.efficiency < 0.4
    est = cost.estimate(cost.vit_base_demo_records(), 120)
    assert math.isclose(est['total']['calibrated_ms'], cal.measured_s * 1e3)


def test_estimate_tiny_da3_through_the_real_library(side_python, tmp_path):
    out = tmp_path / 'estimate.json'
    r = subprocess.run([sys.executable, '-m', 'benchmarks.ttnn_estimate',
                        '--model', 'da3-tiny', '--size', '280x504', '--camera', '480x640',
                        '--json', str(out)],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    print(r.stdout[-6000:])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert 'ESTIMATE' in r.stdout and 'not a measurement' in r.stdout
    rep = json.loads(out.read_text())
    run = rep['runs'][0]
    assert run['status'] == 'completed' and run['problems'] == []
    est = run['sizes']['280x504']
    eff = est['efficiency']
    for g in ('attention', 'MLP', 'norm', 'head', 'data movement'):
        row = est['groups'][g]
        assert row['ops'] > 0 and row['ideal_ms'] > 0, (g, row)
        assert math.isclose(row['calibrated_ms'], row['ideal_ms'] / eff)
    per_op = est['per_op']
    assert len(per_op) == len(est['records']) == est['ops'] > 0
    # every program of the traced forward belongs to one recorded device op
    assert sum(rec['programs'] for rec in est['records']) == est['programs']
    assert math.isclose(sum(c['ideal_s'] for c in per_op) * 1e3, est['total']['ideal_ms'])
    for rec, c in zip(est['records'], per_op):   # the table is the records' own roofline
        again = cost.op_cost(rec, est['grid_cores'])
        assert math.isclose(again.ideal_s, c['ideal_s']) and again.group == c['group']
    kinds = {c['kind'] for c in per_op}
    assert {'matmul', 'sdpa', 'norm', 'data movement'} <= kinds, kinds
    mm = [(rec, c) for rec, c in zip(est['records'], per_op) if c['kind'] == 'matmul']
    assert all(rec['math_fidelity'] == 'HiFi4' and rec['fp32_acc'] for rec, _ in mm)
    assert est['groups']['camera resize']['ops'] == 0
    # a 640x480 camera frame resized on the device: its own group, priced, before the network
    cam = run['sizes']['camera 480x640']
    row = cam['groups']['camera resize']
    assert row['ops'] > 0 and 0 < row['ideal_ms'] < cam['total']['ideal_ms']
    cam_mm = [rec for rec, c in zip(cam['records'], cam['per_op'])
              if c['group'] == 'camera resize' and c['kind'] == 'matmul']
    assert len(cam_mm) == 5                 # vertical hi + lo, horizontal hi.hi, hi.lo, rest.hi
    assert all(rec['math_fidelity'] == 'HiFi4' and rec['fp32_acc'] for rec in cam_mm)


def test_quantized_matmul_on_the_recorded_grid():
    # 1376 x 1024 @ 1024 x 4096 on an 11x10 grid, 2D multicast: blocks of ceil(43/10) x
    # ceil(128/11) tiles per core, Kt = 32 tile products of 16 LoFi cycles each
    rec = {'device_op': 'MatmulDeviceOperation', 'factory': 'MatmulMultiCoreReuseMcast2D'
           'ProgramFactory', 'inputs': [t((1, 1, 1376, 1024)), t((1024, 4096))],
           'outputs': [t((1, 1, 1376, 4096))], 'math_fidelity': 'HiFi4', 'grid': [11, 10],
           'cores': None, 'stack': []}
    cycles, used = cost.compute_cycles(rec, 110)
    assert cycles == 5 * 12 * 32 * 16 and used == 9 * 11
    c = cost.op_cost(rec, 110)
    assert math.isclose(c.compute_s, cycles * 4 / 1.35e9) and c.bound == 'compute'


def _node(counter, kind, params=None, arguments=(), inputs=(), connections=()):
    return {'counter': counter, 'node_type': kind, 'params': params or {},
            'arguments': list(arguments), 'input_tensors': list(inputs),
            'connections': list(connections)}


def test_op_records_from_a_graph_like_the_library_records():
    """Node layout as ttnn 0.81.1 records a linear on the mock p150 (op_records.py doc)."""
    from devtools.ttnn.dryrun import op_records
    mem = ('MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED,buffer_type='
           'BufferType::DRAM,shard_spec=std::nullopt)')

    def tensor(c, shape, dtype='BFLOAT16'):
        return _node(c, 'tensor', {'shape': f'Shape({shape})', 'dtype': f'DataType::{dtype}',
                                   'layout': 'Layout::TILE', 'memory_config': mem})
    attrs = ('MatmulParams(<variant>, 1, ' + mem + ', DataType::BFLOAT16, ComputeKernelConfig('
             'math_fidelity=HiFi4,math_approx_mode=0,fp32_dest_acc_en=1,packer_l1_acc=1))')
    grid = '[{"end":{"x":10,"y":9},"start":{"x":0,"y":0}}]'
    graph = [_node(0, 'capture_start'),
             _node(1, 'function_start', {'name': 'MatmulDeviceOperation',
                                         'program_cache_hit': True, 'program_factory_type':
                                         'ttnn::prim::MatmulMultiCoreReuseMcast2DProgramFactory'},
                   [attrs, '{Tensor(...)}'], inputs=[2, 4]),
             tensor(2, [1, 1, 200, 512]), _node(3, 'buffer', {'size': 229376}, connections=[2]),
             tensor(4, [512, 1024], 'BFLOAT8_B'),
             _node(5, 'buffer', {'size': 557056}, connections=[4]),
             _node(6, 'function_start', {'name': 'tt::tt_metal::create_device_tensor'}),
             _node(7, 'buffer', {'size': 458752}, connections=[9]),
             _node(8, 'function_end', {'name': 'tt::tt_metal::create_device_tensor'}),
             tensor(9, [1, 1, 200, 1024]),
             _node(10, 'program_execution', {'worker_core_ranges': grid}),
             _node(11, 'function_end', {'name': 'MatmulDeviceOperation'}, connections=[9]),
             _node(12, 'capture_end')]
    recs = op_records.extract(graph, 'ttnn.linear', ['engines/ttnn/common.py:1 (__call__)'])
    assert len(recs) == 1
    r = recs[0]
    assert r['device_op'] == 'MatmulDeviceOperation' and r['programs'] == 1
    assert r['factory'] == 'MatmulMultiCoreReuseMcast2DProgramFactory'
    assert r['math_fidelity'] == 'HiFi4' and r['fp32_acc'] is True and r['grid'] == [11, 10]
    assert [i['bytes'] for i in r['inputs']] == [229376, 557056]
    assert r['inputs'][0]['padded'] == [1, 1, 224, 512] and r['inputs'][1]['dtype'] == 'BFLOAT8_B'
    assert r['outputs'][0]['shape'] == [1, 1, 200, 1024] and r['outputs'][0]['buffer'] == 'DRAM'
    assert op_records.range_cores('{[0-0 - 12-9], [0-10 - 1-10]}') == 132
