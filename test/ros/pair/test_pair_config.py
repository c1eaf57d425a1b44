"""config/pair.yaml agrees with the parameters the pair node declares.

launch/pair.launch.py runs in test/launch/test_pair_launch.py (`ros2 launch`, stereo and
temporal: the remapped camera topics the node subscribes, every argument reaching the node).
"""
from pathlib import Path

import yaml

from tt_depth_ros.ros.pair.params import PAIR_NODE_PARAMS

ROOT = Path(__file__).resolve().parents[3]
SPECS = {s.name: s for s in PAIR_NODE_PARAMS}


def test_pair_yaml_keys_are_declared_with_matching_types_and_defaults():
    values = yaml.safe_load((ROOT / 'config' / 'pair.yaml').read_text())['/**']['ros__parameters']
    for key, value in values.items():
        assert key in SPECS, f'config/pair.yaml sets undeclared parameter {key!r}'
        spec = SPECS[key]
        default = spec.default
        assert type(value) is type(default), (key, value, default)
        assert spec.check(value) is None
        assert value == default, f'{key}: yaml {value!r} != node default {default!r}'
