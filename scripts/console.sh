#!/usr/bin/env bash
# Open the console on the bundled sample tasks (sets up engine, package and images first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/env.sh
exec .venv/bin/icae "$@"
