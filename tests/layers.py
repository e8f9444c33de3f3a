"""The layers of icae_tui and what each may import: the table docs/ARCHITECTURE.md shows, as
data (nothing of icae_tui is imported here), and the package's import graph read from its
syntax trees, every import counted: a function's (lazy) and those under `TYPE_CHECKING`.

A module belongs to the layer of the longest name in `LAYERS` its own name starts with
(`icae_tui.runs.kept` is `runs.kept`'s, `icae_tui.runs.log` is `runs`'s). A module may import
any module of its own layer, and of the layers its row names; each row names only layers
above it in the table (lower ones), so the layers can never import each other round. An
import the table refuses that the code still has is in `EXCEPTIONS`, with why.
tests/test_layering.py checks the graph against both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "icae_tui"

# (layer, the layers it may import), lowest first. A layer is a module or package of
# icae_tui, named without the `icae_tui.` prefix ("" is the package itself).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("errors", ()),
    ("util", ()),  # small helpers any layer may use; they import nothing of ours
    ("domain", ("errors",)),  # pydantic models and enums, no I/O
    ("packages.installed", ()),  # what a registry client lists as installed: pure parsing
    ("local_models", ("errors",)),  # a local llama.cpp server and its models
    # the sandbox protocol, the backend registry, generic side effects and output capture
    ("sandbox", ("domain", "errors", "util")),
    # the docker backend: the only layer that imports aiodocker or docker
    ("sandbox.docker", ("sandbox", "domain", "errors", "util", "packages.installed")),
    ("store", ("sandbox", "domain", "errors", "util")),  # runs, events, bounds (the side-effect caps)
    ("packages", ("store", "sandbox", "domain", "errors", "util", "packages.installed")),
    ("gateway", ("sandbox", "domain", "errors", "util")),  # its socket is a box channel
    ("users", ("sandbox", "domain", "errors", "util")),
    ("evaluation", ("gateway", "packages", "sandbox", "domain", "errors", "util")),
    ("catalog", ("domain", "errors", "util")),  # tasks found, validated, listed, searched
    ("agents", ("catalog", "users", "sandbox", "local_models", "domain", "errors", "util")),
    ("results", ("evaluation", "users", "store", "domain", "errors", "util")),
    # the typed run configuration: all a display needs to name a run
    ("runs.config", ("users", "sandbox", "domain", "errors", "util")),
    # the orchestrator (run.py), its log, the socket folders dead runs left
    ("runs", (
        "runs.config", "results", "agents", "evaluation", "users", "gateway", "packages",
        "store", "sandbox", "local_models", "domain", "errors", "util",
    )),  # fmt: skip
    # Textual-free displays: the run view, wording, the run handle, the operator, export
    ("display", ("results", "users", "gateway", "domain", "errors", "util")),
    # the console's live runs and their kept delivery, behind the run handle
    ("runs.kept", ("display", "runs", "runs.config", "evaluation", "store", "sandbox", "domain",
                   "errors", "util")),  # fmt: skip
    # the plain printer (`icae run`, `replay --headless`): a run's lines as they come
    ("display.plain", ("display", "runs", "runs.config", "results", "store", "domain",
                       "errors", "util")),  # fmt: skip
    # `icae tasks check`: a task's data, then its oracle on the engine
    ("catalog.check", ("catalog", "runs", "evaluation", "sandbox", "domain", "errors", "util")),
    ("importers", ("catalog", "sandbox", "domain", "errors", "util")),
    ("batch", (
        "display.plain", "display", "runs", "runs.config", "results", "agents", "store",
        "sandbox", "domain", "errors", "util",
    )),  # fmt: skip
    ("cluster", ("batch", "display", "runs", "runs.config", "catalog", "store", "sandbox",
                 "domain", "errors", "util")),  # fmt: skip
    # the Textual console: never the engine (evaluation, sandbox) nor a run but its
    # configuration and its kept delivery (tests/test_ui_imports.py)
    ("ui", (
        "batch", "runs.kept", "runs.config", "display", "results", "agents", "catalog", "users",
        "gateway", "store", "local_models", "domain", "errors", "util",
    )),  # fmt: skip
    ("cli", (  # the command line: everything
        "ui", "cluster", "batch", "importers", "catalog.check", "display.plain", "runs.kept",
        "display", "runs", "runs.config", "results", "agents", "catalog", "evaluation", "users",
        "gateway", "packages", "store", "sandbox.docker", "sandbox", "local_models",
        "packages.installed", "domain", "errors", "util",
    )),  # fmt: skip
    ("__main__", ("cli",)),
    ("", ()),  # icae_tui/__init__.py
]

# Imports the table refuses that the code has: (importer, imported) → why. Exact: an entry
# that matches no import fails, so it goes with the code it excused.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("icae_tui.sandbox.registry", "icae_tui.sandbox.docker.backend"): (
        "the registry's built-in backend, imported when an engine is first opened or listed "
        "(never at import): the one way up from the sandbox protocol to a backend"
    ),
    ("icae_tui.importers.cli_tool_bench", "icae_tui.sandbox.docker.requires"): (
        "the Debian packages of the requirements' clients (`debian_clients`, pure data beside "
        "the docker backend's install steps); moving CLIENTS and install_steps out of the "
        "backend (e.g. to domain/) would remove it"
    ),
}

# The console's modules, and what they must not reach even through other modules: the
# engine's backend and its clients. Only the run handle's module (runs/kept.py, the kept
# delivery's re-runs and shells) is a way through.
CONSOLE = "icae_tui.ui"
CONSOLE_GATEWAYS = frozenset({"icae_tui.runs.kept"})
CONSOLE_NEVER_MODULES = ("icae_tui.sandbox.docker",)
CONSOLE_NEVER_LIBRARIES = frozenset({"aiodocker", "docker"})


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    assert found, f"no sources under {PACKAGE}"
    return found


def imported(path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """Each import of one module, anywhere in it: its line and what it names — the module of
    ours it imports (`from a import b` imports module `a.b` when there is one, else `a`), or a
    third-party library's top-level name."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known and target.startswith("icae_tui"):
                    target = target.rpartition(".")[0]
                yield node.lineno, target or alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if not base.startswith("icae_tui"):
                yield node.lineno, base.split(".")[0]
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if sub in known else base


def graph() -> dict[str, dict[str, int]]:
    """Module → the modules of ours it imports (each with the line of its first import)."""
    known = modules()
    out: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges: dict[str, int] = {}
        for line, target in imported(path, known):
            if target in known and target != name:
                edges.setdefault(target, line)
        out[name] = edges
    return out


def libraries() -> dict[str, set[str]]:
    """Module → the top-level names it imports that are not ours."""
    known = modules()
    return {
        name: {t for _, t in imported(path, known) if not t.startswith("icae_tui")}
        for name, path in known.items()
    }


def layer_of(module: str) -> str:
    rest = module.removeprefix("icae_tui").removeprefix(".")
    names = {name for name, _ in LAYERS}
    while rest not in names:
        rest = rest.rpartition(".")[0]
    return rest


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), and nodes that
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


def reached(edges: dict[str, set[str]], starts: list[str], *, through: frozenset[str]) -> dict[str, str]:
    """Every module reached from `starts`, never passing `through` those modules or an
    `EXCEPTIONS` import: module → the module it was first reached from."""
    excused = set(EXCEPTIONS)
    came_from: dict[str, str] = {}
    seen = set(starts)
    todo = list(starts)
    while todo:
        node = todo.pop(0)
        for nxt in sorted(edges.get(node, ())):
            if nxt in seen or nxt in through or (node, nxt) in excused:
                continue
            seen.add(nxt)
            came_from[nxt] = node
            todo.append(nxt)
    return came_from
