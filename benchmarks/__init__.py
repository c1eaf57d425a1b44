"""Model and engine micro-benchmarks: they print figures, never assert (tests never time).

Run from the repository root as modules, `.venv/bin/python -m benchmarks.<name> [args]`; each
module's docstring says what it measures and how. They read the golden fixtures (test/data) and
build with devtools/ (the test configs' rule-v1 checkpoints, the ttnn simulator). Two run the
depth node or tt-depth-batch with the tests' own helpers (test/support: an engine double, the
batch runner), so they need test/ on PYTHONPATH too: bench_depth_host_overhead, bench_batch_ray.
"""
from __future__ import annotations

import importlib.util


def require_test_helpers(what: str) -> None:
    """RuntimeError naming the command to use when the tests' helpers (test/support) are missing.

    Args:
        what: The benchmark (module name under benchmarks/) that needs them.
    """
    if importlib.util.find_spec('support') is None:
        raise RuntimeError(f'{what} uses the tests\' helpers (test/support): run it from the '
                           f'repository root with test/ on PYTHONPATH, `PYTHONPATH=test '
                           f'.venv/bin/python -m benchmarks.{what}`')
