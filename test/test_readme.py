"""The README documents the nodes' parameters exactly as the nodes declare them."""
import re
from pathlib import Path

import pytest

from tt_depth_ros.ros import depth_node, pair_node

README = Path(__file__).resolve().parents[1] / 'README.md'


@pytest.mark.parametrize('tag, generate', [('depth-params', depth_node.params_markdown),
                                           ('pair-params', pair_node.params_markdown)])
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
