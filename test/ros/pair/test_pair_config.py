"""config/pair.yaml and launch/pair.launch.py agree with the parameters the pair node declares."""
import ast
from pathlib import Path

import yaml

from tt_depth_ros.ros.pair.node import PairNode
from tt_depth_ros.ros.pair.params import PAIR_PARAMS
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS

ROOT = Path(__file__).resolve().parents[3]
SPECS = {s.name: s for s in COMMON_PARAMS + PAIR_PARAMS}


def test_pair_yaml_keys_are_declared_with_matching_types_and_defaults():
    values = yaml.safe_load((ROOT / 'config' / 'pair.yaml').read_text())['/**']['ros__parameters']
    for key, value in values.items():
        assert key in SPECS, f'config/pair.yaml sets undeclared parameter {key!r}'
        spec = SPECS[key]
        default = PairNode.COMMON_DEFAULTS.get(key, spec.default)
        assert type(value) is type(default), (key, value, default)
        assert spec.check(value) is None
        assert value == default, f'{key}: yaml {value!r} != node default {default!r}'


def _subscribed_topics() -> set[str]:
    """First (topic) arguments of every subscribe call in the pair package's sources."""
    calls = ('subscribe_image', 'subscribe_camera_info', 'create_subscription')
    topics = set()
    for path in sorted((ROOT / 'tt_depth_ros' / 'ros' / 'pair').glob('*.py')):
        for n in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and n.func.attr in calls:
                args = [a for a in n.args if isinstance(a, ast.Constant)
                        and isinstance(a.value, str)]
                topics.update(a.value for a in args[:1])
    return topics


def test_launch_file_remaps_only_topics_the_node_subscribes():
    src = (ROOT / 'launch' / 'pair.launch.py').read_text()
    node_src = '\n'.join(p.read_text()
                         for p in sorted((ROOT / 'tt_depth_ros' / 'ros' / 'pair').glob('*.py')))
    tree = ast.parse(src)
    remapped = {n.elts[0].value for n in ast.walk(tree) if isinstance(n, ast.Tuple)
                and len(n.elts) == 2 and isinstance(n.elts[0], ast.Constant)
                and isinstance(n.elts[0].value, str) and ('image' in n.elts[0].value
                                                         or 'camera_info' in n.elts[0].value)}
    assert remapped == {'camera1/image', 'camera1/camera_info', 'camera2/image',
                        'camera2/camera_info', 'image', 'camera_info'}
    subscribed = _subscribed_topics()
    for topic in remapped:
        assert f"'{topic}'" in node_src
        assert topic in subscribed, f'{topic!r} is remapped but the pair node never subscribes it'

