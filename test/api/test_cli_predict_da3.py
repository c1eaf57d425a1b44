"""`tt-depth predict [da3]` as a real process: files written, intrinsics flags and YAML, errors."""
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from support.da3_fixtures import DATA, tiny_state_dict, write_safetensors
from support.procs import python_cmd
from tt_depth_ros.tools.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, timeout=120):
    return subprocess.run(python_cmd('tt_depth_ros.tools.cli', *args), cwd=ROOT, timeout=timeout,
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


def test_parser_structure():
    p = build_parser()
    a = p.parse_args(['predict', 'da3', 'x.png', '--fx', '1', '--fy', '2'])
    assert a.model_family == 'da3' and a.images == ['x.png'] and a.func.__module__.endswith('da3')
    b = p.parse_args(['predict', 'dust3r', 'a.png', 'b.png'])
    assert b.model_family == 'dust3r'
    with pytest.raises(SystemExit):
        p.parse_args(['predict', 'da3', 'x.png', '--backend', 'gpu'])
