#!/usr/bin/env bash
# Shared by scripts/console.sh and scripts/test.sh: engine up, venv with the package, images.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/engine.sh

# Headless Chromium, for the test that opens the HTML report (tests/test_report_html_chromium.py)
if ! command -v chromium >/dev/null 2>&1; then
  echo "[env] installing chromium (Debian package)"
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q chromium >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "[env] creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import icae_tui, pytest, ray" >/dev/null 2>&1 \
   || [ pyproject.toml -nt .venv/.installed ]; then
  echo "[env] installing icae-tui and its dev tools into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # the ray extra too: the cluster test (tests/integration/test_ray_cluster.py) runs in CI
  .venv/bin/python -m pip install -q -e ".[dev,ray]"
  touch .venv/.installed
fi

echo "[env] building images (offline; the first time takes a few minutes)"
.venv/bin/icae images build
