"""The repository stands alone: every document its code cites is in it, every cited section exists.

Comments cite design facts as `docs/<file>.md §N`. A citation of a planning document outside the
repository (the old `spec/...`, `DESIGN.md`, `STYLE.md`, `shared/golden`) cannot be followed by a
user, and a citation of a section that `docs/<file>.md` does not have is a stale pointer.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {'.py', '.md', '.sh', '.yaml', '.xml', '.cfg', '.txt', '.toml', '.ini'}
OUTSIDE = re.compile(r'(?<![\w/])(spec/\w+\.md|DESIGN\.md|STYLE\.md|shared/golden|shared/spec)')
CITATION = re.compile(r'docs/(\w+)\.md(?: §(\d+(?:\.\d+)*))?')
THIS_FILE = Path(__file__).resolve()


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [ROOT / f for f in out.stdout.splitlines()]
    return [f for f in files if f.suffix in TEXT_SUFFIXES and f.is_file() and f != THIS_FILE]


def _sections(doc: Path) -> set[str]:
    heads = re.findall(r'^#{2,4} (\d+(?:\.\d+)*)\.? ', doc.read_text(), flags=re.M)
    return set(heads)


def test_no_citation_of_documents_outside_the_repository():
    bad = []
    for f in _tracked_text_files():
        for n, line in enumerate(f.read_text(errors='replace').splitlines(), 1):
            if OUTSIDE.search(line):
                bad.append(f'{f.relative_to(ROOT)}:{n}: {line.strip()}')
    assert not bad, ('cite docs/<file>.md instead of documents outside the repository:\n'
                     + '\n'.join(bad))


def test_every_cited_docs_section_exists():
    docs = {p.stem: _sections(p) for p in (ROOT / 'docs').glob('*.md')}
    assert {'design', 'da3', 'dust3r', 'ros', 'ttnn'} <= set(docs)
    bad = []
    for f in _tracked_text_files():
        for n, line in enumerate(f.read_text(errors='replace').splitlines(), 1):
            for name, section in CITATION.findall(line):
                if name not in docs:
                    bad.append(f'{f.relative_to(ROOT)}:{n}: docs/{name}.md does not exist')
                elif section and section not in docs[name]:
                    bad.append(f'{f.relative_to(ROOT)}:{n}: docs/{name}.md has no §{section}')
    assert not bad, '\n'.join(bad)
