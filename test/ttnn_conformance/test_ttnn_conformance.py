"""Conformance with the real ttnn 0.81.1 wheel (side py3.12 venv, cached in .venv-ttnn/).

Checks every ttnn name/call of the engines and the stand-in's signatures and host conversions
(devtools/ttnn/conformance/check.py). Skips loudly only when no python3.12 exists. A
deliberately wrong usage and a deliberately wrong stand-in default must be reported.
"""
import os
import types

import pytest

from devtools.ttnn import standin
from devtools.ttnn.conformance import check


@pytest.fixture(scope='module')
def side_python():
    try:
        return check.ensure_venv()
    except check.ConformanceUnavailable as e:
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(f'ttnn conformance cannot run in CI: {e}')
        pytest.skip(f'!!! ttnn CONFORMANCE NOT RUN: {e} !!!')


def test_engine_and_standin_conform_to_ttnn_0_81_1(side_python):
    problems, summary = check.run(py=side_python)
    print(summary)
    assert summary['ttnn_version'] == "'0.81.1'" or '0.81.1' in str(summary['ttnn_version'])
    assert summary['names'] > 30 and summary['calls'] > 60, summary   # the scan found the engine
    assert problems == []


def test_wrong_usage_fails_loudly(side_python):
    usage = {'layer_norm': {'calls': [(1, ['eps', 'weight'], 'fake.py:1')], 'attr': False},
             'linear': {'calls': [(3, [], 'fake.py:2')], 'attr': False},
             'no_such_op': {'calls': [(1, [], 'fake.py:3')], 'attr': False}}
    problems, _ = check.run(usage=usage, py=side_python)
    text = '\n'.join(problems)
    assert "fake.py:1: ttnn.layer_norm" in text and "'eps'" in text
    assert 'fake.py:2: ttnn.linear' in text and 'positional' in text
    assert 'ttnn.no_such_op: used by the engine but absent' in text


def test_wrong_standin_default_fails_loudly(side_python):
    def layer_norm(input_tensor, *, epsilon=1e-5, weight=None, bias=None):   # eps drifted
        raise AssertionError('not called')

    def sdpa(input_tensor_q, input_tensor_k, input_tensor_v, *, attn_mask=None,
             is_causal=False, scale=None):                                    # causal drifted
        raise AssertionError('not called')
    fake = types.SimpleNamespace(**{n: getattr(standin, n) for n in standin.__all__})
    fake.layer_norm = layer_norm
    fake.transformer = types.SimpleNamespace(scaled_dot_product_attention=sdpa)
    usage = {'layer_norm': {'calls': [(1, ['epsilon'], 'x.py:1')], 'attr': False},
             'transformer.scaled_dot_product_attention': {
                 'calls': [(3, ['is_causal'], 'x.py:2')], 'attr': False}}
    problems, _ = check.run(usage=usage, standin=fake, py=side_python)
    text = '\n'.join(problems)
    assert 'epsilon: default 1e-05 vs real 1e-12' in text
    assert 'is_causal: default False vs real True' in text
