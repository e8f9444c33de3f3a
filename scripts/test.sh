#!/usr/bin/env bash
# The test command: engine, package, images, then every test with Docker required.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/env.sh
.venv/bin/ruff check icae_tui tests benchmarks
# Types: strict on the whole package (config in pyproject.toml); it must report nothing.
.venv/bin/mypy
# The verdict ladder is pure: its table tests need no Docker and must cover nearly all of it.
.venv/bin/python -m pytest -q -p no:cacheprovider tests/test_verdict.py tests/test_verdict_faults.py \
  --cov=icae_tui.evaluation.verdict --cov-report=term-missing --cov-fail-under=95
export ICAE_REQUIRE_DOCKER=1
export ICAE_REQUIRE_RAY=1  # the ray extra is installed by env.sh: its test must not skip
export ICAE_HOME="${ICAE_HOME:-$(mktemp -d)}"
exec .venv/bin/python -m pytest -q "$@"
