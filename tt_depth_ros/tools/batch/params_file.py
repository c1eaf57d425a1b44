"""A node's parameter file (config/depth.yaml, config/pair.yaml) for `tt-depth-batch`.

Values are checked by the node's own table (ros/depth/params.py DEPTH_NODE_PARAMS or
ros/pair/params.py PAIR_NODE_PARAMS: type, range, choices) and its cross-parameter check, and come
back as that node's frozen values type (DepthParams, PairParams), so a file the node accepts is
accepted here with the same meaning, and one the node would refuse at configure is refused before
any bag is read. The file may hold the `/**` section and/or one node's section (merged in file
order, as rcl applies them to one node). Which node the file is for: the pair node when its section
is named `pair_node`, it sets a pair-node-only parameter (`mode`, `network_size`, ...) or a DUSt3R
model; else the depth node.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from tt_depth_ros.ros.depth.params import DEPTH_NODE_PARAMS, DepthParams, validate_depth_params
from tt_depth_ros.ros.pair.params import (
    DUST3R_MODELS,
    PAIR_NODE_PARAMS,
    PairParams,
    validate_pair_params,
)

#: rclpy parameters every node has; meaningless offline (bag stamps are used), accepted.
IGNORED = ('use_sim_time',)


class ParamsFileError(ValueError):
    """A parameter file the depth node would not accept (the message says what to fix)."""


NODES = ('depth', 'pair')


def depth_specs() -> dict:
    """{name: ParamSpec} of the depth node, in declaration order."""
    return {s.name: s for s in DEPTH_NODE_PARAMS}


def pair_specs() -> dict:
    """{name: ParamSpec} of the pair node (its common defaults applied), in declaration order."""
    return {s.name: s for s in PAIR_NODE_PARAMS}


def node_of(sections: dict, given: dict) -> str:
    """'pair' or 'depth': which node a parameter file is for (see the module docstring)."""
    pair_only = set(pair_specs()) - set(depth_specs())
    depth_only = set(depth_specs()) - set(pair_specs())
    named = {k.rsplit('/', 1)[-1] for k in sections if k != '/**'}
    if 'pair_node' in named or set(given) & pair_only or given.get('model') in DUST3R_MODELS:
        mixed = sorted(set(given) & depth_only)
        if mixed:
            raise ParamsFileError(f'pair node parameters (e.g. {sorted(set(given) & pair_only)}) '
                                  f'beside depth node ones {mixed}: one file is for one node')
        return 'pair'
    return 'depth'


def _sections(doc, path: Path) -> tuple[dict, dict]:
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
    return nodes, merged


def load_depth_params(path: str | Path | None, overrides: dict | None = None) -> DepthParams:
    """The depth node's parameter values: defaults, then the file, then `overrides`.

    Raises:
        ParamsFileError: see `load_node_params`; also a file for the pair node.
    """
    node, values = load_node_params(path, overrides)
    if node != 'depth':
        raise ParamsFileError(f'{path}: parameters of the pair node, not the depth node')
    return values


def load_node_params(path: str | Path | None, overrides: dict | None = None,
                     node: str | None = None) -> tuple[str, DepthParams | PairParams]:
    """(node, values): which node the file is for and its values (defaults, file, `overrides`).

    `node` forces 'depth' or 'pair'; None = decided by the file (module docstring), no file =
    the depth node.

    Raises:
        ParamsFileError: unreadable file, unknown name, wrong type, value out of range or a
            cross-parameter error, each naming the parameter and the file.
    """
    given: dict = {}
    sections: dict = {}
    where = 'defaults'
    if path is not None:
        path = Path(path)
        where = str(path)
        try:
            doc = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ParamsFileError(f'cannot read parameter file {path}: {exc}') from None
        sections, merged = _sections(doc, path)
        given.update(merged)
    given.update(overrides or {})
    node = node or node_of(sections, given)
    specs, validate, values_type = (
        (depth_specs(), validate_depth_params, DepthParams) if node == 'depth' else
        (pair_specs(), validate_pair_params, PairParams))
    values = {name: s.default for name, s in specs.items()}
    errors = []
    for name, value in given.items():
        if name in IGNORED:
            continue
        spec = specs.get(name)
        if spec is None:
            errors.append(f'{name}: not a {node} node parameter')
            continue
        if spec.is_list and isinstance(value, list):
            value = tuple(value)     # a YAML list of a string-array parameter
        if type(value) is not type(spec.default):
            errors.append(f'{name}={value!r}: must be {type(spec.default).__name__} like its '
                          f'default {spec.default!r} (the node refuses it too)')
            continue
        err = spec.check(value)
        if err:
            errors.append(err)
        values[name] = value
    if not errors:
        values = values_type(**values)
        errors = validate(values)
    if errors:
        raise ParamsFileError(f'{node} node parameters ({where}): ' + '; '.join(errors))
    return node, values
