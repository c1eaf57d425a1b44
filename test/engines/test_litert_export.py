"""`tt-depth export --format litert` on the tiny any-view config (DA3-SMALL's code paths).

One conversion (module fixture, fp32 and the fp16 file from it) is checked for: the sidecar's
content, the static mobile-GPU check (no GATHER_ND / TRANSPOSE_CONV / BROADCAST_TO, nothing over
4-D; the align_corners=True resizes counted and stated; LiteRT's analyzer verdict), the parity of
the ai-edge-litert interpreter (XNNPACK) with the torch-cpu fp32 engine on the export input and on
the golden image (depth PCC >= 0.9995 fp32; fp16 reported, >= 0.999; every output, depth,
confidence and cameras, within the exporter's magnitude tolerances), the fp16 file's float16
weights and size. The checker itself is shown to fail on a file that holds what the delegate
rejects. Bad input (size not a multiple of 14, NESTED, DUSt3R, a missing converter package, an
--out whose sidecar name another format's file holds) is a clear message, never a traceback.
DA3-SMALL itself is converted by benchmarks/bench_edge_export.py (too slow for the suite).
"""
import json
import sys

import numpy as np
import pytest

from support.da3_fixtures import anyview_png, anyview_state_dict, write_safetensors
from tt_depth_ros.engines.export.graph import TOLERANCES
from tt_depth_ros.engines.export.litert_da3 import PCC_GATES, export_da3_litert, tflite_outputs
from tt_depth_ros.engines.export.tflite_ops import gpu_delegate_check
from tt_depth_ros.engines.factory import build_engine
from tt_depth_ros.engines.parity import compare_maps, pcc
from tt_depth_ros.engines.weights import sha256_file
from tt_depth_ros.tools.cli.main import main as tt_depth

MODEL = 'da3-anyview-tiny'
SIZE = (280, 504)
NAMES = ['depth', 'conf', 'intrinsics', 'extrinsics']


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    """da3-anyview-tiny at 280x504 from a weights file: (fp32 sidecar, fp16 sidecar, paths)."""
    tmp = tmp_path_factory.mktemp('litert')
    weights = write_safetensors(anyview_state_dict(), tmp / 'tiny.safetensors')
    fp32, fp16 = tmp / 'tiny_280x504.tflite', tmp / 'tiny_280x504_fp16.tflite'
    side = export_da3_litert(MODEL, SIZE, fp32, weights=str(weights), also_fp16=fp16)
    return side, json.loads(fp16.with_suffix('.json').read_text()), fp32, fp16, weights


def test_file_sidecar_and_static_gpu_check(files):
    side, _, fp32, _, weights = files
    assert json.loads(fp32.with_suffix('.json').read_text()) == {'sidecar_version': 1, **side}
    assert (side['format'], side['model'], side['kind'], side['size_hw'], side['dtype']) == (
        'litert', MODEL, 'anyview', [280, 504], 'fp32')
    assert side['input'] == {'name': 'args_0', 'shape': [1, 280, 504, 3], 'dtype': 'float32',
                             'layout': 'NHWC, RGB'}
    assert [o['name'] for o in side['outputs']] == NAMES
    assert side['weights'] == {'file': 'tiny.safetensors', 'sha256': sha256_file(weights)}
    assert side['file_sha256'] == sha256_file(fp32)
    assert {'torch', 'litert-torch', 'ai-edge-litert'} <= set(side['versions'])
    assert 'align_corners=True' in side['exporter']['resize_mode']
    check = side['gpu_delegate_check']
    assert check == gpu_delegate_check(fp32).as_dict()
    ops = check['operators']
    assert check['passed'] and check['max_rank'] <= 4 and not check['over_4d']
    assert not {'GATHER_ND', 'TRANSPOSE_CONV', 'BROADCAST_TO', 'SCATTER_ND'} & set(ops)
    assert ops['CONV_2D'] > 0 and ops['FULLY_CONNECTED'] > 0
    assert check['resize_align_corners'] == ops['RESIZE_BILINEAR'] > 0
    assert 'compatible with GPU delegate' in check['analyzer_verdict']
    par = side['parity']
    assert par['passed'] and par['outputs']['depth']['pcc'] >= PCC_GATES['fp32']
    assert list(par['outputs']) == NAMES                    # every output the file returns
    for name, fig in par['outputs'].items():
        assert fig['passed'] and fig['max_rel'] <= TOLERANCES['fp32']['map_max_rel'], (name, fig)


def test_interpreter_matches_torch_on_the_golden_image(files):
    _, _, fp32, fp16, _ = files
    ref = build_engine(MODEL, dtype='float32', backend='torch-cpu', state_dict=anyview_state_dict())
    img = anyview_png('scene0_280x504_view0.png')
    want = ref.infer(img)
    ref.close()
    got = tflite_outputs(fp32, img, NAMES)
    for k in NAMES:
        assert got[k].shape == want[k].shape, k
    assert pcc(got['depth'], want['depth']) >= PCC_GATES['fp32']
    np.testing.assert_allclose(got['depth'], want['depth'], rtol=1e-4,
                               atol=1e-5 * np.abs(want['depth']).max())
    np.testing.assert_allclose(got['intrinsics'], want['intrinsics'], rtol=1e-4)
    np.testing.assert_allclose(got['extrinsics'], want['extrinsics'], rtol=1e-4, atol=1e-5)
    half = tflite_outputs(fp16, img, NAMES)
    assert pcc(half['depth'], want['depth']) >= PCC_GATES['fp16']
    # every output by magnitude on another image than the export's, at the exporter's stated
    # tolerances (engines/export/graph.TOLERANCES): max |diff| / max |torch|, depth and conf
    # (after its exp + 1) also the median per-pixel relative error
    for dtype, outs in (('fp32', got), ('fp16', half)):
        tol = TOLERANCES[dtype]
        for k in NAMES:
            agree = compare_maps(want[k], outs[k])
            bound = tol['camera_max_rel'] if k in ('intrinsics', 'extrinsics') else \
                tol['map_max_rel']
            assert agree.max_rel <= bound and agree.finite_mismatch == 0, (dtype, k, str(agree))
            if k in ('depth', 'conf'):
                assert agree.median_rel <= tol['map_median_rel'], (dtype, k, str(agree))


def test_fp16_file_holds_float16_weights(files):
    side, half, fp32, fp16, _ = files
    assert half['dtype'] == 'fp16' and half['weights'] == side['weights']
    check, full = half['gpu_delegate_check'], side['gpu_delegate_check']
    assert check['passed'] and 'FLOAT16' in check['tensor_types']
    n = full['operators']['CONV_2D'] + full['operators']['FULLY_CONNECTED']
    assert check['float16_weights'].startswith(f'{n} of {n} ')    # every one
    assert full['float16_weights'].startswith(f'0 of {n} ') and 'FLOAT16' not in full[
        'tensor_types']
    assert check['operators']['DEQUANTIZE'] >= n
    # the weights halve; the per-size constants (UV embeddings, pos-embed) stay float32
    assert fp16.stat().st_size < fp32.stat().st_size - 0.9e6
    par = half['parity']
    assert par['passed'] and PCC_GATES['fp16'] <= par['outputs']['depth']['pcc'] < 1.0
    assert list(par['outputs']) == NAMES and all(f['passed'] for f in par['outputs'].values())


def test_gpu_check_fails_on_what_the_delegate_rejects(files, tmp_path):
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    _, _, fp32, _, _ = files
    model = flatbuffer_utils.read_model(str(fp32))
    codes = model.operatorCodes
    conv = next(i for i, c in enumerate(codes)
                if max(c.builtinCode, c.deprecatedBuiltinCode) == schema.BuiltinOperator.CONV_2D)
    codes[conv].builtinCode = schema.BuiltinOperator.TRANSPOSE_CONV
    codes[conv].deprecatedBuiltinCode = schema.BuiltinOperator.TRANSPOSE_CONV
    model.subgraphs[0].tensors[1].shape = np.array([1, 2, 3, 4, 5], np.int32)
    bad = tmp_path / 'bad.tflite'
    flatbuffer_utils.write_model(model, str(bad))
    check = gpu_delegate_check(bad)
    assert not check.passed
    assert check.rejected_ops['TRANSPOSE_CONV'] > 0 and check.max_rank == 5 and check.over_4d


def test_bad_input_is_a_clear_message(capsys, tmp_path, monkeypatch):
    out = str(tmp_path / 'x.tflite')
    rc = tt_depth(['export', '--model', MODEL, '--size', '280x500', '--format', 'litert',
                   '--out', out])
    err = capsys.readouterr().err
    assert rc == 1 and 'width 500 (nearest: 490 or 504)' in err and 'Traceback' not in err
    rc = tt_depth(['export', '--model', 'da3nested-giant-large-1.1', '--size', '280x504',
                   '--format', 'litert', '--out', out])
    err = capsys.readouterr().err
    assert rc == 1 and 'NESTED' in err and 'Traceback' not in err
    rc = tt_depth(['export', '--model', 'da3-giant-1.1', '--size', '280x504', '--format',
                   'litert', '--out', out])   # refused before any weights are looked for
    err = capsys.readouterr().err
    assert rc == 1 and '4.49 GiB of fp32 weights' in err and '--format onnx' in err
    assert 'Traceback' not in err
    with pytest.raises(SystemExit) as e:   # argparse: DUSt3R is no export choice
        tt_depth(['export', '--model', 'dust3r-vitl-512-dpt', '--size', '280x504', '--format',
                  'litert', '--out', out])
    assert e.value.code == 2 and "invalid choice: 'dust3r-vitl-512-dpt'" in capsys.readouterr().err
    with pytest.raises(ValueError, match='not a DA3 model.*DUSt3R pairs are not exported'):
        export_da3_litert('dust3r-vitl-512-dpt', SIZE, out)
    rc = tt_depth(['export', '--model', MODEL, '--size', '280x504', '--format', 'litert',
                   '--out', str(tmp_path / 'x.onnx')])
    assert rc == 1 and 'must end in .tflite' in capsys.readouterr().err
    (tmp_path / 'm.onnx').write_bytes(b'')
    (tmp_path / 'm.json').write_text(json.dumps({'format': 'onnx'}))
    with pytest.raises(ValueError, match=r'm.json is the sidecar of .*m.onnx \(onnx\).*m_litert'):
        export_da3_litert(MODEL, SIZE, tmp_path / 'm.tflite')
    monkeypatch.setitem(sys.modules, 'litert_torch', None)
    rc = tt_depth(['export', '--model', MODEL, '--size', '280x504', '--format', 'litert',
                   '--out', out])
    err = capsys.readouterr().err
    assert rc == 1 and 'needs the Python package(s) litert-torch' in err
    assert 'requirements/litert.txt' in err and 'Traceback' not in err
