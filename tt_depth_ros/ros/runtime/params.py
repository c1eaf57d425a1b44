"""Declared-once node parameters with descriptors, ranges, choices and a configure-time policy.

Every parameter is declared in the node constructor with a ParameterDescriptor (description,
integer/float range, read_only). A value given on the command line that violates its range or
type is not allowed to raise from the constructor: it is recorded and reported by `on_configure`
as a FAILURE naming the parameter. Parameters are either *runtime* (may change while active,
validated when set) or *configure-time* (read in `on_configure`; while configured a change is
refused with a message saying to clean up first). Read-only parameters (e.g. `autostart`) are
refused by rclpy itself with "read-only".

The values travel as one frozen object per node type (`params_type`: a dataclass generated from
the node's table, `DepthParams`, `PairParams`), replaced as a whole when a runtime parameter
changes: a frame reads one consistent snapshot, `p.sky_mode`, never a half-updated dict.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.parameter import Parameter


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: default, doc, constraints and when it may change."""

    name: str
    default: object
    description: str
    choices: tuple = ()
    int_range: tuple | None = None      # (lo, hi)
    float_range: tuple | None = None    # (lo, hi)
    runtime: bool = False
    read_only: bool = False

    @property
    def is_list(self) -> bool:
        """A string-array parameter (its default is a tuple, usually empty)."""
        return isinstance(self.default, tuple)

    def check(self, value) -> str | None:
        """Error text if `value` is not allowed, else None."""
        if self.is_list:
            if not all(isinstance(v, str) for v in value):
                return f'{self.name}={value!r} must be a list of strings'
            return None
        if self.choices and value not in self.choices:
            return f'{self.name}={value!r} is not one of {list(self.choices)}'
        rng = self.int_range or self.float_range
        if rng is not None and not (rng[0] <= value <= rng[1]):
            return f'{self.name}={value!r} is outside [{rng[0]}, {rng[1]}]'
        return None

    def descriptor(self) -> ParameterDescriptor:
        """The rcl ParameterDescriptor carrying the description, range and read-only flag."""
        when = ('read-only (startup only)' if self.read_only else
                'runtime' if self.runtime else 'configure-time (cleanup, set, configure)')
        extra = f' One of {list(self.choices)}.' if self.choices else ''
        d = ParameterDescriptor(name=self.name, description=f'{self.description}{extra} [{when}]',
                                read_only=self.read_only)
        if self.is_list:
            d.type = ParameterType.PARAMETER_STRING_ARRAY
        if self.int_range is not None:
            d.integer_range = [IntegerRange(from_value=int(self.int_range[0]),
                                            to_value=int(self.int_range[1]), step=1)]
        if self.float_range is not None:
            d.floating_point_range = [FloatingPointRange(from_value=float(self.float_range[0]),
                                                         to_value=float(self.float_range[1]),
                                                         step=0.0)]
        return d


def params_type(name: str, specs, module: str) -> type:
    """A frozen dataclass of one node's parameter values: a field per ParamSpec, its default.

    `module` is the module that binds the class under `name` (instances then pickle: tt-depth-batch
    hands them to Ray actors). `as_dict()` gives {name: value} (manifests, logs).
    """
    fields = [(s.name, type(s.default), dataclasses.field(default=s.default)) for s in specs]
    cls = dataclasses.make_dataclass(name, fields, frozen=True)
    cls.__module__, cls.__qualname__ = module, name
    cls.__doc__ = f'Parameter values of a node whose table is {", ".join(s.name for s in specs)}.'
    cls.as_dict = dataclasses.asdict
    return cls


class ParamTable:
    """Declares specs on a node, keeps the validated values and polices runtime changes.

    Args:
        node: the rclpy node that declares the parameters.
        values_type: the node's `params_type` class (one field per spec declared).
    """

    def __init__(self, node, values_type: type) -> None:
        self._node, self._type = node, values_type
        self.specs: dict[str, ParamSpec] = {}
        self.declare_errors: dict[str, str] = {}
        self.values = values_type()

    def declare(self, spec: ParamSpec) -> None:
        """Declare one parameter; a bad override is recorded (reported at configure), not raised."""
        self.specs[spec.name] = spec
        # a string array is declared by type: rclpy cannot tell an empty list's element type
        default = Parameter.Type.STRING_ARRAY if spec.is_list and not spec.default \
            else spec.default
        try:
            self._node.declare_parameter(spec.name, default, spec.descriptor())
        except (InvalidParameterValueException, InvalidParameterTypeException) as exc:
            self.declare_errors[spec.name] = (f'{spec.name}: invalid value given at startup '
                                              f'({exc}); fix it (default {spec.default!r})')
            self._node.declare_parameter(spec.name, default, spec.descriptor(),
                                         ignore_override=True)

    def _value(self, spec: ParamSpec):
        try:
            value = self._node.get_parameter(spec.name).value
        except ParameterUninitializedException:   # a string array left empty
            return spec.default
        return tuple(value) if spec.is_list else value

    def read(self) -> list[str]:
        """Read all values into `self.values`; returns error messages (empty when valid)."""
        errors = list(self.declare_errors.values())
        values = {}
        for name, spec in self.specs.items():
            value = self._value(spec)
            values[name] = value
            err = spec.check(value)
            if err:
                errors.append(err)
        self.values = self._type(**values)
        return errors

    def on_set(self, params, configured: bool) -> SetParametersResult:
        """Validate a set-parameters request: ranges/choices; configure-time ones need cleanup."""
        for p in params:
            spec = self.specs.get(p.name)
            if spec is None:
                continue
            err = spec.check(p.value)
            if err:
                return SetParametersResult(successful=False, reason=err)
            if configured and not spec.runtime:
                return SetParametersResult(
                    successful=False,
                    reason=f'{p.name} is read at configure time; deactivate and clean up the '
                           'node, set it, then configure again')
        if configured:
            changes = {p.name: p.value for p in params if p.name in self.specs}
            if changes:
                self.values = dataclasses.replace(self.values, **changes)
        return SetParametersResult(successful=True)


def params_markdown(specs) -> str:
    """Markdown table (name, default, description with range and change policy) of ParamSpecs."""
    rows = ['| parameter | default | description |', '|---|---|---|']
    for s in specs:
        rng = s.int_range or s.float_range
        extra = f' Range [{rng[0]}, {rng[1]}].' if rng else ''
        desc = s.descriptor().description.replace('|', '\\|')
        rows.append(f'| `{s.name}` | `{s.default!r}` | {desc}{extra} |')
    return '\n'.join(rows)
