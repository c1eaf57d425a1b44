"""The repository stands alone: every path, module and section its code and docs cite is in it.

Comments and documents point at design facts and code by repository path: `docs/<file>.md §N`,
`test/data/da3/README.md "Heading"`, `tt_depth_ros/ros/depth/node.py`, short forms inside the
package (`ros/depth/node.py`, `geometry/pointmap/scale.median_ratio_scale`, `tools/bench/`, resolved
against tt_depth_ros/), `config/...`, `launch/...`, `scripts/...`, `test/...`, and dotted module
names (`tt_depth_ros.tools.demo.run`, `(geometry.pose.se3.angle_deg)`). Each must resolve to a file,
folder, module attribute or heading that exists. A citation of a planning document outside the
repository (the old `spec/...`, `DESIGN.md`, `STYLE.md`, `golden/...`, `shared/golden`) or of a
ticket number in a tracker that is not part of the repository ("issue 12") cannot be followed by
a reader: say what the thing is instead. References to an upstream project's tracker name that
project (`tenstorrent/tt-metal PR #57142`) and are allowed; so are paths in an upstream project
when the line names it first (tt-metal `models/demos/...`).

Every failure names the citing file and line and what it cites.
"""
from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'tt_depth_ros'
TEXT_SUFFIXES = {'.py', '.md', '.sh', '.yaml', '.xml', '.cfg', '.txt', '.toml', '.ini'}
THIS_FILE = Path(__file__).resolve()

# Folders at the repository root a citation may start with (`golden/` is cited by old text but
# does not exist: such a citation fails like any other missing path).
ROOT_DIRS = ('docs', 'test', 'golden', 'tt_depth_ros', 'config', 'launch', 'scripts',
             'benchmarks', 'patches', 'requirements', 'resource')
# Short forms inside the package: `ros/depth/node.py` means tt_depth_ros/ros/depth/node.py.
PACKAGE_DIRS = tuple(sorted({'api', 'engines', 'geometry', 'models', 'pipelines', 'ros', 'tools'}
                            | {p.name for p in PACKAGE.iterdir() if (p / '__init__.py').is_file()}))
PATH = re.compile(r'(?<![\w./\-~$@])(?:%s)/[\w./\-]*' % '|'.join(ROOT_DIRS + PACKAGE_DIRS))
MODULE = re.compile(r'(?<![\w./\-])tt_depth_ros(?:\.\w+)+')
# Dotted short forms inside the package, as docstrings write them: `(geometry.pose.se3.angle_deg)`,
# `engines.weights.resolve_weights` (whole parenthesis or backtick span, so code is not read).
SHORT_MODULE = re.compile(r'(?:(?<=\s\()|(?<=^\()|(?<=`))((?:%s)(?:\.\w+)+)(?=[)`])'
                          % '|'.join(PACKAGE_DIRS), re.M)
MD_SECTION = re.compile(r'(?<![\w./\-])([\w./\-]*\.md)((?:,? §\d+(?:\.\d+)*)+)')
MD_HEADING = re.compile(r'(?<![\w./\-])([\w./\-]*\.md|README) "([^"]+)"')
BARE_README_SECTION = re.compile(r'(?<![\w./\-])README((?:,? §\d+(?:\.\d+)*)+)')
OUTSIDE = re.compile(r'(?<![\w/])(spec/\w+|DESIGN\.md|STYLE\.md|shared/golden|shared/spec)')
# A path in an upstream project (tt-metal's `models/demos/...`, croco's `models/blocks.py`) is not a
# repository path: allowed when the line names that project before it.
UPSTREAM_PROJECT = re.compile(r'(?i)tt-metal|changh95/|croco|naver/|ByteDance-Seed/')
PLACEHOLDER_NEXT = tuple('$<{*…')
# A ticket number of a tracker that is not in the repository: "issue 12", "Issue #2", "ticket 7",
# a bare "#12". Allowed: an upstream project's PR/issue named with its owner/repo.
TICKET = re.compile(r'(?i)\b(?:issues?|tickets?)\s*#?\d+\b|(?<![\w&/#])#\d{1,5}\b')
UPSTREAM = re.compile(r'[\w.-]+/[\w.-]+`?,? (?:(?:PRs?|issues?|pull requests?) )?#\d+'
                      r'(?:(?:,| and) #\d+)*|github\.com/\S+/(?:issues|pull)/\d+')


def _text_files() -> list[Path]:
    """Tracked files plus new ones not ignored (a worktree's uncommitted files are checked too)."""
    out = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    files = sorted({ROOT / f for f in out.stdout.splitlines()})
    return [f for f in files if f.suffix in TEXT_SUFFIXES and f.is_file() and f != THIS_FILE]


def _lines():
    """(where 'file:line', citing file, line text) of every text line in the repository."""
    for f in _text_files():
        for n, line in enumerate(f.read_text(errors='replace').splitlines(), 1):
            yield f'{f.relative_to(ROOT)}:{n}', f, line


@lru_cache(maxsize=None)
def _headings(md: Path) -> tuple[str, ...]:
    return tuple(m.group(1).strip() for m in re.finditer(r'^#{1,6} (.+)$', md.read_text(), re.M))


def _numbered_sections(md: Path) -> set[str]:
    return {m.group(1) for h in _headings(md) if (m := re.match(r'(\d+(?:\.\d+)*)\.? ', h + ' '))}


def _defines(module_file: Path, name: str) -> bool:
    text = module_file.read_text(errors='replace')
    return re.search(r'\b%s\b' % re.escape(name), text) is not None


def _module_file(base: Path) -> Path | None:
    source = base.parent / f'{base.name}.py'
    if source.is_file():
        return source
    if (base / '__init__.py').is_file():
        return base / '__init__.py'
    return None


def _path_resolves(base: Path, cited: str) -> bool:
    """`cited` (relative to `base`) is a file or folder, a module without .py, or module.attr."""
    p = base / cited
    if p.exists() or _module_file(p) is not None:
        return True
    head, _, last = cited.rstrip('/').rpartition('/')
    stem, dot, attr = last.partition('.')
    if not dot:
        return False
    module = _module_file(base / head / stem)
    return module is not None and _defines(module, attr.split('.')[0])


def _path_base(cited: str) -> Path:
    return ROOT if cited.split('/', 1)[0] in ROOT_DIRS else PACKAGE


def _md_file(cited: str, citing: Path) -> Path | None:
    """The Markdown file a citation names: 'README' is the repository README; else a repo path."""
    if cited == 'README':
        return ROOT / 'README.md'
    for base in (ROOT, PACKAGE, citing.parent):
        if (base / cited).is_file():
            return base / cited
    return None


def test_no_citation_of_documents_outside_the_repository():
    bad = [f'{where}: {line.strip()}' for where, _, line in _lines() if OUTSIDE.search(line)]
    assert not bad, ('cite docs/<file>.md instead of documents outside the repository:\n'
                     + '\n'.join(bad))


def test_no_ticket_numbers():
    bad = []
    for where, _, line in _lines():
        rest = UPSTREAM.sub('', line)
        for m in TICKET.finditer(rest):
            bad.append(f'{where}: cites {m.group(0)!r} (say what it is, not a ticket number)')
    assert not bad, '\n'.join(bad)


def test_every_cited_path_exists():
    bad = []
    for where, _, line in _lines():
        for m in PATH.finditer(line):
            cited = m.group(0).rstrip('.-')
            if line[m.end():].startswith(PLACEHOLDER_NEXT) or UPSTREAM_PROJECT.search(
                    line[:m.start()]):
                continue                  # `requirements/tf2_build_$distro.txt`; tt-metal paths
            base = _path_base(cited)
            if not _path_resolves(base, cited):
                bad.append(f'{where}: cites {cited!r}, which is not in the repository (looked for '
                           f'{(base / cited).relative_to(ROOT)})')
    assert not bad, '\n'.join(bad)


def test_every_cited_module_exists():
    bad = []
    for where, _, line in _lines():
        cited = [m.group(0) for m in MODULE.finditer(line)]
        cited += ['tt_depth_ros.' + m.group(1) for m in SHORT_MODULE.finditer(line)]
        for name in cited:
            parts = name.split('.')
            base, i = ROOT, 0
            while i < len(parts) and _module_file(base / parts[i]) is not None:
                base, i = base / parts[i], i + 1
            module = _module_file(base)
            attrs = parts[i:]
            if module is None or len(attrs) > 2 or (attrs and not _defines(module, attrs[0])):
                bad.append(f'{where}: cites module {name!r}, which does not exist')
    assert not bad, '\n'.join(bad)


def test_every_cited_section_exists():
    docs = {p.stem for p in (ROOT / 'docs').glob('*.md')}
    assert {'design', 'da3', 'dust3r', 'ros', 'ttnn'} <= docs
    bad = []
    for where, citing, line in _lines():
        cites = [(md, secs) for md, secs in MD_SECTION.findall(line)]
        cites += [('README', secs) for secs in BARE_README_SECTION.findall(line)]
        for cited, sections in cites:
            md = _md_file(cited, citing)
            if md is None:
                bad.append(f'{where}: cites {cited}, which is not in the repository')
                continue
            for section in re.findall(r'§(\d+(?:\.\d+)*)', sections):
                if section not in _numbered_sections(md):
                    bad.append(f'{where}: cites {cited} §{section}, which '
                               f'{md.relative_to(ROOT)} does not have')
        for cited, heading in MD_HEADING.findall(line):
            md = _md_file(cited, citing)
            if md is None:
                bad.append(f'{where}: cites {cited} "{heading}", which is not in the repository')
            elif not any(heading.lower() in h.lower() for h in _headings(md)):
                bad.append(f'{where}: cites {cited} "{heading}": {md.relative_to(ROOT)} has no '
                           'such heading')
    assert not bad, '\n'.join(bad)
