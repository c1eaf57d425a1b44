"""benchmarks/bench_ttnn.py: reports "no device" without hardware; runs on the stand-in."""
import importlib
import json
import sys
from pathlib import Path

import pytest


def _bench():
    return importlib.import_module('benchmarks.bench_ttnn')


def test_reports_no_device(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, 'ttnn', raising=False)
    if Path('/dev/tenstorrent/0').exists():
        pytest.skip('a Tenstorrent device is present')
    assert _bench().main(['--model', 'da3metric-tiny']) == 0
    assert 'no Tenstorrent device present' in capsys.readouterr().out


def _run_on_standin(tmp_path, *args) -> dict:
    """bench_ttnn.py on the stand-in (tiny DA3, 3 frames, no node overhead) -> its JSON."""
    out = tmp_path / 'bench.json'
    assert _bench().main(['--model', 'da3metric-tiny', '--frames', '3', *args,
                          '--ttnn-module', 'devtools.ttnn.standin', '--no-node-overhead',
                          '--json', str(out)]) == 0
    return json.loads(out.read_text())


def test_runs_on_standin(ttnn, tmp_path):
    res = _run_on_standin(tmp_path, '--shape', '56x84')
    assert res['shape'] == [56, 84] and res['trace_replay_ms']['p50'] > 0
    assert set(res['stages_ms_p50']) >= {'upload', 'enqueue', 'device_and_readback'}


def test_two_command_queues_on_standin(ttnn, tmp_path):
    """--command-queues 2: the serial and the pipelined loop of the same engine, side by side."""
    res = _run_on_standin(tmp_path, '--shape', '56x84', '--command-queues', '2')
    assert res['command_queues'] == 2 and res['pipelined_ms_per_frame'] > 0
    assert set(res['pipelined_stages_ms_p50']) == {'submit', 'wait', 'readback_and_unpack',
                                                   'submit_to_collect'}


def test_camera_frames_on_standin(ttnn, tmp_path):
    """--camera: the camera frame goes up as it came and the trace of its key is replayed."""
    res = _run_on_standin(tmp_path, '--camera', '120x160', '--process-res', '112')
    assert res['camera'] == [120, 160] and res['shape'] == [84, 112]
    assert res['camera_sizes'] == [[120, 160]] and res['trace_replay_ms']['p50'] > 0
