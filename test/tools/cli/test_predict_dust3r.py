"""`tt-depth predict dust3r` end to end with the tiny golden weights from a safetensors file."""
from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from support.dust3r_data import DATA, tiny_state_dict
from tt_depth_ros.tools.cli.main import main


@pytest.fixture(scope='module')
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp('w') / 'dust3r_tiny.safetensors'
    save_file(dict(tiny_state_dict()), str(path))
    return str(path)


def _argv(weights, out, *extra):
    return ['predict', 'dust3r', str(DATA / 'pairA_384x512_view1.png'),
            str(DATA / 'pairA_384x512_view2.png'), '--model', 'dust3r-tiny', '--weights', weights,
            '--backend', 'torch-cpu', '--out', str(out), '--name', 'pair', *extra]


def test_writes_npz_ply_json(weights, tmp_path, capsys):
    rc = main(_argv(weights, tmp_path, '--pose', '--intrinsics', '400,400,255.5,191.5',
                    '--percentile', '50'))
    summary = json.loads((tmp_path / 'pair.json').read_text())
    assert rc == (0 if summary['pose']['success'] else 3)   # exit 3 = files written, pose failed
    assert summary['network_hw'] == [384, 512] and summary['scale_source'] == 'none'
    assert summary['pose']['focal_source'] == 'intrinsics'
    with np.load(tmp_path / 'pair.npz') as z:
        assert z['pts3d_2'].shape == (384, 512, 3)
        np.testing.assert_allclose(z['K2_net'], [[400, 0, 255.5], [0, 400, 191.5], [0, 0, 1]])
        # top 50 % of each view by confidence (conf2 has many ties at exactly 1.0)
        want = sum(int((c >= np.percentile(c, 50)).sum()) for c in (z['conf_1'], z['conf_2']))
    head = (tmp_path / 'pair.ply').read_bytes()[:300].decode('ascii', 'replace')
    n = int(head.split('element vertex ')[1].split()[0])
    assert n == want and n >= 384 * 512
    assert 'pair.{npz,ply,json}' in capsys.readouterr().out


def test_bad_arguments_give_errors(weights, tmp_path, capsys):
    assert main(_argv(weights, tmp_path, '--intrinsics', '400,400,nan,191.5')) == 1
    assert 'NaN' in capsys.readouterr().err
    assert main(_argv(weights, tmp_path, '--intrinsics', '400,400')) == 1
    assert 'fx,fy,cx,cy' in capsys.readouterr().err
    argv = _argv(weights, tmp_path)
    argv[3] = str(DATA / 'prep_480x640.png')     # portrait vs landscape: different grids
    assert main(argv) == 1
    assert 'different network sizes' in capsys.readouterr().err
    argv[3] = str(tmp_path / 'missing.png')
    assert main(argv) == 1
    bad = tmp_path / 'corrupt.safetensors'
    bad.write_bytes(b'\x00' * 64)
    assert main(_argv(str(bad), tmp_path)) == 1
    assert 'corrupt' in capsys.readouterr().err
