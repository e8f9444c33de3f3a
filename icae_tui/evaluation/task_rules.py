"""A task's `[rules]` checked on the delivery's sources — statically, each violation with its
file (and line).

- `forbidden_imports`: a source imports the module or one under it (`os` forbids `os.path`),
  by its language's import forms: Python `import` / `from … import` / `__import__("…")` /
  `importlib.import_module("…")`; JavaScript and TypeScript `require("…")`, `import … from
  "…"`, `import("…")` (a `node:` prefix dropped); Go `import "…"`; Rust `use …::` /
  `extern crate`; Ruby `require`; Java `import …;`; C and C++ `#include <…>`.
- `forbidden_libraries`: the same imports of the package, or the package declared in a
  manifest (`requirements*.txt`, `pyproject.toml`, `setup.py`, `package.json`'s
  dependencies, `go.mod`, `Cargo.toml`, `Gemfile`). A library whose import name differs
  from its package name (PyYAML / `yaml`) is found by the manifest only: list both names.
- `required_files`: a file at that path, relative to the workspace.

A name built at run time (`__import__("o" + "s")`) is not seen: this is a check of what the
sources say, not a sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from icae_tui.domain.diagnostics import RulesCheck, RuleViolation
from icae_tui.domain.task import RulesSpec
from icae_tui.util.documents import load_json

_PY = (
    re.compile(r"^\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)", re.M),
    re.compile(r"^\s*from\s+([\w.]+)\s+import\b", re.M),
    re.compile(r"__import__\(\s*[\"']([\w.]+)[\"']"),
    re.compile(r"import_module\(\s*[\"']([\w.]+)[\"']"),
)
_JS = (
    re.compile(r"\brequire\(\s*[\"'`]([^\"'`]+)[\"'`]\s*\)"),
    re.compile(r"^\s*import\b[^;\"'`]*?\bfrom\s*[\"']([^\"']+)[\"']", re.M),
    re.compile(r"^\s*import\s*[\"']([^\"']+)[\"']", re.M),
    re.compile(r"\bimport\(\s*[\"'`]([^\"'`]+)[\"'`]\s*\)"),
    re.compile(r"^\s*export\b[^;\"'`]*?\bfrom\s*[\"']([^\"']+)[\"']", re.M),
)
_GO = (re.compile(r"^\s*(?:import\s+)?(?:[\w.]+\s+)?\"([\w./-]+)\"", re.M),)
_RUST = (re.compile(r"^\s*(?:pub\s+)?use\s+(\w+)::", re.M), re.compile(r"extern\s+crate\s+(\w+)"))
_RUBY = (re.compile(r"^\s*require(?:_relative)?\s*\(?\s*[\"']([^\"']+)[\"']", re.M),)
_JAVA = (re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+)\s*;", re.M),)
_C = (re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]", re.M),)
IMPORT_FORMS: dict[str, tuple[re.Pattern[str], ...]] = {
    ".py": _PY, ".js": _JS, ".mjs": _JS, ".cjs": _JS, ".ts": _JS, ".tsx": _JS, ".mts": _JS,
    ".cts": _JS, ".go": _GO, ".rs": _RUST, ".rb": _RUBY, ".java": _JAVA, ".c": _C, ".h": _C,
    ".cc": _C, ".cpp": _C, ".cxx": _C, ".hpp": _C, ".hh": _C,
}  # fmt: skip
MANIFESTS = ("requirements", "pyproject.toml", "setup.py", "setup.cfg", "package.json",
             "go.mod", "Cargo.toml", "Gemfile")  # fmt: skip


def _suffix(path: str) -> str:
    name = path.rpartition("/")[2]
    return name[name.rfind(".") :] if "." in name else ""


def imports_of(path: str, text: str) -> Iterator[tuple[str, int]]:
    """(module, line number) of each import the file's language's forms find."""
    for form in IMPORT_FORMS.get(_suffix(path), ()):
        for match in form.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            for name in match.group(1).split(","):
                name = name.strip()
                if name.startswith("node:"):
                    name = name[5:]
                if name:
                    yield name, line


def _under(module: str, name: str) -> bool:
    """`module` is `name` or one of its submodules (dots, slashes, `::`)."""
    if module == name:
        return True
    return any(module.startswith(name + sep) for sep in (".", "/", "::"))


def _declared(path: str, text: str, library: str) -> int | None:
    """The line a manifest declares `library` on, else None."""
    name = path.rpartition("/")[2]
    if not (name.startswith("requirements") or name in MANIFESTS):
        return None
    if name == "package.json":
        try:
            data = load_json(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            for key in ("dependencies", "devDependencies", "optionalDependencies",
                        "peerDependencies"):  # fmt: skip
                deps = data.get(key)
                if isinstance(deps, dict) and library in deps:
                    return next((i + 1 for i, ln in enumerate(text.splitlines())
                                 if f'"{library}"' in ln), 1)  # fmt: skip
        return None
    pattern = re.compile(rf"(?<![\w.-]){re.escape(library)}(?![\w-])", re.I)
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        if pattern.search(line):
            return number
    return None


def check_rules(rules: RulesSpec, files: set[str], texts: Mapping[str, str]) -> RulesCheck:
    """`files`: the delivery's file paths (relative to the workspace); `texts`: the text
    of its source files and manifests, by the same paths."""
    out = RulesCheck(checked=rules.count)
    for path in rules.required_files:
        if path.rstrip("/") not in files:
            out.violations.append(RuleViolation(rule="required_file", name=path, file=path))
    if not (rules.forbidden_imports or rules.forbidden_libraries):
        return out
    for path, text in sorted(texts.items()):
        for module, line in imports_of(path, text):
            for name in rules.forbidden_imports:
                if _under(module, name):
                    out.violations.append(
                        RuleViolation(rule="forbidden_import", name=name, file=path, line=line)
                    )
            for name in rules.forbidden_libraries:
                if _under(module, name):
                    out.violations.append(
                        RuleViolation(rule="forbidden_library", name=name, file=path, line=line)
                    )
        for name in rules.forbidden_libraries:
            if (declared := _declared(path, text, name)) is not None:
                out.violations.append(
                    RuleViolation(rule="forbidden_library", name=name, file=path, line=declared)
                )
    return out


def is_manifest(path: str) -> bool:
    name = path.rpartition("/")[2]
    return name.startswith("requirements") or name in MANIFESTS
