"""config/depth.yaml agrees with the node's declared parameters.

The YAML must list every declared parameter except the engine plugin ones (tests and integration
only), with values the node accepts. The launch files themselves run in test/launch (depth.launch.py
and multi_camera.launch.py through `ros2 launch`: executable, config file, remapped topics,
compressed input, autostart and lifecycle).
"""
from pathlib import Path

import yaml

from tt_depth_ros.ros.depth.params import DEPTH_NODE_PARAMS

ROOT = Path(__file__).resolve().parents[3]
TEST_ONLY = {'engine_plugin', 'engine_plugin_args'}


def test_yaml_matches_declared_parameters():
    doc = yaml.safe_load((ROOT / 'config' / 'depth.yaml').read_text())
    values = doc['/**']['ros__parameters']
    specs = {s.name: s for s in DEPTH_NODE_PARAMS}
    assert set(values) == set(specs) - TEST_ONLY
    for name, value in values.items():
        spec = specs[name]
        if spec.is_list:      # a YAML list, declared as a string array
            value = tuple(value)
        assert type(value) is type(spec.default), name
        assert spec.check(value) is None, name
        assert value == spec.default, f'{name}: yaml {value!r} != default {spec.default!r}'
