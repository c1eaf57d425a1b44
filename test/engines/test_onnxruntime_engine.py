"""`tt-depth export` (ONNX) and the onnxruntime engine, on the tiny DA3 configs.

Exported tiny metric and any-view files vs the torch fp32 engine (depth PCC >= 0.9999), the
sidecar's content, the onnxruntime engine through the one DA3 frame path with CameraInfo metric
scale against the torch engine, and the clear errors: a size that is not a multiple of 14, a
missing execution provider, an image of another size than the file's, a missing sidecar.
"""
import json

import numpy as np
import pytest

from support.da3_fixtures import (
    anyview_png,
    anyview_state_dict,
    load_png_rgb,
    tiny_state_dict,
    write_safetensors,
)
from tt_depth_ros.engines.export.graph import TOLERANCES, parity, parity_passed
from tt_depth_ros.engines.export.onnx_da3 import PCC_GATE, export_da3_onnx
from tt_depth_ros.engines.export.size import parse_size
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.engines.parity import compare_maps, pcc
from tt_depth_ros.engines.select import BackendUnavailableError, select_backend
from tt_depth_ros.engines.weights import sha256_file
from tt_depth_ros.pipelines.depth import DA3FramePath, FrameOptions
from tt_depth_ros.tools.cli.main import main as tt_depth

SIZE = (280, 504)
K_CAM = np.array([[400.0, 0, 251.5], [0, 410.0, 139.5], [0, 0, 1]])   # the 504x280 image


@pytest.fixture(scope='module')
def metric(tmp_path_factory):
    """da3metric-tiny exported at 280x504 by the CLI from a weights file: (onnx, weights)."""
    tmp = tmp_path_factory.mktemp('onnx')
    weights = write_safetensors(tiny_state_dict(), tmp / 'tiny.safetensors')
    out = tmp / 'da3metric_tiny_280x504.onnx'
    rc = tt_depth(['export', '--model', 'da3metric-tiny', '--size', '280x504', '--format', 'onnx',
                   '--weights', str(weights), '--out', str(out)])
    assert rc == 0
    return out, weights


@pytest.fixture(scope='module')
def torch_metric():
    eng = build_engine('da3metric-tiny', dtype='float32', backend='torch-cpu',
                       state_dict=tiny_state_dict())
    yield eng
    eng.close()


def test_export_writes_a_checked_file_and_its_sidecar(metric):
    import onnx

    out, weights = metric
    model = onnx.load(str(out))
    onnx.checker.check_model(model)
    assert max(o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')) >= 17
    side = json.loads(out.with_suffix('.json').read_text())
    assert (side['model'], side['kind'], side['size_hw'], side['dtype']) == (
        'da3metric-tiny', 'metric', [280, 504], 'fp32')
    assert side['input'] == {'name': 'image', 'shape': [1, 3, 280, 504], 'dtype': 'float32',
                             'layout': 'NCHW, RGB'}
    assert side['preprocessing']['mean'] == [0.485, 0.456, 0.406]
    units = {o['name']: o['units'] for o in side['outputs']}
    assert units == {'depth': 'raw', 'sky': 'score'} and '/ 300' in side['metric_scale']
    assert side['weights'] == {'file': 'tiny.safetensors', 'sha256': sha256_file(weights)}
    assert side['file_sha256'] == sha256_file(out)
    assert {'torch', 'onnx', 'onnxruntime'} <= set(side['versions'])
    ops = side['exporter']['operators']
    assert ops['Resize'] >= 1 and 'ScatterND' not in ops and sum(ops.values()) == len(
        model.graph.node)
    par = side['parity']
    assert par['passed'] and par['outputs']['depth']['pcc'] >= PCC_GATE
    assert set(par['outputs']) == {'depth', 'sky'}            # every output the file returns
    for name, fig in par['outputs'].items():
        assert fig['passed'] and fig['max_rel'] <= TOLERANCES['fp32']['map_max_rel'], (name, fig)
    assert par['outputs']['depth']['median_rel'] <= TOLERANCES['fp32']['map_median_rel']


def test_onnxruntime_engine_matches_torch_through_the_frame_path(metric, torch_metric):
    out, _ = metric
    ort = build_engine('da3metric-tiny', backend='onnxruntime', weights=str(out))
    assert (ort.info.backend, ort.info.device) == ('onnxruntime', 'CPUExecutionProvider')
    assert ort.info.details['is_metric'] is True
    # idle intra-op threads sleep: spinning ones starve the node's own work between frames
    session_opts = ort._session.get_session_options()
    assert session_opts.get_session_config_entry('session.intra_op.allow_spinning') == '0'
    rgb = load_png_rgb('tiny_280x504.png')
    opts = FrameOptions()
    frames = []
    for eng in (ort, torch_metric):
        path = DA3FramePath(eng, 'metric')
        frames.append(path(rgb, path.intrinsics(K_CAM), opts))
    a, b = frames
    assert a.raw_depth.shape == SIZE and a.intrinsics_source == 'camera_info'
    np.testing.assert_array_equal(a.K_network, b.K_network)
    fin = np.isfinite(b.depth)
    assert np.array_equal(fin, np.isfinite(a.depth))
    assert pcc(a.depth[fin], b.depth[fin]) >= PCC_GATE
    np.testing.assert_allclose(a.depth[fin], b.depth[fin], rtol=1e-4)
    # the metric scale is the focal/300 rule on both: metres / raw = mean focal at net res / 300
    f = (a.K_network[0, 0] + a.K_network[1, 1]) / 2 / 300
    np.testing.assert_allclose(a.depth[fin], a.raw_depth[fin] * f, rtol=1e-6)
    ort.close()


def test_anyview_export_matches_torch(tmp_path):
    out = tmp_path / 'anyview.onnx'
    state = anyview_state_dict()
    side = export_da3_onnx('da3-anyview-tiny', SIZE, out, state_dict=state)
    assert side['parity']['passed'] and side['weights']['file'] is None
    ort = build_engine('da3-anyview-tiny', backend='onnxruntime', weights=str(out))
    ref = build_engine('da3-anyview-tiny', dtype='float32', backend='torch-cpu', state_dict=state)
    img = anyview_png('scene0_280x504_view0.png')
    a, b = ort.infer(img), ref.infer(img)
    assert set(a) == set(b) == {'depth', 'conf', 'intrinsics', 'extrinsics'}
    for k in a:
        assert a[k].shape == b[k].shape, k
    assert pcc(a['depth'], b['depth']) >= PCC_GATE
    # every output on another image than the export's, by magnitude: depth and confidence (after
    # its exp + 1) allclose to 1e-4 of their range, the cameras to 1e-4 of their largest entry
    for k in a:
        agree = compare_maps(b[k], a[k])
        assert agree.max_rel <= 1e-4 and agree.finite_mismatch == 0, (k, str(agree))
    np.testing.assert_allclose(a['depth'], b['depth'], rtol=1e-4, atol=1e-5 * b['depth'].max())
    np.testing.assert_allclose(a['intrinsics'], b['intrinsics'], rtol=1e-4)
    np.testing.assert_allclose(a['extrinsics'], b['extrinsics'], rtol=1e-4, atol=1e-5)
    assert side['parity']['outputs'].keys() == a.keys()
    assert all(f['passed'] for f in side['parity']['outputs'].values()), side['parity']
    ort.close()
    ref.close()


def test_parity_fails_on_scale_offset_and_a_missing_activation():
    """The exporter's gate sees what PCC does not: depth x 1.05, + an offset, raw confidence."""
    rng = np.random.default_rng(0)
    ref = {'depth': rng.uniform(0.5, 3.0, (28, 42)).astype(np.float32),
           'conf': (np.exp(rng.normal(0, 1, (28, 42))) + 1).astype(np.float32),
           'intrinsics': np.array([[300.0, 0, 21], [0, 300.0, 14], [0, 0, 1]], np.float32),
           'extrinsics': np.hstack([np.eye(3), [[0.1], [0.0], [-0.2]]]).astype(np.float32)}
    figures = parity(ref, ref, 'fp32')
    assert parity_passed(figures, PCC_GATE)
    bad = [('depth x 1.05', 'depth', dict(ref, depth=ref['depth'] * 1.05)),
           ('depth + 0.05', 'depth', dict(ref, depth=ref['depth'] + 0.05)),
           ('conf before its exp + 1', 'conf', dict(ref, conf=np.log(ref['conf'] - 1))),
           ('fx 0.1 % off', 'intrinsics', dict(ref, intrinsics=ref['intrinsics'] * [[1.001],
                                                                                 [1], [1]])),
           ('t 1 mm off', 'extrinsics', dict(ref, extrinsics=ref['extrinsics'] + [
               [0, 0, 0, 1e-3], [0, 0, 0, 0], [0, 0, 0, 0]]))]
    for why, name, ours in bad:
        figures = parity(ours, ref, 'fp32')
        assert not parity_passed(figures, PCC_GATE), why
        assert [k for k, f in figures.items() if not f['passed']] == [name], (why, figures)
    assert figures['extrinsics']['pcc'] > 0.99999      # correlation alone would pass it


def test_size_not_a_multiple_of_14_is_a_clear_error(capsys, tmp_path):
    with pytest.raises(ValueError, match=r'height 300 \(nearest: 294 or 308\).*multiple of the '
                                         '14 px patch'):
        parse_size('300x504')
    rc = tt_depth(['export', '--model', 'da3metric-tiny', '--size', '280x500',
                   '--out', str(tmp_path / 'x.onnx')])
    err = capsys.readouterr().err
    assert rc == 1 and 'width 500 (nearest: 490 or 504)' in err and 'Traceback' not in err


def test_dust3r_is_refused_with_a_reason(tmp_path):
    with pytest.raises(ValueError, match='not a DA3 model'):
        export_da3_onnx('dust3r-tiny', SIZE, tmp_path / 'd.onnx')


def test_missing_provider_names_it_and_the_available_ones(metric):
    out, _ = metric
    with pytest.raises(BackendUnavailableError, match=r"'CUDAExecutionProvider' is not "
                                                      r'available here; available: .*CPUExec'):
        build_engine('da3metric-tiny', backend='onnxruntime', weights=str(out),
                     onnx_provider='CUDAExecutionProvider')


def test_image_size_other_than_the_file_is_a_clear_error(metric):
    out, _ = metric
    eng = build_engine('da3metric-tiny', backend='onnxruntime', weights=str(out))
    with pytest.raises(ValueError, match=r'image size 378x504 differs from the fixed input size '
                                         r'280x504 .*--size 378x504.*network_height: 280'):
        eng.prepare((378, 504))
    with pytest.raises(ValueError, match='differs from the fixed input size'):
        eng.infer(load_png_rgb('tiny_378x504.png'))
    eng.close()


def test_bad_onnxruntime_requests(metric, tmp_path):
    out, weights = metric
    with pytest.raises(ValueError, match='holds .da3metric-tiny.*set model: da3metric-tiny'):
        build_engine('da3metric-large', backend='onnxruntime', weights=str(out))
    with pytest.raises(ValueError, match='set weights_path to the .onnx file'):
        build_engine('da3metric-tiny', backend='onnxruntime')
    with pytest.raises(ValueError, match='must be an existing .onnx file'):
        build_engine('da3metric-tiny', backend='onnxruntime', weights=str(weights))
    lone = tmp_path / 'lone.onnx'
    lone.write_bytes(out.read_bytes())
    with pytest.raises(ValueError, match='no sidecar .*lone.json'):
        build_engine('da3metric-tiny', backend='onnxruntime', weights=str(lone))
    with pytest.raises(BackendUnavailableError, match='exported DA3 files only'):
        build_engine('dust3r-tiny', backend='onnxruntime', weights=str(out))
    assert select_backend('auto') != 'onnxruntime'


def test_predict_cli_runs_an_exported_file(metric, tmp_path, capsys):
    out, _ = metric
    png = tmp_path / 'frame.png'
    import cv2
    cv2.imwrite(str(png), cv2.cvtColor(load_png_rgb('tiny_280x504.png'), cv2.COLOR_RGB2BGR))
    rc = tt_depth(['predict', 'da3', str(png), '--model', 'da3metric-tiny', '--weights', str(out),
                   '--backend', 'onnxruntime', '--onnx-provider', 'CPUExecutionProvider',
                   '--fx', '400', '--fy', '410', '--cx', '251.5', '--cy', '139.5',
                   '--formats', 'npz', '--out', str(tmp_path / 'o')])
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / 'o' / 'frame_depth.npz').is_file()


def test_missing_converter_package_is_named(monkeypatch, tmp_path):
    import sys
    monkeypatch.setitem(sys.modules, 'onnxscript', None)
    with pytest.raises(ValueError, match='needs the Python package.*onnxscript: pip install'):
        export_da3_onnx('da3metric-tiny', SIZE, tmp_path / 'x.onnx', exporter='dynamo',
                        state_dict=tiny_state_dict())


def test_many_external_tensor_files_become_one_data_file(metric, tmp_path):
    """One file per tensor (torch.onnx past 2 GB: DA3METRIC-LARGE) becomes <name>.onnx.data.

    Nothing else is left beside the model, and onnxruntime runs it exactly as the original.
    """
    import onnx
    import onnxruntime as ort

    from tt_depth_ros.engines.export.onnx_da3 import _place, external_data_path
    out, _ = metric
    scattered = tmp_path / 'exporter' / out.name
    scattered.parent.mkdir()
    onnx.save_model(onnx.load(str(out)), str(scattered), save_as_external_data=True,
                    all_tensors_to_one_file=False, size_threshold=0)
    assert len(list(scattered.parent.iterdir())) > 20     # one file per tensor
    dest = tmp_path / 'final' / 'model.onnx'
    dest.parent.mkdir()
    _place(onnx, scattered, dest)
    assert sorted(p.name for p in dest.parent.iterdir()) == ['model.onnx', 'model.onnx.data']
    assert external_data_path(dest).stat().st_size > 10 * dest.stat().st_size   # Constants too
    assert external_data_path(dest).stat().st_mode == dest.stat().st_mode
    onnx.checker.check_model(str(dest), full_check=True)
    x = np.random.default_rng(0).standard_normal((1, 3, *SIZE)).astype(np.float32)
    runs = [ort.InferenceSession(str(p), providers=['CPUExecutionProvider']).run(None, {'image': x})
            for p in (out, dest)]
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_nested_file_is_the_two_branches_and_the_engine_aligns_like_torch(tmp_path):
    """NESTED (tiny branches under its registry name) through ONNX gives the torch metres.

    The graph holds both networks, the onnxruntime engine runs the metric alignment on the host,
    and the frame path gets the torch engine's metres, scale factor and pose.
    """
    from tt_depth_ros.models.da3.config import ANYVIEW_TINY, TINY
    name, config = 'da3nested-giant-large-1.1', (ANYVIEW_TINY, TINY)
    sd = {'model.da3.' + k[len('model.'):]: v for k, v in anyview_state_dict().items()}
    sd.update({'model.da3_metric.' + k[len('model.'):]: v for k, v in tiny_state_dict().items()})
    out = tmp_path / 'nested_tiny.onnx'
    data = export_da3_onnx(name, SIZE, out, state_dict=sd, accept_license=True, config=config)
    assert data['parity']['passed'], data['parity']
    assert [o['name'] for o in data['outputs']] == [
        'depth_anyview', 'conf_anyview', 'intrinsics', 'extrinsics_anyview', 'metric_depth_raw',
        'sky']
    assert 'align_to_metric' in data['host_postprocess']
    assert data['parity']['outputs']['scale_factor']['pcc'] is None   # a scalar: no PCC
    assert set(data['parity']['outputs']) == {'depth', 'conf', 'sky', 'intrinsics', 'extrinsics',
                                              'scale_factor'}
    ort = build_engine(name, backend='onnxruntime', weights=str(out))
    ref = build_engine(name, dtype='float32', backend='torch-cpu', state_dict=sd, config=config,
                       accept_license=True)
    rgb = load_png_rgb('tiny_280x504.png')
    a, b = ort.infer(rgb), ref.infer(rgb)
    assert set(a) == set(b) == {'depth', 'conf', 'sky', 'intrinsics', 'extrinsics',
                                'scale_factor'}
    np.testing.assert_allclose(a['scale_factor'], b['scale_factor'], rtol=1e-4)
    assert pcc(a['depth'], b['depth']) >= PCC_GATE
    for k in ('depth', 'conf', 'sky', 'intrinsics', 'extrinsics'):   # by magnitude too
        agree = compare_maps(b[k], a[k])
        assert agree.max_rel <= 1e-4 and agree.finite_mismatch == 0, (k, str(agree))
    np.testing.assert_allclose(a['extrinsics'], b['extrinsics'], rtol=1e-4, atol=1e-5)
    frames = []
    for eng in (ort, ref):
        path = DA3FramePath(eng, 'nested')
        frames.append(path(rgb, path.intrinsics(K_CAM), FrameOptions(nested_focal_rescale=True)))
    fin = np.isfinite(frames[1].depth)
    assert np.array_equal(fin, np.isfinite(frames[0].depth)) and fin.mean() > 0.5
    np.testing.assert_allclose(frames[0].depth[fin], frames[1].depth[fin], rtol=1e-3)
    ort.close()
    ref.close()
