#!/usr/bin/env bash
# The test command: engine, package, images, then every test with Docker required — in parallel
# (pytest-xdist: ICAE_TEST_WORKERS processes, 4 unless set; 0 runs them in this one process).
# Each step says how long it took; the tests say their 25 slowest.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {  # step NAME COMMAND...: runs it, then says its wall time (and its status if it failed)
  local name=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  echo "[time] $name: $((SECONDS - start))s$([ "$status" = 0 ] || echo " (failed: $status)")"
  return "$status"
}

step env bash scripts/env.sh
step ruff .venv/bin/ruff check icae_tui tests benchmarks
# Types: strict on the whole package (config in pyproject.toml); it must report nothing.
step mypy .venv/bin/mypy
# The verdict ladder is pure: its table tests need no Docker and must cover nearly all of it.
# They run here only (the main run below leaves them out).
VERDICT_TESTS=(tests/test_verdict.py tests/test_verdict_faults.py)
step verdict-coverage .venv/bin/python -m pytest -q -p no:cacheprovider "${VERDICT_TESTS[@]}" \
  --cov=icae_tui.evaluation.verdict --cov-report=term-missing --cov-fail-under=95
export ICAE_REQUIRE_DOCKER=1
export ICAE_REQUIRE_RAY=1  # the ray extra is installed by env.sh: its test must not skip
# Each test process makes its own ICAE_HOME (tests/conftest.py).
workers=${ICAE_TEST_WORKERS:-4}
parallel=()
if [ "$workers" != 0 ]; then
  parallel=(-n "$workers" --dist loadfile)  # a module (and its module-scoped images) on one worker
fi
ignore=()  # the whole suite: without the verdict tests, run above
if [ $# = 0 ]; then for t in "${VERDICT_TESTS[@]}"; do ignore+=("--deselect=$t"); done; fi
step tests .venv/bin/python -m pytest -q --durations=25 "${parallel[@]}" "${ignore[@]}" "$@"
