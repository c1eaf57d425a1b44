"""Launch arguments -> node parameters: only what the user gave, typed, in a file rcl reads right.

The launch files declare every parameter argument with the default '' ("not given"), so the config
file's values hold unless an argument is given on the command line. A given argument is converted
to the parameter's declared type (bool/int/float/str, from the node's ParamSpec tables) and written
to a parameters file in which every string is double-quoted: rcl's YAML parser reads a bare `inf`,
`nan`, `on`, `1e3` as a number or a bool (launch_ros's own dict parameters are dumped bare by
PyYAML, so `sky_mode: inf` would reach the node as a double). No launch or rclpy import here.
"""
from __future__ import annotations

import json
import math
import tempfile

_TRUE, _FALSE = ('true', 'yes', '1'), ('false', 'no', '0')


def typed_value(name: str, text: str, kind: type):
    """`text` (a launch argument) as a `kind` value; ValueError naming the argument otherwise."""
    try:
        if kind is bool:
            low = text.strip().lower()
            if low in _TRUE or low in _FALSE:
                return low in _TRUE
            raise ValueError('expected true or false')
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        return text
    except ValueError as exc:
        raise ValueError(f'launch argument {name}:={text!r} is not of type {kind.__name__} '
                         f'({exc}); give one or leave it out to keep the config file value'
                         ) from None


def given_overrides(raw: dict[str, str], types: dict[str, type]) -> dict:
    """The non-empty launch arguments of `raw` (name -> text), converted with `types`."""
    return {name: typed_value(name, text, types[name]) for name, text in raw.items() if text != ''}


def yaml_scalar(value) -> str:
    """One YAML scalar that rcl's parser reads back with the same type and value."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)           # nan / inf / -inf: rcl reads these as doubles
        text = repr(value)
        return text if any(c in text for c in '.en') else text + '.0'
    if isinstance(value, str):
        return json.dumps(value)         # double-quoted: always a string for rcl
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return '[' + ', '.join(json.dumps(v) for v in value) + ']'    # a string array
    raise TypeError(f'parameter value {value!r} of type {type(value).__name__} is not supported')


def params_yaml(params: dict) -> str:
    """Text of a ROS 2 parameters file applying `params` to every node of the process."""
    lines = ['/**:', '  ros__parameters:']
    lines += [f'    {name}: {yaml_scalar(value)}' for name, value in params.items()]
    return '\n'.join(lines) + '\n'


def write_params_file(params: dict, prefix: str = 'tt_depth_ros_launch_') -> str:
    """Write `params` (see params_yaml) to a temporary file and return its path.

    The file is kept, like launch_ros's own generated parameter files (a respawned node reads it).
    """
    with tempfile.NamedTemporaryFile('w', prefix=prefix, suffix='.yaml', delete=False) as f:
        f.write(params_yaml(params))
        return f.name


def spec_types(*spec_groups) -> dict[str, type]:
    """Parameter name -> Python type of its default, from ParamSpec sequences."""
    return {s.name: type(s.default) for group in spec_groups for s in group}
