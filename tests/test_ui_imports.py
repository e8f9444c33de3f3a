"""What the console's modules (icae_tui/ui) import, read from their syntax trees (nothing is
imported, no Textual needed):

- no import cycle among them, counting every import (a function's, and those under
  `TYPE_CHECKING`: a cycle there is still two modules that cannot be read apart);
- none reaches the engine (`icae_tui.evaluation`, `icae_tui.sandbox`): the console drives a
  run through its handle (icae_tui/display/handle.py);
- of the runs (`icae_tui.runs`) they take the typed configuration (`runs/config.py`: what run
  setup returns and the app starts) and the console's live runs (`runs/kept.py`, behind the
  run handle), never the orchestrator (`runs/run.py`) or its log;
- no screen calls the app's own methods unchecked (`# type: ignore`): it posts a message
  (icae_tui/ui/requests.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UI = ROOT / "icae_tui" / "ui"
ENGINE = ("icae_tui.evaluation", "icae_tui.sandbox")
RUNS = "icae_tui.runs"
RUNS_ALLOWED = {"icae_tui.runs.config", "icae_tui.runs.kept"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """Each import of a module: its line, the module imported, the names taken from it."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [alias.name for alias in node.names]
            yield node.lineno, base, names
            for name in names:  # `from icae_tui.ui.screens import run` imports a module
                yield node.lineno, f"{base}.{name}", []


def ui_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(UI.rglob("*.py"))}


def graph() -> dict[str, set[str]]:
    modules = ui_modules()
    return {
        name: {target for _, target, _ in imports(path) if target in modules and target != name}
        for name, path in modules.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and modules that
    import themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_among_the_console_modules():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_console_reaches_no_engine_and_no_run_but_its_config():
    found = []
    for name, path in ui_modules().items():
        for line, target, names in imports(path):
            where = f"{name}:{line}"
            if target.startswith(ENGINE):
                found.append(f"{where} imports {target}")
            elif target == RUNS:  # `from icae_tui.runs import x`: each x is a module
                refused = sorted(f"{RUNS}.{n}" for n in names if f"{RUNS}.{n}" not in RUNS_ALLOWED)
                found += [f"{where} imports {module}" for module in refused]
            elif target.startswith(f"{RUNS}.") and ".".join(target.split(".")[:3]) not in RUNS_ALLOWED:
                found.append(f"{where} imports {target}")
    assert found == []


def test_no_unchecked_call_to_the_app():
    found = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in UI.rglob("*.py")
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if "type: ignore[attr-defined]" in line
    ]
    assert found == []
