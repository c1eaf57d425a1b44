"""The one model table (engines/registry.py).

Consistent with the model configs, torch-free, and the source of every other list (CLI choices,
pair node checks, predictors, engine details).
"""
import subprocess
import sys

import pytest

from tt_depth_ros.engines import registry as R
from tt_depth_ros.models.da3.config import ANYVIEW_CONFIGS, CONFIGS
from tt_depth_ros.models.dust3r.config import CONFIGS as DUST3R_CONFIGS
from tt_depth_ros.models.kind import ModelKind


def test_every_model_has_a_config_of_its_kind():
    for m in R.MODELS.values():
        assert m.family in R.FAMILIES and isinstance(m.kind, ModelKind), m.name
        assert m.views == (R.ANY_VIEWS if m.kind.multi_view else 2 if m.family == 'dust3r' else 1)
        if m.family == 'dust3r':
            assert m.name in DUST3R_CONFIGS and m.kind == 'pointmap'
        elif m.kind == 'nested':
            assert m.name not in CONFIGS and m.name not in ANYVIEW_CONFIGS
        else:
            assert (CONFIGS.get(m.name) or ANYVIEW_CONFIGS[m.name]).kind == m.kind
    assert set(CONFIGS) | set(ANYVIEW_CONFIGS) | set(DUST3R_CONFIGS) <= set(R.MODELS)


def test_ttnn_runs_exactly_the_models_with_a_ttnn_network():
    ttnn = {n for n, m in R.MODELS.items() if 'ttnn' in m.backends}
    assert ttnn == set(CONFIGS) | set(DUST3R_CONFIGS)
    assert all(m.backends[-2:] == ('torch-cuda', 'torch-cpu') for m in R.MODELS.values())


def test_test_configurations_and_licences():
    assert {n for n, m in R.MODELS.items() if m.test_only} == {
        'da3metric-tiny', 'da3-anyview-tiny', 'dust3r-tiny'}
    assert all(m.license for m in R.MODELS.values() if not m.test_only)
    with pytest.raises(ValueError, match="unknown model 'da3-giant'"):
        R.model('da3-giant')


TORCH_FREE_DATA = ('tt_depth_ros.models.kind', 'tt_depth_ros.models.da3',
                   'tt_depth_ros.models.da3.config', 'tt_depth_ros.engines.torch.presets')
"""Modules of models/ and engines/torch that hold data only (no torch, no network code)."""


def test_registry_imports_no_torch_and_no_model_code():
    code = (f'TORCH_FREE_DATA = {TORCH_FREE_DATA!r}; '
            'import sys, tt_depth_ros.engines.registry, tt_depth_ros.engines.licence, '
            'tt_depth_ros.ros.pair.params; '
            "print(sorted(m for m in sys.modules if m == 'torch' or (m.startswith("
            "('tt_depth_ros.models.', 'tt_depth_ros.engines.torch.')) and m not in "
            "TORCH_FREE_DATA)))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == '[]'


def test_every_model_list_is_derived_from_the_registry():
    from tt_depth_ros.pipelines.dust3r import MODELS as PAIR_API
    from tt_depth_ros.pipelines.pair_anyview import ANYVIEW_PAIR_MODELS
    from tt_depth_ros.ros.pair.params import DUST3R_MODELS
    from tt_depth_ros.tools.cli import predict_da3, predict_dust3r

    assert predict_da3.MODELS == R.names(family='da3') == (
        'da3metric-large', 'da3mono-large', 'da3-small', 'da3-base', 'da3-large-1.1',
        'da3-giant-1.1', 'da3nested-giant-large-1.1', 'da3metric-tiny', 'da3-anyview-tiny')
    assert predict_dust3r.MODELS == PAIR_API == DUST3R_MODELS == ('dust3r-vitl-512-dpt',
                                                                 'dust3r-tiny')
    assert ANYVIEW_PAIR_MODELS == ('da3-small', 'da3-base', 'da3-large-1.1', 'da3-giant-1.1',
                                   'da3nested-giant-large-1.1', 'da3-anyview-tiny')


def test_engines_report_the_registry_kind():
    from support.da3_fixtures import tiny_state_dict
    from tt_depth_ros.engines.factory import build_engine

    with build_engine('da3metric-tiny', dtype='float32', backend='torch-cpu',
                      state_dict=tiny_state_dict()) as e:
        assert e.info.details['kind'] == 'metric' and e.info.details['is_metric'] is True
