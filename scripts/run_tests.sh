#!/usr/bin/env bash
# The README's test command (`make test`; `.ci/run` calls it): set up both ROS 2 distros, lint, run
# every test on Jazzy and the cross-process ROS tests (marker `ros`) again on Kilted.
# Fails on any failure and on "no tests ran" (pytest exit 5).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
t0=$(date +%s)

scripts/bootstrap.sh jazzy
scripts/bootstrap.sh kilted

echo "== lint (ruff)"
.venv/bin/ruff check .

run_pytest() {  # <venv> <label> <pytest args...>
  local venv="$1" label="$2"; shift 2
  echo "== pytest [$label] $*"
  set +e
  "$venv/bin/python" -m pytest "$@"
  local rc=$?
  set -e
  if [[ $rc -eq 5 ]]; then echo "run_tests: no tests ran [$label]" >&2; exit 1; fi
  if [[ $rc -ne 0 ]]; then echo "run_tests: pytest failed [$label] (exit $rc)" >&2; exit "$rc"; fi
}

run_pytest .venv jazzy test
run_pytest .venv-kilted kilted -m ros test
echo "run_tests: all passed in $(( $(date +%s) - t0 )) s"
