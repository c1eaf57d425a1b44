"""Config files and launch-argument overrides as rcl's own YAML parser (C) reads them.

PyYAML is not what the node sees: rcl reads a bare `inf`, `nan`, `on`, `yes`, `1e3` as a number or a
bool, and a parameter declared as a string then fails with "expecting type 'STRING'". Here the
files are parsed by rcl (rclpy.init --params-file) and declared exactly as the nodes declare them
(ParamTable with the nodes' ParamSpecs): no declare error, no range/choice error, the intended
values. Needs only rclpy (no launch system).
"""
import itertools

import pytest
import rclpy
import yaml
from rclpy.parameter import Parameter

from support.procs import ROOT
from tt_depth_ros.ros.depth.params import DEPTH_NODE_PARAMS, DepthParams
from tt_depth_ros.ros.pair.params import PAIR_NODE_PARAMS, PairParams
from tt_depth_ros.ros.runtime.params import ParamTable
from tt_depth_ros.ros.runtime.process.launch_overrides import (
    given_overrides,
    params_yaml,
    typed_value,
)

pytestmark = pytest.mark.ros
DEPTH_SPECS = list(DEPTH_NODE_PARAMS)
PAIR_SPECS = list(PAIR_NODE_PARAMS)
_names = itertools.count()


def rcl_read(path, specs=None, values_type=None):
    """(values as rcl parsed `path`, errors of declaring `specs` on them like the nodes do)."""
    ctx = rclpy.Context()
    rclpy.init(args=['--ros-args', '--params-file', str(path)], context=ctx)
    try:
        if specs is None:       # no declarations: what rcl made of each value, type included
            # (read from the node's overrides: rclpy cannot declare an empty list, which rcl
            # reads without an element type; the nodes declare it as a string array)
            node = rclpy.create_node(f'rcl_probe_{next(_names)}', context=ctx)
            params = node._parameter_overrides
            values = {n: p.value for n, p in params.items()}
            types = {n: p.type_ for n, p in params.items()}
            node.destroy_node()
            return values, types
        node = rclpy.create_node(f'rcl_probe_{next(_names)}', context=ctx)
        table = ParamTable(node, values_type)
        for spec in specs:
            table.declare(spec)
        errors = table.read()
        values = {k: list(v) if isinstance(v, tuple) else v
                  for k, v in table.values.as_dict().items()}   # string arrays: YAML lists
        node.destroy_node()
        return values, errors
    finally:
        rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize('name, specs, values_type', [('depth.yaml', DEPTH_SPECS, DepthParams),
                                                      ('pair.yaml', PAIR_SPECS, PairParams)])
def test_config_file_declares_cleanly_through_rcl(name, specs, values_type):
    path = ROOT / 'config' / name
    values, errors = rcl_read(path, specs, values_type)
    assert errors == [], f'config/{name} as rcl reads it: {errors}'
    intended = yaml.safe_load(path.read_text())['/**']['ros__parameters']
    assert set(intended) <= {s.name for s in specs}, f'config/{name} sets undeclared parameters'
    assert {k: values[k] for k in intended} == intended


@pytest.mark.parametrize('name', ['depth.yaml', 'pair.yaml'])
def test_config_file_types_as_rcl_reads_them_match_the_declarations(name):
    specs = {s.name: s for s in DEPTH_SPECS + PAIR_SPECS}
    _, types = rcl_read(ROOT / 'config' / name)
    wanted = {bool: {Parameter.Type.BOOL}, int: {Parameter.Type.INTEGER},
              float: {Parameter.Type.DOUBLE}, str: {Parameter.Type.STRING},
              # a string array; an empty YAML list has no element type in rcl
              tuple: {Parameter.Type.STRING_ARRAY, Parameter.Type.NOT_SET}}
    wrong = {n: t.name for n, t in types.items()
             if n in specs and t not in wanted[type(specs[n].default)]}
    assert not wrong, f'config/{name}: rcl reads these with the wrong type: {wrong}'


def _choice_specs():
    seen = {}
    for spec in DEPTH_SPECS + PAIR_SPECS:
        if isinstance(spec.default, str) and spec.choices:
            seen[spec.name] = spec
    return list(seen.values())


@pytest.mark.parametrize('spec', _choice_specs(), ids=lambda s: s.name)
def test_every_string_choice_survives_launch_overrides_and_rcl(tmp_path, spec):
    """Each choice value, given as a launch argument, reaches rcl as that string."""
    path = tmp_path / 'choices.yaml'
    for value in spec.choices:
        path.write_text(params_yaml(given_overrides({spec.name: value}, {spec.name: str})))
        values, types = rcl_read(path)
        assert (values[spec.name], types[spec.name]) == (value, Parameter.Type.STRING), (
            f'{spec.name}:={value} reaches the node as {types[spec.name].name} '
            f'{values[spec.name]!r}')


def test_overrides_keep_types_rcl_would_otherwise_guess_wrong(tmp_path):
    tricky = {'s_inf': 'inf', 's_nan': 'nan', 's_on': 'on', 's_yes': 'yes', 's_exp': '1e3',
              's_true': 'true', 's_null': '~', 's_empty': '', 's_quote': "it's \"q\" \\ x",
              'b': True, 'i': -3, 'f': 2.0, 'f_big': 1e20, 'f_inf': float('inf')}
    path = tmp_path / 'tricky.yaml'
    path.write_text(params_yaml(tricky))
    values, types = rcl_read(path)
    assert {k: values[k] for k in tricky} == tricky
    assert all(types[k] == Parameter.Type.STRING for k in tricky if k.startswith('s_'))
    assert (types['b'], types['i'], types['f'], types['f_inf']) == (
        Parameter.Type.BOOL, Parameter.Type.INTEGER, Parameter.Type.DOUBLE, Parameter.Type.DOUBLE)


def test_launch_argument_text_is_typed_or_refused_by_name():
    assert given_overrides({'a': 'TRUE', 'b': '', 'c': '7', 'd': '0.5', 'e': 'x'},
                           {'a': bool, 'b': int, 'c': int, 'd': float, 'e': str}) == {
        'a': True, 'c': 7, 'd': 0.5, 'e': 'x'}                 # '' = not given: left out
    with pytest.raises(ValueError, match=r"device_id:='zero' is not of type int"):
        typed_value('device_id', 'zero', int)
    with pytest.raises(ValueError, match=r"autostart:='maybe' is not of type bool"):
        typed_value('autostart', 'maybe', bool)
