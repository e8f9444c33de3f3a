"""The core (orchestrator, sandbox, evaluation, users, agents, store) never imports Textual."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = [
    "icae_tui.cli",
    "icae_tui.catalog",
    "icae_tui.run",
    "icae_tui.store",
    "icae_tui.report",
    "icae_tui.headless",
    "icae_tui.agents.registry",
    "icae_tui.users.responders",
    "icae_tui.evaluation.differential",
    "icae_tui.evaluation.scoring",
    "icae_tui.sandbox.images",
]


def test_core_modules_import_without_textual():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"core pulled in Textual: {out.stdout}"


def test_no_textual_import_outside_ui():
    offenders = []
    for path in (ROOT / "icae_tui").rglob("*.py"):
        if "ui" in path.relative_to(ROOT / "icae_tui").parts[:1]:
            continue
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import textual", "from textual")):
                offenders.append(f"{path}: {stripped}")
    assert offenders == []
