"""The dry run's side environment: one venv, the compiler stand-in, a mock-p150 process env.

The conformance venv (.venv-ttnn: Python 3.12, the real ttnn 0.81.1 wheel and numpy only) plus
the RISC-V compiler stand-in inside it, and the environment that makes tt-metal open a MOCK p150.

One side venv serves both the conformance check and the dry run: no torch in it (the engine runs
in the project's own venv and reaches the real library over a pipe, bridge.py). The stand-in and
its placeholder kernel image live only in that venv's `ttnn/runtime/sfpi/`: never run a device
from .venv-ttnn. The JIT cache is forced to a path containing 'dryrun' (placeholder kernels
under the real sfpi build key must never reach the cache a device run reads,
~/.cache/tt-metal-cache).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from devtools.ttnn.conformance import check  # ensure_venv: the one side venv
from devtools.ttnn.dryrun import kernel_elf

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

MOCK_DESC = check.MOCK_DESC
ConformanceUnavailable = check.ConformanceUnavailable


def _ttnn_dir(py: Path) -> Path:
    out = subprocess.run([str(py), '-c', 'import importlib.util, os; print(os.path.dirname('
                          'importlib.util.find_spec("ttnn").origin))'],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def sfpi_release(ttnn_dir: Path) -> str:
    """'7.89.0[1050]' from the wheel's tt_metal/sfpi-version (what the real compiler reports)."""
    text = (ttnn_dir / 'tt_metal' / 'sfpi-version').read_text()
    ver = re.search(r"^sfpi_version='([^']+)'", text, re.M)
    build = re.search(r"^sfpi_build='([^']*)'", text, re.M)
    if not ver or not build:
        raise RuntimeError(f'{ttnn_dir}/tt_metal/sfpi-version: no sfpi_version/sfpi_build line')
    return f'{ver.group(1)}[{build.group(1)}]'


def install_compiler_standin(py: Path) -> Path:
    """Write the compiler stand-in and the placeholder kernel into the venv's ttnn/runtime/sfpi."""
    tdir = _ttnn_dir(py)
    bindir = tdir / 'runtime' / 'sfpi' / 'compiler' / 'bin'
    bindir.mkdir(parents=True, exist_ok=True)
    (tdir / 'runtime' / 'sfpi' / 'include').mkdir(parents=True, exist_ok=True)
    script = (HERE / 'riscv_compiler_standin.sh').read_text().replace('@SFPI@',
                                                                       sfpi_release(tdir))
    gxx = bindir / 'riscv-tt-elf-g++'
    if not gxx.exists() or gxx.read_text() != script:
        gxx.write_text(script)
        gxx.chmod(0o755)
    elf = bindir / 'placeholder-kernel.elf'
    if not elf.exists() or elf.read_bytes() != kernel_elf.placeholder_elf():
        kernel_elf.write(elf)
    return gxx


def ensure_dryrun_venv() -> Path:
    """The side venv's python, with the compiler stand-in installed (idempotent)."""
    py = check.ensure_venv()
    install_compiler_standin(py)
    return py


def jit_cache_dir() -> Path:
    """A JIT cache no device run uses: $TT_DRYRUN_JIT_CACHE if its path says 'dryrun'."""
    want = os.environ.get('TT_DRYRUN_JIT_CACHE')
    if want and 'dryrun' not in want:
        raise RuntimeError(f'TT_DRYRUN_JIT_CACHE={want!r}: the path must contain "dryrun" (the '
                           'placeholder kernels must never reach a cache a device run reads)')
    path = Path(want) if want else \
        Path(tempfile.gettempdir()) / f'tt_depth_ros_dryrun_jit_{os.getuid()}'
    path.mkdir(parents=True, exist_ok=True)
    return path


def side_env(base: dict | None = None) -> dict:
    """Environment of the real-library process: mock p150, dry-run JIT cache, quiet logs.

    The repository root goes first on PYTHONPATH: the process runs `python -m
    devtools.ttnn.dryrun.server`.
    """
    env = dict(os.environ if base is None else base)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    env['TT_METAL_MOCK_CLUSTER_DESC_PATH'] = str(MOCK_DESC)
    env['TT_METAL_CACHE'] = str(jit_cache_dir()).rstrip('/') + '/'
    env.setdefault('TT_METAL_LOGGER_LEVEL', 'FATAL')
    env.setdefault('LOGURU_LEVEL', 'WARNING')
    for k in ('TT_METAL_HOME', 'TT_METAL_RUNTIME_ROOT', 'TT_VISIBLE_DEVICES'):
        env.pop(k, None)   # the wheel's own runtime tree, no real card
    return env
