#!/usr/bin/env bash
# The test command: engine, package, images, then every test with Docker required.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/env.sh
.venv/bin/ruff check icae_tui tests benchmarks
export ICAE_REQUIRE_DOCKER=1
export ICAE_HOME="${ICAE_HOME:-$(mktemp -d)}"
exec .venv/bin/python -m pytest -q "$@"
