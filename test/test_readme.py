"""The README documents the nodes' parameters, and docs/nodes.md the launch arguments, as declared.

`python test/test_readme.py` prints the launch-argument tables (docs/nodes.md "Launch files").
"""
import ast
import re
from pathlib import Path

import pytest

from tt_depth_ros.ros.depth import params as depth_params
from tt_depth_ros.ros.pair import params as pair_params

README = Path(__file__).resolve().parents[1] / 'README.md'
NODES_DOC = README.parent / 'docs' / 'nodes.md'     # the launch-argument tables
LAUNCH_DIR = README.parent / 'launch'
LAUNCH_FILES = sorted(p.name for p in LAUNCH_DIR.glob('*.launch.py'))


@pytest.mark.parametrize('tag, generate', [('depth-params', depth_params.params_markdown),
                                           ('pair-params', pair_params.params_markdown)])
def test_parameter_tables_are_current(tag, generate):
    text = README.read_text()
    found = re.search(r'<!-- %s:begin[^\n]*-->\n(.*?)<!-- %s:end -->' % (tag, tag), text, re.S)
    assert found, f'README lacks the {tag} block'
    assert found.group(1).strip() == generate().strip(), (
        f'README {tag} table is stale: regenerate it with the command in its begin marker')


def test_readme_names_both_commands_and_ci_runs_the_test_command():
    text = README.read_text()
    assert 'make demo' in text and 'make test' in text
    ci = (README.parent / '.ci' / 'run').read_text()
    assert re.search(r'^make test$', ci, re.M)


def _text(node) -> str:
    """A default_value as the user sees it (constants; the package share path substitution)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'PathJoinSubstitution':
        return '/'.join(_text(e) for e in node.args[0].elts)
    if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'FindPackageShare':
        return f'$(find-pkg-share {node.args[0].value})'
    raise ValueError(f'cannot render launch default {ast.unparse(node)}')


def launch_arguments(name: str) -> list[tuple[str, str, str]]:
    """(name, default, description) of every DeclareLaunchArgument in launch/<name>, in order."""
    tree = ast.parse((LAUNCH_DIR / name).read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'DeclareLaunchArgument':
            kw = {k.arg: k.value for k in node.keywords}
            found.append((node.lineno, node.args[0].value, _text(kw['default_value']),
                          kw['description'].value if 'description' in kw else ''))
    return [f[1:] for f in sorted(found)]


def launch_args_markdown(name: str) -> str:
    """The docs/nodes.md table of launch/<name>'s arguments."""
    rows = ['| argument | default | description |', '|---|---|---|']
    for arg, default, desc in launch_arguments(name):
        shown = f'`{default}`' if default else "`''` = not given (config file, else node default)"
        rows.append(f'| `{arg}` | {shown} | {desc} |')
    return '\n'.join(rows)


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_launch_argument_tables_are_current(name):
    text = NODES_DOC.read_text()
    found = re.search(r'<!-- launch-args:%s:begin[^\n]*-->\n(.*?)<!-- launch-args:%s:end -->'
                      % (re.escape(name), re.escape(name)), text, re.S)
    assert found, f'docs/nodes.md lacks the launch-args:{name} block'
    assert found.group(1).strip() == launch_args_markdown(name).strip(), (
        f'docs/nodes.md table of {name} is stale: regenerate it with python test/test_readme.py')


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_parameter_arguments_never_override_the_config_by_default(name):
    """An argument that sets a node parameter defaults to '' (not given): the file's value holds."""
    args = launch_arguments(name)
    assert args and all(desc for _, _, desc in args), f'{name}: every argument needs a description'
    for arg, default, desc in args:
        if desc.startswith('parameter '):
            assert default == '', f'{name}: {arg} defaults to {default!r}, overriding the config'


if __name__ == '__main__':
    for launch_file in LAUNCH_FILES:
        print(f'<!-- launch-args:{launch_file}:begin (generated: python test/test_readme.py) -->')
        print(launch_args_markdown(launch_file))
        print(f'<!-- launch-args:{launch_file}:end -->\n')
