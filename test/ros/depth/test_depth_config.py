"""config/depth.yaml and the launch files agree with the node's declared parameters and topics.

The launch and launch_ros packages are not installable here, so the launch files are compiled
(syntax) and their text checked for the executable, config file and topic names; the YAML must list
every declared parameter except the engine plugin ones (tests and integration only), with values
the node accepts.
"""
from pathlib import Path

import pytest
import yaml

from tt_depth_ros.ros.depth.node import DEPTH_PARAMS
from tt_depth_ros.ros.runtime.lifecycle_node import COMMON_PARAMS

ROOT = Path(__file__).resolve().parents[3]
TEST_ONLY = {'engine_plugin', 'engine_plugin_args'}


def test_yaml_matches_declared_parameters():
    doc = yaml.safe_load((ROOT / 'config' / 'depth.yaml').read_text())
    values = doc['/**']['ros__parameters']
    specs = {s.name: s for s in COMMON_PARAMS + DEPTH_PARAMS}
    assert set(values) == set(specs) - TEST_ONLY
    for name, value in values.items():
        spec = specs[name]
        assert type(value) is type(spec.default), name
        assert spec.check(value) is None, name
        assert value == spec.default, f'{name}: yaml {value!r} != default {spec.default!r}'


@pytest.mark.parametrize('name', ['depth.launch.py', 'multi_camera.launch.py'])
def test_launch_files_compile_and_reference_the_node(name):
    text = (ROOT / 'launch' / name).read_text()
    compile(text, name, 'exec')
    for needle in ("executable='depth_node'", "'depth.yaml'", 'LifecycleNode', "'image'",
                   "'camera_info'", "'image/compressed'", 'autostart'):
        assert needle in text, needle

