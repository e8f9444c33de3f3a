"""The core (orchestrator, sandbox, evaluation, users, agents, store) never imports Textual;
the display model (icae_tui.display) imports neither Textual nor Rich."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = [
    "icae_tui.cli",
    "icae_tui.cli.root",
    "icae_tui.catalog.loader",
    "icae_tui.runs.config",
    "icae_tui.runs.run",
    "icae_tui.runs.log",
    "icae_tui.store.database",
    "icae_tui.results.report",
    "icae_tui.catalog.search",
    "icae_tui.catalog.check",
    "icae_tui.display.plain",
    "icae_tui.display",
    "icae_tui.agents.registry",
    "icae_tui.users.responders",
    "icae_tui.evaluation.differential",
    "icae_tui.evaluation.scoring",
    "icae_tui.sandbox.docker.images",
]


DISPLAY = ["icae_tui.display", "icae_tui.display.view", "icae_tui.display.wording",
           "icae_tui.display.sources", "icae_tui.display.progress",
           "icae_tui.display.results_filter", "icae_tui.display.export"]  # fmt: skip


def imported(modules: list[str], roots: tuple[str, ...]) -> str:
    """Which of the `roots` packages importing `modules` in a fresh interpreter pulls in."""
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"roots = {roots!r}\n"
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in roots)\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_core_modules_import_without_textual():
    pulled = imported(CORE, ("textual",))
    assert pulled == "", f"core pulled in Textual: {pulled}"


def test_the_display_model_imports_neither_textual_nor_rich():
    pulled = imported(DISPLAY, ("textual", "rich"))
    assert pulled == "", f"icae_tui.display pulled in: {pulled}"
    offenders = []
    for path in (ROOT / "icae_tui" / "display").rglob("*.py"):
        for line in path.read_text().splitlines():
            if line.strip().startswith(("import rich", "from rich", "import textual")):
                offenders.append(f"{path}: {line.strip()}")
            if line.strip().startswith(("from textual", "from icae_tui.ui", "import icae_tui.ui")):
                offenders.append(f"{path}: {line.strip()}")
    assert offenders == []


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
