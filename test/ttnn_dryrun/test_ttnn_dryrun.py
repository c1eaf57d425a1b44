"""The ttnn engine through the REAL ttnn 0.81.1 on a mock p150 (the dry run): nothing rejected.

Zero rejections and zero buffer hazards: DA3 tiny at every golden size (one preset each) and on
camera frames it resizes on the device (one and two resize steps), DUSt3R tiny at its fixture's
size ('bfloat16'), and each family's default at full size (DA3-Large at the three golden sizes,
DUSt3R-Large in both orientations).

Each model runs in a fresh interpreter (`python -m devtools.ttnn.dryrun.driver --json`), the
real library in the side venv (devtools/ttnn/dryrun/environment.py). Without Python 3.12 the
tests skip loudly — except in CI (CI=true), where a skip is a failure. The harness itself is
checked on deliberately wrong usage: an op the library rejects, a use after a forced deallocate
of a reshape view's base, a full-range slice freed under its caller.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.ttnn.dryrun import environment

ROOT = Path(__file__).resolve().parents[2]


def run_driver(tmp_path, model, sizes=(), timeout=900, cameras=(), extra=()) -> dict:
    out = tmp_path / f'{model}.json'
    cmd = [sys.executable, '-m', 'devtools.ttnn.dryrun.driver', '--model', model, '--json',
           str(out), *extra]
    for s in sizes:
        cmd += ['--size', s]
    for c in cameras:
        cmd += ['--camera', c]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    print(r.stdout[-6000:])
    assert out.exists(), f'driver wrote no report (exit {r.returncode}):\n{r.stderr[-4000:]}'
    return json.loads(out.read_text())


def check_report(rep: dict, views: int, open_op: str = 'ttnn.open_device') -> None:
    assert rep['problems'] == [], '\n'.join(rep['problems'])
    assert rep['status'] == 'completed'
    assert rep['dispatch'] == 'worker' and rep['grid'] == [11, 10]      # p150a, stock dispatch
    expected = [r for r in rep['records'] if r['kind'] == 'expected']
    assert [r['op'] for r in expected] == [open_op]                    # the ETH attempt only
    for s in rep['sizes']:
        h, w = (int(v) for v in s.split('x'))
        shapes = rep['outputs'][s]
        assert all(v[:2] == [h, w] for v in shapes.values()), shapes
        assert len(shapes) == (2 if views == 1 else 6)
    for c, net in rep.get('camera_network', {}).items():   # camera frames: network-size maps
        assert all(v[:2] == net for v in rep['outputs'][f'camera {c}'].values())
    traced = [t for t in rep['traces'] if t['programs'] > 0]
    assert traced and all(t['state'] == 'released' for t in rep['traces'])
    assert rep['peak_bytes']['DRAM'] > 0
    # the trace-region budget formula (programs_estimate) bounds every real count, not loosely
    counts = [t['programs'] for t in rep['traces']]
    assert max(counts) <= rep['programs_estimate'] <= 1.5 * max(counts), (
        counts, rep['programs_estimate'])
    # LRU eviction: never more live traces than max_traced_shapes (3 sizes, 2 kept)
    live = 0
    for t in rep['traces']:
        live = sum(1 for u in rep['traces'][:t['number']] if u['phase'] == t['phase'])
        assert live <= rep['max_traced_shapes']


# each family's default and its other presets of note: DA3 'fast-hifi3+mask_free_sdpa+
# block_sharded' (default), 'fast' (its own weight layout, at the largest size) and
# 'float32-residual-head' (the float32 presets' DRAM layout); DUSt3R 'bfloat16' (the former
# default: the DRAM layout every size took before) at the tiny fixture's own size. DUSt3R's
# default ('fast' with its four levers) runs full size below.
TINY = [
    # 640x480: one resize step; 1280x720: two; with 518x518, three traced shapes (2 kept)
    ('da3-tiny', 1, ('518x518',), ('480x640', '720x1280'), None),
    ('da3-tiny', 1, ('518x518',), (), 'fast'),
    ('da3-tiny', 1, ('280x504',), ('480x640',), 'float32-residual-head'),
    ('dust3r-tiny', 2, ('80x112',), (), 'bfloat16')]
TWO_CQ = {'model': 'da3-tiny', 'sizes': ['280x504'], 'cameras': ['480x640'], 'command_queues': 2}
# one xdist unit (test/conftest.py splits this file per test): the runs share one fixture; the
# name keeps the file's place among the long units that go before test/tools
TINY_GROUP = pytest.mark.xdist_group('test/ttnn_dryrun/test_ttnn_dryrun.py::tiny')


@pytest.fixture(scope='module')
def tiny_reports(side_python, tmp_path_factory):
    """The tiny runs and the two-queue run, in one driver process (one interpreter start)."""
    tmp = tmp_path_factory.mktemp('dryrun_tiny')
    plan = [{'model': m, 'sizes': list(s), 'cameras': list(c), 'dtype': d}
            for m, _, s, c, d in TINY] + [TWO_CQ]
    (tmp / 'plan.json').write_text(json.dumps(plan))
    out = tmp / 'reports.json'
    r = subprocess.run([sys.executable, '-m', 'devtools.ttnn.dryrun.driver', '--plan',
                        str(tmp / 'plan.json'), '--json', str(out)], capture_output=True,
                       text=True, timeout=1500, cwd=ROOT)
    print(r.stdout[-6000:])
    assert out.exists(), f'driver wrote no report (exit {r.returncode}):\n{r.stderr[-4000:]}'
    reports = json.loads(out.read_text())
    assert len(reports) == len(plan)
    return reports


@TINY_GROUP
@pytest.mark.parametrize('index', range(len(TINY)),
                         ids=[f'{m}-{d or "default"}' for m, _, _, _, d in TINY])
def test_tiny_engine_real_library_zero_rejections_zero_hazards(tiny_reports, index):
    model, views, sizes, cameras, dtype = TINY[index]
    rep = tiny_reports[index]
    assert rep['model'] == model and rep['sizes'] == list(sizes)
    check_report(rep, views)
    if dtype is not None:
        assert rep['engine_info']['precision'] == dtype
    assert sorted(rep.get('camera_network', {})) == sorted(cameras)
    print({t['phase']: t['programs'] for t in rep['traces']}, rep['peak_bytes'])


@TINY_GROUP
def test_two_command_queues_real_library(tiny_reports):
    """The 2-CQ engine through the real library, wait_for_event alone counted, not sent.

    Mesh open with two queues, staging buffers, the CQ1 upload, ttnn.copy, events, the
    non-blocking readback, two frames in flight, a camera key (wait_for_event crashes the mock's
    dispatch).
    """
    rep = tiny_reports[len(TINY)]
    check_report(rep, 1, open_op='ttnn.open_mesh_device')
    assert rep['engine_info']['command_queues'] == 2
    assert rep['skipped_wait_for_event'] == 5      # 1 + 2 (two frames), 2 (the camera frame)
    calls = rep['calls']
    assert calls['ttnn.open_mesh_device'] == 2 and calls['ttnn.close_mesh_device'] == 1
    # per frame: 2 uploads (zeros at prepare aside), a copy, 3 events, a readback, a wait on it
    frames = 3
    assert calls['ttnn.record_event'] == 3 * frames
    assert calls['ttnn.event_synchronize'] == frames
    assert calls['ttnn.from_device'] == frames
    assert calls['ttnn.copy'] >= frames                 # + the warm-up copy of each key


@pytest.mark.slow
@pytest.mark.parametrize('model,views,preset', [('da3-large', 1,
                                                'fast-hifi3+mask_free_sdpa+block_sharded'),
                                               ('dust3r-large', 2, 'fast+fused_residual+'
                                                'mask_free_sdpa+rope_kernel+block_sharded')])
def test_full_size_engine_real_library_zero_rejections_zero_hazards(side_python, tmp_path, model,
                                                                    views, preset):
    """Each family's default preset at full size: DUSt3R in both orientations, DA3 at three sizes.

    Under 'fast' the portrait head's convs once needed L1 that tapped decoder outputs held; and
    DA3-Large's third shape ran out of L1_SMALL until an eviction cleared the program cache.
    The weights go up without the .tensorbin cache the tiny models' runs take (GBs here).
    """
    rep = run_driver(tmp_path, model, timeout=1500, extra=('--no-weight-cache',))
    check_report(rep, views)
    assert rep['engine_info']['precision'] == preset
    assert len(rep['sizes']) == (2 if views == 2 else 3)


def test_harness_reports_rejections_and_hazards(side_python, tmp_path):
    """Wrong usage through the same bridge/monitor: each must be reported."""
    import numpy as np
    import torch

    from devtools.ttnn.dryrun.bridge import Bridge
    env = environment.side_env()
    b = Bridge(str(side_python), env, tmp_path / 'real.log')
    try:
        ttnn = b.module
        dev = ttnn.open_device(device_id=0, l1_small_size=32768, trace_region_size=1 << 26)
        dram = ttnn.DRAM_MEMORY_CONFIG

        def up(shape, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT):
            return ttnn.from_torch(torch.zeros(shape), dtype=dtype, layout=layout, device=dev,
                                   memory_config=dram)
        u8 = ttnn.from_torch(torch.zeros(1, 1, 64, 3, dtype=torch.uint8), dtype=ttnn.uint8,
                             device=dev, memory_config=dram)
        with pytest.raises(RuntimeError, match='Can only tilize'):
            ttnn.to_layout(u8, ttnn.TILE_LAYOUT, dtype=ttnn.bfloat16)
        t = up((1, 1, 64, 64))
        v = ttnn.reshape(t, (1, 64, 64))                 # a view on t's buffer
        ttnn.deallocate(t)                               # force=True: frees v's memory too
        ttnn.add(v, v)                                   # accepted: a silent use after free
        x = up((1, 64, 64))
        s = ttnn.slice(x, [0, 0, 0], [1, 64, 64], [1, 1, 1])   # full range: x itself
        ttnn.deallocate(s)
        with pytest.raises(RuntimeError):
            ttnn.add(x, x)
        ok = up((1, 1, 64, 64))                          # force=False keeps the view valid
        w = ttnn.reshape(ok, (1, 64, 64))
        ttnn.deallocate(ok, force=False)
        ttnn.add(w, w)
        out = ttnn.to_torch(ttnn.add(w, w))
        assert out.dtype == torch.bfloat16 and tuple(out.shape) == (1, 64, 64)
        assert np.all(out.float().numpy() == 0)          # mock device: reads are zeros
        ttnn.close_device(dev)
        rep = b.report()
    finally:
        b.close()
    kinds = [(r['kind'], r['op']) for r in rep['records']]
    assert ('rejected', 'ttnn.to_layout') in kinds
    hazards = [r for r in rep['records'] if r['kind'] == 'hazard']
    # (the second use after free has the same sites here, '?': reported once)
    assert [r['op'] for r in hazards] == ['ttnn.add', 'ttnn.deallocate'], hazards
    assert 'use after free' in hazards[0]['error']
    assert 'returned its input itself' in hazards[1]['error']    # deallocate(full-range slice)
    assert ('rejected', 'ttnn.add') in kinds             # the slice freed its caller's tensor
