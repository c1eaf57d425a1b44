"""Packaging: colcon builds the package unchanged and installs its scripts and share files.

Every registered entry point resolves to a callable.
"""
import ast
import importlib
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from support.colcon_ws import colcon_executable, shared_workspace

ROOT = Path(__file__).resolve().parents[1]


def _console_scripts() -> dict[str, str]:
    text = (ROOT / 'setup.py').read_text()
    block = re.search(r"'console_scripts': \[(.*?)\]", text, re.S).group(1)
    return dict(re.findall(r"'([\w-]+) = ([\w.:]+)'", block))


#: Top-level module -> rosdep key of package.xml, for every module the package imports at run time.
ROSDEP_KEYS = {
    'rclpy': 'rclpy', 'rcl_interfaces': 'rcl_interfaces', 'lifecycle_msgs': 'lifecycle_msgs',
    'sensor_msgs': 'sensor_msgs', 'geometry_msgs': 'geometry_msgs', 'std_msgs': 'std_msgs',
    'nav_msgs': 'nav_msgs', 'builtin_interfaces': 'builtin_interfaces',
    'diagnostic_msgs': 'diagnostic_msgs', 'rosgraph_msgs': 'rosgraph_msgs', 'tf2_msgs': 'tf2_msgs',
    'launch': 'launch', 'launch_ros': 'launch_ros', 'ament_index_python': 'ament_index_python',
    'numpy': 'python3-numpy', 'cv2': 'python3-opencv', 'PIL': 'python3-pil',
    'yaml': 'python3-yaml', 'psutil': 'python3-psutil', 'matplotlib': 'python3-matplotlib',
    'tqdm': 'python3-tqdm',
}
#: Imported, but not from rosdep: the model runtime and the bag library come from pip (README).
PIP_ONLY = {
    'torch': 'PyTorch CPU/CUDA builds are chosen per machine; no rosdep key',
    'safetensors': 'model checkpoints; pip',
    'huggingface_hub': 'weight download; pip',
    'ttnn': 'Tenstorrent runtime, installed with the device software',
    'rosbags': 'pure-Python rosbag2 reader/writer of the tools; pip',
    'onnx': 'ONNX checker of `tt-depth export`; pip (no rosdep key)',
    'onnxruntime': 'the onnxruntime backend and the export parity run; pip (no rosdep key)',
    'ray': "optional extra of `tt-depth-batch --ray`; pip install 'tt_depth_ros[ray]'",
    'litert_torch': "LiteRT converter of `tt-depth export --format litert`; pip install "
                    "'tt_depth_ros[litert]' (requirements/litert.txt)",
    'ai_edge_litert': 'LiteRT interpreter and flatbuffer schema of the LiteRT export check; pip '
                      "install 'tt_depth_ros[litert]'",
}
#: Declared without a Python import: what the user runs the package with.
DECLARED_FOR_TOOLS = {
    'ros2launch': '`ros2 launch tt_depth_ros ...` runs the launch files',
    'ros2lifecycle': '`ros2 lifecycle set` drives nodes started with autostart:=false',
    'lifecycle_msgs': 'types of the lifecycle services the nodes serve (through rclpy.lifecycle)',
}


def _imported_modules() -> dict[str, str]:
    """Top-level module -> one file of tt_depth_ros/ or launch/ importing it.

    Counts `import`, `from ... import` and `importlib.import_module('<constant>')`.
    """
    found: dict[str, str] = {}
    files = sorted((ROOT / 'tt_depth_ros').rglob('*.py')) + sorted((ROOT / 'launch').glob('*.py'))
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'import_module'
                  and node.args and isinstance(node.args[0], ast.Constant)):
                names = [node.args[0].value]
            for name in names:
                found.setdefault(name.split('.')[0], str(path.relative_to(ROOT)))
    return {m: f for m, f in found.items()
            if m not in sys.stdlib_module_names and m != 'tt_depth_ros'}


def test_package_xml_is_format3_ament_python():
    root = ET.parse(ROOT / 'package.xml').getroot()
    assert root.get('format') == '3'
    assert root.findtext('name') == 'tt_depth_ros'
    assert root.find('export/build_type').text == 'ament_python'
    assert 'python3-pytest' in {e.text for e in root.findall('test_depend')}


def test_package_xml_declares_every_runtime_import():
    root = ET.parse(ROOT / 'package.xml').getroot()
    declared = {e.text for tag in ('exec_depend', 'depend') for e in root.findall(tag)}
    imported = _imported_modules()
    unmapped = {m: f for m, f in imported.items() if m not in ROSDEP_KEYS and m not in PIP_ONLY}
    assert not unmapped, f'imports without a rosdep key or pip-only reason: {unmapped}'
    missing = {ROSDEP_KEYS[m]: f for m, f in imported.items()
               if m in ROSDEP_KEYS and ROSDEP_KEYS[m] not in declared}
    assert not missing, f'package.xml lacks exec_depend for: {missing}'
    wanted = {ROSDEP_KEYS[m] for m in imported if m in ROSDEP_KEYS} | set(DECLARED_FOR_TOOLS)
    assert declared <= wanted, f'package.xml declares what nothing uses: {declared - wanted}'


def test_every_console_script_resolves_to_a_callable():
    scripts = _console_scripts()
    assert 'tt-depth' in scripts
    for name, target in scripts.items():
        module, _, attr = target.partition(':')
        obj = getattr(importlib.import_module(module), attr)
        assert callable(obj), f'console script {name} -> {target} is not callable'


def test_colcon_build_installs_scripts_and_share_files(tmp_path_factory):
    if not colcon_executable().exists():
        pytest.fail('colcon is not installed in the test environment (scripts/bootstrap.sh)')
    ws, proc = shared_workspace(tmp_path_factory)    # the build the real-launch tests use too
    assert proc.returncode == 0, proc.stdout + proc.stderr
    prefix = ws / 'install' / 'tt_depth_ros'
    for name in _console_scripts():
        assert (prefix / 'lib' / 'tt_depth_ros' / name).is_file(), f'{name}: not in lib/<pkg>'
    share = prefix / 'share' / 'tt_depth_ros'
    assert (share / 'package.xml').is_file()
    index = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
    assert (index / 'tt_depth_ros').is_file()
    # the package alone: the development code of the checkout is never installed
    site = sorted(prefix.glob('lib/python*/site-packages'))
    assert site and (site[0] / 'tt_depth_ros' / '__init__.py').is_file(), site
    shipped = {p.name for p in site[0].iterdir() if p.is_dir()}
    assert not shipped & {'devtools', 'benchmarks', 'test', 'support'}, sorted(shipped)
    for folder, pattern in (('launch', '*.py'), ('config', '*.yaml'), ('config', '*.xml')):
        expected = sorted(p.name for p in (ROOT / folder).glob(pattern))
        assert expected, f'the repository has no {folder}/{pattern}'
        assert sorted(p.name for p in (share / folder).glob(pattern)) == expected
