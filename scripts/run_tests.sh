#!/usr/bin/env bash
# The README's test command (`make test`; `.ci/run` calls it): set up both ROS 2 distros, lint, run
# every test on Jazzy and the cross-process ROS tests (marker `ros`) again on Kilted.
# Fails on any failure and on "no tests ran" (pytest exit 5).
#
# Most tests wait (ROS nodes in other processes, lifecycle transitions, timeouts) rather than
# compute, so both distros' runs go at once, each spread over pytest-xdist workers (every worker
# its own ROS domain: test/conftest.py). The tests marked `serial` (timing bounds that CPU load
# would stretch) then run one at a time per distro with nothing else running.
#   TT_TEST_WORKERS_JAZZY / TT_TEST_WORKERS_KILTED   -> workers per distro (default 3 and 2)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
t0=$(date +%s)
# The venvs are installed without byte-compiling (pip --no-compile: half the install time), so
# the first import of each module writes its .pyc. With PYTHONDONTWRITEBYTECODE set (it is on
# these machines) nothing would ever be written and every one of the suite's ~1,000 Python
# processes would compile torch, rclpy and numpy from source again: 1.8 s more CPU per torch
# import, 0.7 s per node start, which tripled the 100-process signal-burst test. The cache lives
# in the project's own venvs; the user's environment outside this run is untouched.
unset PYTHONDONTWRITEBYTECODE
# Several torch processes share 2 cores here (xdist workers, both distros, the nodes they start).
# libgomp's default waits for work by spinning, and a spinning thread takes the core from the one
# with work: measured on the stand-in and model tests at 3 workers, 135 CPU-s instead of 84 for
# the same tests. Passive waiting keeps each process's 2 threads for when the cores are free.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/tt_depth_ros_tests.XXXXXX")"
trap 'rm -rf "$logs"' EXIT
# At their peak the tests hold about 5 GB in the temp dir (two full-size checkpoints, two full-size
# dry-run weight caches) besides the ~5 GB of venvs; a full disk fails every test after it.
free_gb="$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR==2 {printf "%d", $4 / 1048576}')"
echo "== free disk in ${TMPDIR:-/tmp}: ${free_gb} GB"
if (( free_gb < 8 )); then
  echo "!!! less than 8 GB free: the full-size tests may fill the disk"
fi

# The ttnn conformance check and the real-library dry run (devtools/ttnn: the engine on a mock
# p150 through the real ttnn 0.81.1 wheel, cp312 only) share one cached side virtualenv (ttnn +
# numpy, no torch) plus the dry run's RISC-V compiler stand-in; create it here, while the network
# is still reachable. In CI (CI=true) a missing Python 3.12 is an error, never a skip.
# It needs nothing but the standard library, so the host's Python builds it beside the bootstraps.
ttnn_side_env() {
  echo "== ttnn side environment (.venv-ttnn: conformance + dry run)"
  local py="${PYTHON:-python3.11}"
  command -v "$py" >/dev/null || py=python3
  "$py" - <<'PY'
import os
import sys
from devtools.ttnn.dryrun import environment
try:
    print('ttnn side venv:', environment.ensure_dryrun_venv())
except environment.ConformanceUnavailable as exc:
    if os.environ.get('CI', '').lower() == 'true':
        sys.exit(f'run_tests: the ttnn dry run and conformance check cannot run in CI: {exc}')
    print(f'!!! ttnn conformance and dry run will be skipped: {exc}')
PY
}

# The report-page test (test/tools/demo) renders demo_out/index.html in headless Chromium, the
# Debian package "chromium": installed here when missing and this is root (apt-get, quiet); else
# one line says the test will skip. In CI (CI=true) a Chromium that cannot be had is an error.
chromium_env() {
  echo "== headless Chromium (report page test)"
  if command -v chromium >/dev/null; then echo "chromium: $(command -v chromium)"; return 0; fi
  local ci; ci="$(echo "${CI:-}" | tr '[:upper:]' '[:lower:]')"
  if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null; then
    if [[ "$ci" == true ]]; then
      echo "run_tests: Chromium is missing and cannot be installed here (needs root and apt-get)"
      return 1
    fi
    echo "!!! Chromium is not installed and cannot be here (needs root and apt-get): the report page browser test will be skipped"
    return 0
  fi
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium)
  if ! "${apt[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 && "${apt[@]}" >/dev/null 2>&1 || {
      echo "run_tests: apt-get install chromium failed"
      [[ "$ci" == true ]] && return 1
      echo "!!! the report page browser test will be skipped"; return 0; }
  fi
  echo "chromium installed: $(chromium --version 2>/dev/null)"
}

# The environments are independent (pip installs and two small CMake builds each, the ttnn side
# venv, Chromium): build them at once. Logs in order.
echo "== environments (bootstrap jazzy | bootstrap kilted | ttnn side env | Chromium, concurrently)"
scripts/bootstrap.sh jazzy >"$logs/env-jazzy.log" 2>&1 &
env_jazzy=$!
scripts/bootstrap.sh kilted >"$logs/env-kilted.log" 2>&1 &
env_kilted=$!
ttnn_side_env >"$logs/env-ttnn.log" 2>&1 &
env_ttnn=$!
chromium_env >"$logs/env-chromium.log" 2>&1 &
env_chromium=$!
rc_j=0; rc_k=0; rc_t=0; rc_c=0
wait "$env_jazzy" || rc_j=$?
wait "$env_kilted" || rc_k=$?
wait "$env_ttnn" || rc_t=$?
wait "$env_chromium" || rc_c=$?
cat "$logs/env-jazzy.log" "$logs/env-kilted.log" "$logs/env-ttnn.log" "$logs/env-chromium.log"
if [[ $rc_j -ne 0 || $rc_k -ne 0 || $rc_t -ne 0 || $rc_c -ne 0 ]]; then
  echo "run_tests: environment setup failed (jazzy exit $rc_j, kilted exit $rc_k, ttnn side" \
    "env exit $rc_t, chromium exit $rc_c)" >&2
  exit 1
fi

echo "== lint (ruff)"
.venv/bin/ruff check .

# Belt and braces on top of the loopback settings the harness forces: where this user may create a
# network namespace (root in CI), the tests run in one whose only interface is loopback.
isolate=()
if command -v ip >/dev/null && unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
  isolate=(unshare -n sh -c 'ip link set lo up && exec "$0" "$@"')
  echo "run_tests: tests run in a private network namespace (loopback only)"
else
  echo "run_tests: no network namespace available; relying on the loopback-only ROS settings"
fi

# Each pytest run gets its own range of ROS domains (test/conftest.py: base + worker index, within
# 10..99), so the runs that go at once never share a ROS graph, not even through Fast DDS shared
# memory (one /dev/shm for every network namespace). The base changes from one `make test` to the
# next (this shell's pid) as the per-run domain always did; Kilted's range is Jazzy's + 45.
domain_j=$(( 10 + $$ % 45 ))
domain_k=$(( domain_j + 45 ))
# Full-size rule-v1 checkpoints are generated once per run and shared (devtools/rule_weights.py).
export TT_DEPTH_ROS_RULE_CACHE="$logs/rule_v1_cache"
mkdir -p "$logs/timeline"
# When each worker went idle, from the per-test lines test/conftest.py writes: the run's long pole.
print_timeline() {  # <label>
  .venv/bin/python - "$logs/timeline/$1" <<'PY'
import glob
import sys
rows = {}
for path in glob.glob(sys.argv[1] + '.*.tsv'):
    with open(path, encoding='utf-8') as f:
        rows[path.rsplit('.', 2)[1]] = [line.rstrip('\n').split('\t') for line in f]
if rows:
    t0 = min(float(r[0]) for lines in rows.values() for r in lines)
    for worker, lines in sorted(rows.items()):
        busy = sum(float(r[1]) - float(r[0]) for r in lines)
        last = max(lines, key=lambda r: float(r[1]))
        print(f'run_tests: worker {worker}: {len(lines)} tests, busy {busy:.0f} s, idle from '
              f'+{float(last[1]) - t0:.0f} s (last: {last[3]})')
    files = {}
    for lines in rows.values():
        for r in lines:
            cpu_wall = files.setdefault(r[3].split('::')[0], [0.0, 0.0])
            cpu_wall[0] += float(r[2])
            cpu_wall[1] += float(r[1]) - float(r[0])
    print(f'run_tests: CPU of the tests and the processes they waited for: '
          f'{sum(c for c, _ in files.values()):.0f} s; the most by file:')
    for name, (cpu, wall) in sorted(files.items(), key=lambda kv: -kv[1][0])[:30]:
        print(f'  {cpu:7.1f} s CPU {wall:7.1f} s wall  {name}')
    tests = [r for lines in rows.values() for r in lines if len(r) > 4]
    print('run_tests: peak memory of the test process, the most by test:')
    for r in sorted(tests, key=lambda r: -float(r[4]))[:8]:
        print(f'  {float(r[4]):5.1f} GB {float(r[1]) - float(r[0]):7.1f} s wall  {r[3]}')
PY
}
run_pytest() {  # <venv> <label> <domain base> <pytest args...>
  local venv="$1" label="$2" base="$3"; shift 3
  local start rc
  start=$(date +%s)
  echo "== pytest [$label] $*"
  set +e
  TT_DEPTH_ROS_TEST_DOMAIN_BASE="$base" TT_DEPTH_ROS_TEST_TIMELINE="$logs/timeline/$label" \
    "${isolate[@]}" "$venv/bin/python" -m pytest --durations=25 "$@"
  rc=$?
  set -e
  print_timeline "$label"
  echo "run_tests: pytest [$label] exit $rc after $(( $(date +%s) - start )) s"
  if [[ $rc -eq 5 ]]; then echo "run_tests: no tests ran [$label]" >&2; return 1; fi
  if [[ $rc -ne 0 ]]; then echo "run_tests: pytest failed [$label] (exit $rc)" >&2; return "$rc"; fi
}

workers_j="${TT_TEST_WORKERS_JAZZY:-3}"
workers_k="${TT_TEST_WORKERS_KILTED:-2}"
# A crashed worker (e.g. killed for memory) fails the run instead of being replaced.
xdist_j=(-n "$workers_j" --dist loadgroup --max-worker-restart=0)
xdist_k=(-n "$workers_k" --dist loadgroup --max-worker-restart=0)

# 1. In parallel: every test but the `serial` ones on Jazzy (output live) and, at the same time,
#    the `ros` ones on Kilted (output printed when it ends) but those marked `one_distro`: whole
#    journeys (the demo, the trajectory benchmark, the ttnn stand-in node) whose ROS calls other
#    `ros` tests already make on Kilted; they would double the longest tests for no new surface.
#    Every process of this phase runs torch (and BLAS) with one thread (OMP_NUM_THREADS=1): the
#    workers of both distros already share the 2 cores, and a second thread would only wait for
#    its sibling (even on an idle machine two threads spend more CPU on one forward than one).
OMP_NUM_THREADS=1 run_pytest .venv-kilted kilted "$domain_k" "${xdist_k[@]}" \
  -m 'ros and not serial and not one_distro' test >"$logs/kilted.log" 2>&1 &
kilted=$!
rc_j=0; rc_k=0
OMP_NUM_THREADS=1 run_pytest .venv jazzy "$domain_j" "${xdist_j[@]}" -m 'not serial' test || rc_j=$?
wait "$kilted" || rc_k=$?
cat "$logs/kilted.log"
if [[ $rc_j -ne 0 || $rc_k -ne 0 ]]; then exit 1; fi

# 2. With nothing else running: the `serial` tests on Jazzy and, at the same time, their `ros` ones
#    on Kilted in reverse order, so that at most one test per distro runs and the two distros meet
#    their heaviest tests (signal bursts, overload) at different times.
run_pytest .venv-kilted kilted-serial "$domain_k" --reverse-order -m 'ros and serial' test \
  >"$logs/kilted-serial.log" 2>&1 &
kilted=$!
rc_j=0; rc_k=0
run_pytest .venv jazzy-serial "$domain_j" -m serial test || rc_j=$?
wait "$kilted" || rc_k=$?
cat "$logs/kilted-serial.log"
if [[ $rc_j -ne 0 || $rc_k -ne 0 ]]; then exit 1; fi
echo "run_tests: all passed in $(( $(date +%s) - t0 )) s"
