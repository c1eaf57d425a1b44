"""`tt-depth predict [da3]` as a real process: files written, intrinsics flags and YAML, errors."""
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from support.da3_fixtures import DATA, tiny_state_dict, write_safetensors
from support.procs import python_cmd
from tt_depth_ros.tools.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[3]


def _run(*args, timeout=120):
    return subprocess.run(python_cmd('tt_depth_ros.tools.cli.main', *args),
                          cwd=ROOT, timeout=timeout,
                          capture_output=True, text=True)


@pytest.fixture(scope='module')
def weights(tmp_path_factory):
    return write_safetensors(tiny_state_dict(), tmp_path_factory.mktemp('w') / 'tiny.safetensors')


def test_predict_writes_metric_files(tmp_path, weights):
    yaml_path = tmp_path / 'cam.yaml'
    # camera_calibration format for a 1280x720 calibration; the image below is 640x360 (scaled)
    yaml_path.write_text(
        'image_width: 1280\nimage_height: 720\ncamera_name: front\n'
        'camera_matrix: {rows: 3, cols: 3, data: [1000.0, 0, 640.0, 0, 1000.0, 360.0, 0, 0, 1]}\n'
        'projection_matrix: {rows: 3, cols: 4, data: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}\n')
    img = cv2.resize(cv2.imread(str(DATA / 'preproc_1280x720.png')), (640, 360))
    cv2.imwrite(str(tmp_path / 'small.png'), img)
    out = tmp_path / 'out'
    r = _run('predict', str(DATA / 'preproc_1280x720.png'), '--model', 'da3metric-tiny',
             '--weights', str(weights), '--backend', 'torch-cpu', '--fx', '1000', '--fy', '1000',
             '--cx', '640', '--cy', '360', '--out', str(out), '--formats', 'png16,npz,color,ply',
             '--ply-decimation', '4')
    assert r.returncode == 0, r.stderr
    assert 'preproc_1280x720.png: 1280x720, median depth' in r.stdout and ' m,' in r.stdout
    mm = cv2.imread(str(out / 'preproc_1280x720_depth_mm.png'), cv2.IMREAD_UNCHANGED)
    assert mm.dtype == np.uint16 and mm.shape == (720, 1280) and mm.max() > 0
    for name in ('preproc_1280x720_depth.npz', 'preproc_1280x720_depth_color.png',
                 'preproc_1280x720.ply'):
        assert (out / name).stat().st_size > 0
    r2 = _run('predict', 'da3', str(tmp_path / 'small.png'), '--model', 'da3metric-tiny',
              '--weights', str(weights), '--backend', 'torch-cpu', '--camera-info', str(yaml_path),
              '--out', str(out), '--formats', 'npz', '--output-res', 'network')
    assert r2.returncode == 0, r2.stderr
    with np.load(out / 'preproc_1280x720_depth.npz') as a, np.load(out / 'small_depth.npz') as b:
        np.testing.assert_allclose(b['K_network'], a['K_network'], rtol=1e-9)  # same camera
        assert b['depth'].shape == (280, 504) and not bool(b['intrinsics_assumed'])


def test_predict_errors_are_reported(tmp_path, weights):
    r = _run('predict', str(DATA / 'tiny_280x504.png'), '--model', 'da3metric-tiny',
             '--weights', str(tmp_path / 'missing.safetensors'), '--backend', 'torch-cpu',
             '--out', str(tmp_path))
    assert r.returncode == 1 and 'does not exist' in r.stderr
    r = _run('predict', str(DATA / 'tiny_280x504.png'), '--model', 'da3mono-large',
             '--formats', 'png16', '--out', str(tmp_path))
    assert r.returncode == 1 and 'relative depth' in r.stderr
    # --dtype takes every backend's names; the backend chosen refuses another's by name
    r = _run('predict', str(DATA / 'tiny_280x504.png'), '--model', 'da3metric-tiny',
             '--weights', str(weights), '--backend', 'torch-cpu', '--dtype', 'fast',
             '--out', str(tmp_path))
    assert r.returncode == 1 and "dtype='fast'; allowed" in r.stderr, r.stderr


def test_parser_structure():
    p = build_parser()
    a = p.parse_args(['predict', 'da3', 'x.png', '--fx', '1', '--fy', '2'])
    assert a.model_family == 'da3' and a.images == ['x.png'] and a.func.__module__.endswith('da3')
    b = p.parse_args(['predict', 'dust3r', 'a.png', 'b.png'])
    assert b.model_family == 'dust3r'
    with pytest.raises(SystemExit):
        p.parse_args(['predict', 'da3', 'x.png', '--backend', 'gpu'])
    assert p.parse_args(['predict', 'da3', 'x.png', '--dtype', 'fast-hifi4']).dtype == 'fast-hifi4'
    with pytest.raises(SystemExit):
        p.parse_args(['predict', 'da3', 'x.png', '--dtype', 'fp8'])


@pytest.fixture(scope='module')
def anyview_weights(tmp_path_factory):
    from support.da3_fixtures import anyview_state_dict
    return write_safetensors(anyview_state_dict(),
                             tmp_path_factory.mktemp('wa') / 'anyview.safetensors')


def test_predict_multi_view_writes_poses_cloud_npz(tmp_path, anyview_weights):
    import json

    from support.da3_fixtures import ANYVIEW
    views = [str(ANYVIEW / f'scene0_280x504_view{i}.png') for i in (0, 1)]
    out = tmp_path / 'mv'
    r = _run('predict', *views, '--model', 'da3-anyview-tiny', '--weights', str(anyview_weights),
             '--backend', 'torch-cpu', '--multi-view', '--out', str(out), '--ply-decimation', '4')
    assert r.returncode == 0, r.stderr
    assert '(relative)' in r.stdout and ' m,' not in r.stdout and '2 views (reference' in r.stdout
    j = json.loads((out / 'poses.json').read_text())
    assert j['units'] == 'relative' and [v['image'] for v in j['views']] == [
        'scene0_280x504_view0.png', 'scene0_280x504_view1.png']
    T = np.array(j['views'][1]['T_world_camera'])
    np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-5)
    with np.load(out / 'views.npz') as z:
        assert z['depth_0'].shape == (280, 504) and z['poses_c2w'].shape == (2, 4, 4)
        np.testing.assert_allclose(z['poses_c2w'][1], T, rtol=1e-6)
    header = (out / 'cloud.ply').read_bytes().split(b'end_header')[0]
    assert f'element vertex {2 * 70 * 126}'.encode() in header


def test_predict_relative_models_and_licence_flag(tmp_path, anyview_weights):
    import os

    from support.da3_fixtures import ANYVIEW
    img = str(ANYVIEW / 'scene0_280x504_view0.png')
    r = _run('predict', img, '--model', 'da3-anyview-tiny', '--weights', str(anyview_weights),
             '--backend', 'torch-cpu', '--out', str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert '(relative)' in r.stdout and 'estimated fx' in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'scene0_280x504_view0_depth.npz', 'scene0_280x504_view0_depth_color.png']
    r = _run('predict', img, '--model', 'da3-small', '--formats', 'ply', '--out', str(tmp_path))
    assert r.returncode == 1 and 'relative depth' in r.stderr
    env = {k: v for k, v in os.environ.items() if k != 'TT_DEPTH_ACCEPT_NC_LICENSE'}
    args = python_cmd('tt_depth_ros.tools.cli.main', 'predict', img, '--model', 'da3-large-1.1',
                      '--weights', str(anyview_weights), '--backend', 'torch-cpu',
                      '--out', str(tmp_path))
    r = subprocess.run(args, cwd=ROOT, timeout=120, capture_output=True, text=True, env=env)
    assert r.returncode == 1 and 'CC-BY-NC-4.0' in r.stderr and '--accept-nc-license' in r.stderr
    # with the flag the licence gate passes; the tiny file then does not fit the Large layout
    r = subprocess.run(args + ['--accept-nc-license'], cwd=ROOT, timeout=120,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and 'does not fit' in r.stderr and 'CC-BY-NC' not in r.stderr
