"""Packaging: colcon builds the package unchanged and installs its scripts and share files.

Every registered entry point resolves to a callable.
"""
import importlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _console_scripts() -> dict[str, str]:
    text = (ROOT / 'setup.py').read_text()
    block = re.search(r"'console_scripts': \[(.*?)\]", text, re.S).group(1)
    return dict(re.findall(r"'([\w-]+) = ([\w.:]+)'", block))


def test_package_xml_is_format3_ament_python_with_declared_deps():
    root = ET.parse(ROOT / 'package.xml').getroot()
    assert root.get('format') == '3'
    assert root.findtext('name') == 'tt_depth_ros'
    assert root.find('export/build_type').text == 'ament_python'
    deps = {e.text for e in root.findall('exec_depend')}
    for dep in ('rclpy', 'sensor_msgs', 'geometry_msgs', 'std_msgs', 'builtin_interfaces',
                'diagnostic_msgs', 'lifecycle_msgs', 'tf2_msgs', 'launch_ros', 'python3-numpy',
                'python3-opencv'):
        assert dep in deps, f'package.xml lacks exec_depend {dep}'
    assert 'python3-pytest' in {e.text for e in root.findall('test_depend')}


def test_every_console_script_resolves_to_a_callable():
    scripts = _console_scripts()
    assert 'tt-depth' in scripts
    for name, target in scripts.items():
        module, _, attr = target.partition(':')
        obj = getattr(importlib.import_module(module), attr)
        assert callable(obj), f'console script {name} -> {target} is not callable'


def test_colcon_build_installs_scripts_and_share_files(tmp_path):
    colcon = Path(sys.executable).with_name('colcon')
    if not colcon.exists():
        pytest.fail('colcon is not installed in the test environment (scripts/bootstrap.sh)')
    src = tmp_path / 'src' / 'tt_depth_ros'
    files = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        if rel.startswith('test/data/') or not (ROOT / rel).is_file():
            continue
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    proc = subprocess.run([str(colcon), 'build', '--event-handlers', 'console_direct-'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    prefix = tmp_path / 'install' / 'tt_depth_ros'
    for name in _console_scripts():
        assert (prefix / 'lib' / 'tt_depth_ros' / name).is_file(), f'{name}: not in lib/<pkg>'
    share = prefix / 'share' / 'tt_depth_ros'
    assert (share / 'package.xml').is_file()
    index = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
    assert (index / 'tt_depth_ros').is_file()
    for folder, pattern in (('launch', '*.py'), ('config', '*.yaml'), ('config', '*.xml')):
        expected = sorted(p.name for p in (ROOT / folder).glob(pattern))
        assert expected, f'the repository has no {folder}/{pattern}'
        assert sorted(p.name for p in (share / folder).glob(pattern)) == expected
