"""The depth node's parameter file (config/depth.yaml) for `tt-depth-batch`: same names, defaults.

Values are checked by the node's own table (ros/runtime/common_params.py + ros/depth/node.py
DEPTH_PARAMS: type, range, choices) and its cross-parameter check, so a file the node accepts is
accepted here with the same meaning, and one the node would refuse at configure is refused before
any bag is read. The file may hold the `/**` section and/or one node's section (merged in file
order, as rcl applies them to one node).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from tt_depth_ros.ros.depth.node import DEPTH_PARAMS, validate_depth_params
from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS

#: rclpy parameters every node has; meaningless offline (bag stamps are used), accepted.
IGNORED = ('use_sim_time',)


class ParamsFileError(ValueError):
    """A parameter file the depth node would not accept (the message says what to fix)."""


def depth_specs() -> dict:
    """{name: ParamSpec} of the depth node, in declaration order."""
    return {s.name: s for s in COMMON_PARAMS + DEPTH_PARAMS}


def _sections(doc, path: Path) -> dict:
    if not isinstance(doc, dict):
        raise ParamsFileError(f'{path}: not a ROS 2 parameter file (expected a mapping of node '
                              "names to 'ros__parameters')")
    nodes = {k: v['ros__parameters'] for k, v in doc.items()
             if isinstance(v, dict) and isinstance(v.get('ros__parameters'), dict)}
    if not nodes:
        raise ParamsFileError(f"{path}: no '<node>: ros__parameters:' section; see "
                              'config/depth.yaml')
    named = [k for k in nodes if k != '/**']
    if len(named) > 1:
        raise ParamsFileError(f'{path}: parameters for several nodes {named}; tt-depth-batch '
                              'runs one depth node: keep one section (or /**)')
    merged = {}
    for values in nodes.values():
        merged.update(values)
    return merged


def load_depth_params(path: str | Path | None, overrides: dict | None = None) -> dict:
    """The depth node's parameter values: defaults, then the file, then `overrides`.

    Raises:
        ParamsFileError: unreadable file, unknown name, wrong type, value out of range or a
            cross-parameter error, each naming the parameter and the file.
    """
    specs = depth_specs()
    values = {name: s.default for name, s in specs.items()}
    given: dict = {}
    where = 'defaults'
    if path is not None:
        path = Path(path)
        where = str(path)
        try:
            doc = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ParamsFileError(f'cannot read parameter file {path}: {exc}') from None
        given.update(_sections(doc, path))
    given.update(overrides or {})
    errors = []
    for name, value in given.items():
        if name in IGNORED:
            continue
        spec = specs.get(name)
        if spec is None:
            errors.append(f'{name}: not a depth node parameter')
            continue
        if type(value) is not type(spec.default):
            errors.append(f'{name}={value!r}: must be {type(spec.default).__name__} like its '
                          f'default {spec.default!r} (the node refuses it too)')
            continue
        err = spec.check(value)
        if err:
            errors.append(err)
        values[name] = value
    if not errors:
        errors = validate_depth_params(values)
    if errors:
        raise ParamsFileError(f'parameters ({where}): ' + '; '.join(errors))
    return values
