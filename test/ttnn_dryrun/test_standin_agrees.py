"""The CPU stand-in and the REAL ttnn 0.81.1 (mock p150) agree on the dry run's buffer findings.

Which dtypes tilize, which reshapes are views, full-range slice identity, what `deallocate`
frees with force=True / force=False, where a batch-1 in0 may be reused across in1's batches.

The same case script runs against both (`observe`); only "is this memory free again" is asked
differently: on the real library by allocating a tensor of the same size (the allocator hands
out the freed address), on the stand-in through its buffer record.
"""
import sys

import pytest
import torch

from devtools.ttnn import standin
from devtools.ttnn.dryrun import environment

RESHAPES = [  # (from, to, layout)
    ((1, 1, 64, 64), (1, 64, 64), 'TILE'),        # leading dims only
    ((1, 1, 40, 64), (1, 40, 64), 'TILE'),        # unaligned rows, kept
    ((1, 1, 4096, 32), (1, 64, 64, 32), 'TILE'),  # rows split into whole tile rows
    ((1, 1, 2880, 32), (1, 40, 72, 32), 'TILE'),  # rows split across tile rows
    ((1, 1, 64, 64), (1, 1, 32, 128), 'TILE'),    # last dim changes
    ((1, 1, 64, 3), (1, 64, 3), 'ROW_MAJOR'),
]


def observe(ttnn, dev, memory_freed) -> dict:
    dram = ttnn.DRAM_MEMORY_CONFIG

    def up(shape, dtype=None, layout=None, values=None):
        v = torch.zeros(shape) if values is None else values
        return ttnn.from_torch(v, dtype=dtype or ttnn.bfloat16,
                               layout=layout or ttnn.TILE_LAYOUT, device=dev, memory_config=dram)
    obs = {}
    u8 = up((1, 1, 64, 3), ttnn.uint8, ttnn.ROW_MAJOR_LAYOUT,
            torch.zeros(1, 1, 64, 3, dtype=torch.uint8))
    try:
        ttnn.to_layout(u8, ttnn.TILE_LAYOUT, dtype=ttnn.bfloat16)
        obs['uint8 tilize'] = 'accepted'
    except RuntimeError as e:
        obs['uint8 tilize'] = 'rejected: ' + ('Can only tilize' in str(e)) * 'Can only tilize'
    for dt in ('bfloat16', 'float32', 'uint32'):
        x = up((1, 1, 64, 3), getattr(ttnn, dt), ttnn.ROW_MAJOR_LAYOUT)
        obs[f'{dt} tilize'] = str(ttnn.to_layout(x, ttnn.TILE_LAYOUT).layout)
    c = ttnn.typecast(u8, ttnn.bfloat16)
    obs['typecast row-major uint8'] = (str(c.dtype), str(c.layout), list(c.shape))
    for a, b, lay in RESHAPES:
        x = up(a, layout=getattr(ttnn, f'{lay}_LAYOUT'))
        y = ttnn.reshape(x, b, pad_value=0.0)
        obs[f'reshape {a}->{b} {lay} is a view'] = y.buffer_address() == x.buffer_address()
    x = up((1, 64, 64))
    s = ttnn.slice(x, [0, 0, 0], [1, 64, 64], [1, 1, 1], pad_value=0.0)
    obs['full-range slice shares'] = s.buffer_address() == x.buffer_address()
    ttnn.deallocate(s)
    obs['deallocate(full-range slice): input allocated'] = x.is_allocated()
    x = up((1, 64, 64))
    s = ttnn.slice(x, [0, 0, 0], [1, 32, 64], [1, 1, 1], pad_value=0.0)
    obs['partial slice shares'] = s.buffer_address() == x.buffer_address()
    # a batch-1 first operand reused across the batches of the second (the DPT head's resizes):
    # which memory the second operand and the result may live in
    a = up((1, 1, 64, 32))
    for where_b, where_out in (('DRAM', 'DRAM'), ('L1', 'DRAM'), ('DRAM', 'L1'), ('L1', 'L1')):
        mem = {'DRAM': dram, 'L1': ttnn.L1_MEMORY_CONFIG}
        b = ttnn.from_torch(torch.zeros(1, 3, 32, 64), dtype=ttnn.bfloat16,
                            layout=ttnn.TILE_LAYOUT, device=dev, memory_config=mem[where_b])
        try:
            y = ttnn.matmul(a, b, memory_config=mem[where_out])
            obs[f'in0-broadcast matmul, in1 {where_b}, out {where_out}'] = list(y.shape)
            ttnn.deallocate(y)
        except RuntimeError as e:
            obs[f'in0-broadcast matmul, in1 {where_b}, out {where_out}'] = \
                'rejected: ' + ('in0_reuse' in str(e)) * 'in0_reuse'
        ttnn.deallocate(b)
    # ... and under an explicit 1D program config (the head resizes' L1 intermediates)
    for label, pm, pn, fuse in (('1D', 2, 2, False), ('1D per_core_N short', 2, 1, False),
                                ('1D per_core_M long', 3, 2, False), ('1D fuse_batch', 2, 2, True)):
        pc = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(11, 10), in0_block_w=1,
            out_subblock_h=1, out_subblock_w=1, per_core_M=pm, per_core_N=pn, fuse_batch=fuse,
            fused_activation=None, mcast_in0=False)
        l1 = ttnn.L1_MEMORY_CONFIG
        b = ttnn.from_torch(torch.zeros(1, 3, 32, 64), dtype=ttnn.bfloat16,
                            layout=ttnn.TILE_LAYOUT, device=dev, memory_config=l1)
        try:
            y = ttnn.matmul(a, b, memory_config=l1, program_config=pc)
            obs[f'in0-broadcast matmul, {label}, in1 L1, out L1'] = list(y.shape)
            ttnn.deallocate(y)
        except RuntimeError as e:
            why = [k for k in ('in0_reuse', 'num_blocks_x', 'per_core_M <= Mt') if k in str(e)]
            obs[f'in0-broadcast matmul, {label}, in1 L1, out L1'] = 'rejected: ' + ''.join(why[:1])
        ttnn.deallocate(b)
    for force in (True, False):
        base = up((1, 1, 256, 64))
        view = ttnn.reshape(base, (1, 256, 64))
        ttnn.deallocate(base, force=force)
        obs[f'force={force}: base allocated'] = base.is_allocated()
        obs[f'force={force}: view allocated'] = view.is_allocated()
        obs[f'force={force}: view memory free'] = memory_freed(ttnn, dev, view, up)
        ttnn.deallocate(view)
    return obs


def real_freed(ttnn, dev, view, up):
    probe = up(tuple(view.shape))
    return probe.buffer_address() == view.buffer_address()


def standin_freed(ttnn, dev, view, up):
    return view._buffer_freed()


def test_standin_buffer_behaviour_matches_real_ttnn(side_python, tmp_path, monkeypatch):
    from devtools.ttnn.dryrun.bridge import Bridge
    b = Bridge(str(side_python), environment.side_env(), tmp_path / 'real.log')
    try:
        real = b.module
        dev = real.open_device(device_id=0, l1_small_size=32768, trace_region_size=1 << 26)
        theirs = observe(real, dev, real_freed)
        real.close_device(dev)
    finally:
        b.close()
    monkeypatch.setitem(sys.modules, 'ttnn', standin)
    dev = standin.open_device(device_id=0, l1_small_size=32768, trace_region_size=1 << 26)
    try:
        ours = observe(standin, dev, standin_freed)
    finally:
        from devtools.ttnn.standin import device as standin_device
        standin_device._open_devices.clear()
    for k in theirs:
        print(f'{k}: real {theirs[k]!r}, stand-in {ours.get(k)!r}')
    assert theirs['uint8 tilize'].startswith('rejected')          # what the dry run found
    assert theirs['force=True: view memory free'] is True
    norm = {'Layout.TILE': 'TILE', 'Layout.ROW_MAJOR': 'ROW_MAJOR',
            'DataType.BFLOAT16': 'BFLOAT16'}

    def canon(v):
        if isinstance(v, (list, tuple)):
            return [canon(x) for x in v]
        return norm.get(v, v)
    assert {k: canon(v) for k, v in ours.items()} == {k: canon(v) for k, v in theirs.items()}


def test_standin_raises_on_use_after_forced_free(ttnn_standin_device):
    ttnn, dev = ttnn_standin_device
    base = ttnn.from_torch(torch.ones(1, 1, 64, 64), dtype=ttnn.bfloat16,
                           layout=ttnn.TILE_LAYOUT, device=dev,
                           memory_config=ttnn.DRAM_MEMORY_CONFIG)
    view = ttnn.reshape(base, (1, 64, 64))
    ttnn.deallocate(base)
    assert view.is_allocated()                    # as on the real library...
    with pytest.raises(RuntimeError, match='use after free'):
        ttnn.add(view, view)                       # ...but the stand-in refuses the use
    ttnn.deallocate(view)                          # no double free


@pytest.fixture
def ttnn_standin_device(monkeypatch):
    from devtools.ttnn.standin import device as standin_device
    monkeypatch.setitem(sys.modules, 'ttnn', standin)
    dev = standin.open_device(device_id=0, l1_small_size=32768, trace_region_size=1 << 26)
    yield standin, dev
    standin_device._open_devices.clear()
