"""Imports flow one way through the package's layers, and no two modules import each other.

Layers (docs/design.md §2, each folder's `__init__.py`): models and geometry at the bottom (each
imports only itself), then engines (models, geometry), pipelines, api, ros and tools; a module
may import its own layer and the ones below it. On top of the order: geometry never imports
torch or ROS; models, engines, pipelines and api never import ROS; ros never imports torch (an
engine is built through engines/, which imports torch lazily); inside ros, ros.runtime and
ros.msgs never import a node package (ros.depth, ros.pair), and the two node packages never
import each other; inside tools, tools.eval is evaluation only (geometry and numpy), tools.cli
has no ROS, and bag -> bench -> demo import one way. Every import counts, also the ones inside
functions (a lazy import still couples the modules). The module graph has no cycle. The package
never imports development code: devtools/ (the ttnn simulator), benchmarks/ or the tests' helpers.

Every failure names the importing file, the line and what it imports.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = 'tt_depth_ros'
# layer -> the layers it may import (its own included)
MAY_IMPORT = {'models': {'models'}, 'geometry': {'geometry'}}
MAY_IMPORT['engines'] = {'engines'} | MAY_IMPORT['models'] | MAY_IMPORT['geometry']
MAY_IMPORT['pipelines'] = {'pipelines'} | MAY_IMPORT['engines']
MAY_IMPORT['api'] = {'api'} | MAY_IMPORT['pipelines']
MAY_IMPORT['ros'] = {'ros'} | MAY_IMPORT['api']
MAY_IMPORT['tools'] = {'tools'} | MAY_IMPORT['ros']
LAYERS = tuple(MAY_IMPORT)
ROS_PACKAGES = {'rclpy', 'rosidl_runtime_py', 'rcl_interfaces', 'builtin_interfaces', 'std_msgs',
                'sensor_msgs', 'geometry_msgs', 'nav_msgs', 'tf2_ros', 'tf2_msgs',
                'lifecycle_msgs', 'diagnostic_msgs', 'diagnostic_updater', 'message_filters',
                'cv_bridge', 'launch', 'launch_ros', 'visualization_msgs'}
TORCH = {'torch', 'torchvision'}
# layer -> third-party roots it never imports
NEVER_EXTERNAL = {'models': ROS_PACKAGES, 'engines': ROS_PACKAGES,
                  'geometry': ROS_PACKAGES | TORCH, 'pipelines': ROS_PACKAGES,
                  'api': ROS_PACKAGES, 'ros': TORCH}
# top-level names of the checkout's development code: never shipped (setup.py), never imported
DEVELOPMENT = {'devtools', 'benchmarks', 'support', 'conftest'}
# (importer prefix, imported prefix): a dependency the layer order allows but the design does not
NEVER_INTERNAL = [
    ('ros.runtime', 'ros.depth'), ('ros.runtime', 'ros.pair'),
    ('ros.msgs', 'ros.depth'), ('ros.msgs', 'ros.pair'),
    ('ros.depth', 'ros.pair'), ('ros.pair', 'ros.depth'),
    ('tools.eval', 'ros'), ('tools.eval', 'pipelines'), ('tools.eval', 'api'),
    ('tools.eval', 'tools.bag'), ('tools.eval', 'tools.bench'), ('tools.eval', 'tools.demo'),
    ('tools.eval', 'tools.cli'),
    ('tools.cli', 'ros'), ('tools.cli', 'tools.bag'), ('tools.cli', 'tools.bench'),
    ('tools.cli', 'tools.demo'),
    ('tools.bag', 'tools.bench'), ('tools.bag', 'tools.demo'), ('tools.bag', 'tools.cli'),
    ('tools.bench', 'tools.demo'), ('tools.bench', 'tools.cli'),
    ('tools.demo', 'tools.cli'),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


MODULES = {_module_name(p): p for p in sorted((ROOT / PACKAGE).rglob('*.py'))}


def _resolve(name: str) -> str:
    """The package module an imported name lives in (`a.b.func` -> `a.b`)."""
    while name and name not in MODULES:
        name = name.rpartition('.')[0]
    return name


@functools.cache
def _imports(module: str) -> tuple[tuple[int, str], ...]:
    """(line, imported name) of every import in `module`, relative ones made absolute."""
    path = MODULES[module]
    package = module if path.name == '__init__.py' else module.rpartition('.')[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit('.', node.level - 1)[0] if node.level > 1 else package
                target = f'{base}.{node.module}' if node.module else base
            else:
                target = node.module
            out += [(node.lineno, f'{target}.{a.name}') for a in node.names]
    return tuple(out)


def _internal(name: str) -> str | None:
    """`tt_depth_ros.ros.depth.node` -> `ros.depth.node`; None outside the package."""
    if name == PACKAGE or name.startswith(PACKAGE + '.'):
        return name[len(PACKAGE) + 1:]
    return None


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + '.')


def _layer(module: str) -> str | None:
    inner = _internal(module) or ''
    return inner.split('.')[0] if inner.split('.')[0] in LAYERS else None


def _where(module: str, line: int) -> str:
    return f'{MODULES[module].relative_to(ROOT)}:{line}'


def _violations(module: str) -> list[str]:
    bad = []
    layer = _layer(module)
    here = _internal(module) or ''
    for line, name in _imports(module):
        inner = _internal(name)
        if inner is None:
            root = name.split('.')[0]
            if root in NEVER_EXTERNAL.get(layer, ()):
                bad.append(f'{_where(module, line)}: {layer} imports {root} ({name})')
            continue
        target = _internal(_resolve(name)) or ''
        target_layer = target.split('.')[0]
        if layer and target_layer in LAYERS and target_layer not in MAY_IMPORT[layer]:
            bad.append(f'{_where(module, line)}: {layer} imports {target_layer}, a layer above it '
                       f'({name})')
        for importer, imported in NEVER_INTERNAL:
            if _within(here, importer) and _within(target, imported):
                bad.append(f'{_where(module, line)}: {importer} never imports {imported} ({name})')
    return bad


def test_every_package_folder_says_what_it_holds_and_may_import():
    bad = []
    for init in sorted((ROOT / PACKAGE).rglob('__init__.py')):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ''
        where = init.relative_to(ROOT)
        if len(doc.split()) < 8:
            bad.append(f'{where}: docstring {doc!r} does not say what lives there')
        elif init.parent.name != PACKAGE and init.parent.parent.name == PACKAGE \
                and 'import' not in doc:
            bad.append(f'{where}: docstring does not say what the layer may import')
    for folder in sorted((ROOT / PACKAGE).rglob('*')):
        if folder.is_dir() and folder.name != '__pycache__' and any(folder.glob('*.py')) \
                and not (folder / '__init__.py').is_file():
            bad.append(f'{folder.relative_to(ROOT)}: package folder without __init__.py')
    assert not bad, '\n'.join(bad)


@pytest.mark.parametrize('layer', LAYERS)
def test_imports_follow_the_layer_order(layer):
    bad = [v for m in MODULES if _layer(m) == layer for v in _violations(m)]
    assert not bad, '\n'.join(bad)


def test_the_package_never_imports_development_code():
    bad = [f'{_where(m, line)}: imports {name}, development code (never shipped)'
           for m in MODULES for line, name in _imports(m) if name.split('.')[0] in DEVELOPMENT]
    assert not bad, '\n'.join(bad)


def test_no_import_cycle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m in MODULES:
        for _, name in _imports(m):
            target = _resolve(name) if _internal(name) is not None else ''
            if target and target != m:
                graph[m].add(target)
    cycles = _cycles(graph)
    assert not cycles, 'import cycles (every import counts, also inside functions):\n' + '\n'.join(
        ' -> '.join(c + [c[0]]) for c in cycles)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_one_cycle(graph, sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first)."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return component
