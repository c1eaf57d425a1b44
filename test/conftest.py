"""Test harness: loopback-only ROS 2 for this process and every child, set before rclpy is imported.

The harness (not the nodes: they use the environment they are given) confines everything the tests
start. A unique ROS_DOMAIN_ID per test run keeps concurrent runs apart, and under pytest-xdist one
per worker (see harness_domain_id); stale Fast DDS shared-memory files of killed processes are
removed at the end of the run.
"""
import ctypes
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / 'test'))

from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env  # noqa: E402  (no rclpy import inside)


def harness_domain_id() -> int | None:
    """This test process's ROS_DOMAIN_ID in 10..99, or None for apply_loopback_env's per-pid one.

    Under pytest-xdist each worker (PYTEST_XDIST_WORKER gw<i>) gets base + i, wrapped in 10..99,
    so the workers of one run never share a ROS graph (tests reuse namespaces and /diagnostics).
    The base is TT_DEPTH_ROS_TEST_DOMAIN_BASE (scripts/run_tests.sh gives concurrent pytest runs
    disjoint ranges; it applies to a run without xdist too), else derived from xdist's per-run id.
    """
    base = os.environ.get('TT_DEPTH_ROS_TEST_DOMAIN_BASE', '').strip()
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    if not base and not worker:
        return None
    if not base:
        base = str(10 + int(os.environ.get('PYTEST_XDIST_TESTRUNUID', '0')[:8] or '0', 16) % 90)
    index = int(worker[2:]) if worker.startswith('gw') else 0
    return 10 + (int(base) - 10 + index) % 90


apply_loopback_env(keep_domain=False)
if (_domain := harness_domain_id()) is not None:
    os.environ['ROS_DOMAIN_ID'] = str(_domain)

import pytest  # noqa: E402

from support.procs import clean_stale_fastdds_shm  # noqa: E402


def pytest_addoption(parser):
    parser.addoption('--reverse-order', action='store_true',
                     help='run the selected tests in reverse collection order (run_tests.sh: the '
                          "two distros' serial passes run at once and so meet their heaviest tests "
                          'at different times)')


@pytest.hookimpl(tryfirst=True)   # before xdist's loadgroup reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Full-size model tests (`slow`) run one at a time per full-size group under xdist.

    Two groups, so two workers run one full-size test each: `full_size_heavy` (marked in the
    test files: the NESTED forward, ~8.7 GB peak, the stand-in's DA3-Large parity and the
    any-view Large parity, ~4 GB each) and `full_size`, every other `slow` test (the stand-in's
    DUSt3R ViT-L, ~6.2 GB, the rest under ~4 GB; the real-ttnn dry runs hold theirs in their
    driver processes). At most ~15 GB at once beside the small tests, and two chains of about
    210 CPU-s each instead of one of 420.
    """
    if config.getoption('reverse_order'):
        items.reverse()
    for item in items:
        if item.get_closest_marker('slow') and not item.get_closest_marker('xdist_group'):
            item.add_marker(pytest.mark.xdist_group('full_size'))


# Long, independent work that would otherwise come last in collection order (test/ttnn_*, after
# test/tools): each full-size real-library dry run is its own unit (the tiny ones share one
# driver process: an xdist_group named after the file), and these units go before the first
# test/tools file. At the end of the run
# they left one worker busy for two minutes while the others idled; earlier than that they would
# overlap the Kilted pass (its first ~3 minutes), which holds timing-sensitive waits.
SPLIT_PER_TEST = ('test/ttnn_dryrun/test_ttnn_dryrun.py',)
# (the cost estimate's file: one tiny-DA3 run through the real library, ~20 s)
BEFORE_TOOLS = SPLIT_PER_TEST + ('test/tools/bench/test_benchmark.py',
                                 'test/ttnn_dryrun/test_ttnn_estimate.py')


def _work_order(scopes: list[str]) -> list[str]:
    """The work units' order: full-size groups first, then the long units before test/tools.

    Among those, the DUSt3R dry run (~70 s) and the benchmark file (~80 s) lead, the shorter
    DA3 dry run and harness check follow.
    """
    heavy = [s for s in ('full_size_heavy', 'full_size') if s in scopes]
    early = sorted((s for s in scopes if s.startswith(BEFORE_TOOLS)),
                   key=lambda s: (not ('dust3r' in s or 'bench' in s), s))
    rest = [s for s in scopes if s not in heavy and s not in early]
    at = next((i for i, s in enumerate(rest) if s.startswith('test/tools/')), len(rest))
    return heavy + rest[:at] + early + rest[at:]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`, but a test without an xdist_group goes with the rest of its file.

    A file's tests share module fixtures (a launched node, a probe, a built model): one worker
    runs the whole file, so they are set up once, as in a serial run (the files of
    SPLIT_PER_TEST are split per test). The full-size groups start first, on two workers (the
    longest chains of work), then the files in collection order, with the long units of
    BEFORE_TOOLS (the largest first) moved in front of test/tools.
    """
    if config.getoption('dist') != 'loadgroup':
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FileOrGroupScheduling(LoadGroupScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            if scope != nodeid or nodeid.startswith(SPLIT_PER_TEST):
                return scope
            return nodeid.split('::', 1)[0]

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:
                self._ordered = True
                units = dict(self.workqueue)
                self.workqueue.clear()
                for scope in _work_order(list(units)):
                    self.workqueue[scope] = units[scope]
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False
    return FileOrGroupScheduling(config, log)


def _malloc_trim() -> None:
    try:
        ctypes.CDLL('libc.so.6').malloc_trim(0)
    except (OSError, AttributeError):
        pass    # not glibc


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under xdist, give back to the OS the memory a test (and its module) freed.

    glibc keeps freed heap pages in the process: a worker that ran a full-size model would hold
    GBs for the rest of the run while the other workers need them.
    """
    _reset_peak_rss()
    start, cpu0 = time.time(), _cpu_seconds()
    yield
    if os.environ.get('PYTEST_XDIST_WORKER'):
        if (item.get_closest_marker('slow') or nextitem is None
                or nextitem.module is not item.module):
            gc.collect()
        _malloc_trim()
    _log_timeline(item.nodeid, start, time.time(), _cpu_seconds() - cpu0, _peak_rss_gb())


def _cpu_seconds() -> float:
    """CPU time of this process and of its children that have been waited for."""
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                resource.getrusage(resource.RUSAGE_CHILDREN)))


def _reset_peak_rss() -> None:
    """Start this process's peak-RSS count (VmHWM) afresh: Linux clear_refs, value 5."""
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
    except OSError:
        pass


def _peak_rss_gb() -> float:
    """Peak resident memory of this process since _reset_peak_rss (0 where unknown)."""
    try:
        with open('/proc/self/status', encoding='ascii') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def _log_timeline(nodeid: str, start: float, end: float, cpu: float, peak_gb: float) -> None:
    """With TT_DEPTH_ROS_TEST_TIMELINE=<folder/prefix>, one line per test and worker.

    Wall-clock start and end, CPU seconds (the test process and the processes it waited for)
    and the test process's peak RSS: scripts/run_tests.sh prints when each worker went idle,
    which tests cost the most CPU and which the most memory, what bounds the suite's wall time
    on 2 cores and which tests may run beside each other.
    """
    prefix = os.environ.get('TT_DEPTH_ROS_TEST_TIMELINE', '').strip()
    if prefix:
        worker = os.environ.get('PYTEST_XDIST_WORKER', 'main')
        with open(f'{prefix}.{worker}.tsv', 'a', encoding='utf-8') as f:
            f.write(f'{start:.3f}\t{end:.3f}\t{cpu:.3f}\t{nodeid}\t{peak_gb:.2f}\n')


def pytest_sessionfinish(session, exitstatus):
    if not os.environ.get('PYTEST_XDIST_WORKER'):   # once per run: xdist's controller, at the end
        clean_stale_fastdds_shm()
