"""Which node a tt-depth-batch parameter file is for, and its values by that node's own table."""
import pytest

from support.batch_runs import write_params_file
from support.procs import ROOT
from tt_depth_ros.tools.batch.params_file import ParamsFileError, load_node_params


def test_the_pair_file_is_the_pair_nodes_with_its_defaults():
    node, values = load_node_params(ROOT / 'config' / 'pair.yaml')
    assert node == 'pair'
    assert values.model == 'dust3r-vitl-512-dpt' and values.mode == 'stereo'


def test_the_node_is_told_by_section_name_model_or_own_parameter(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_text("pair_node:\n  ros__parameters:\n    conf_threshold: 2.0\n")
    assert load_node_params(path)[0] == 'pair'
    assert load_node_params(write_params_file(path, {'model': 'dust3r-tiny'}))[0] == 'pair'
    assert load_node_params(write_params_file(path, {'network_size': 224}))[0] == 'pair'
    assert load_node_params(write_params_file(path, {'process_res': 126}))[0] == 'depth'
    assert load_node_params(ROOT / 'config' / 'depth.yaml')[0] == 'depth'


def test_a_file_of_both_nodes_or_a_bad_pair_value_is_refused(tmp_path):
    mixed = write_params_file(tmp_path / 'm.yaml', {'mode': 'temporal', 'sky_mode': 'nan'})
    with pytest.raises(ParamsFileError, match=r"beside depth node ones \['sky_mode'\]"):
        load_node_params(mixed)
    bad = write_params_file(tmp_path / 'b.yaml', {'mode': 'temporal', 'scale_source': 'baseline',
                                                  'baseline_m': 0.1})
    with pytest.raises(ParamsFileError, match="scale_source='baseline' needs mode='stereo'"):
        load_node_params(bad)     # the node's own cross-parameter check
