#!/usr/bin/env bash
# The console's tests under load: two CPU hogs beside pytest tests/ui, N times in a row
# (default 10); stops at the first failing round. Usage: bash scripts/ui_under_load.sh [N] [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-10}"
shift || true
hogs=()
for _ in 1 2; do
  .venv/bin/python -c "while True: pass" &
  hogs+=("$!")
done
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
for round in $(seq 1 "$rounds"); do
  echo "[load] round $round/$rounds (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  log="$(mktemp)"
  if ! .venv/bin/python -m pytest -q -p no:cacheprovider tests/ui "$@" >"$log" 2>&1; then
    tail -30 "$log"
    echo "[load] round $round failed (whole log: $log)"
    exit 1
  fi
  tail -1 "$log"
done
echo "[load] $rounds rounds passed"
