"""What an imported tool needs from the package registries, read (never run) from its files.

- `checkout_requires`: the oracle's declared dependencies, from a checkout's own metadata:
  pyproject.toml (`[project] dependencies`, and `[build-system] requires`, since the checkout
  is installed with no build isolation), setup.cfg (`[options] install_requires`), setup.py
  (`install_requires`, when it is a literal list or a module-level name bound to one),
  requirements.txt, package.json (`dependencies`). As `pip:`/`npm:` requirements
  (domain/task.py REQUIREMENT), each name once (the first source that names it wins).
- `imported_names` and `python_requires`: the third-party modules Python sources import
  (the fuzzer's), the standard library and the tree's own modules left out, each as the
  distribution that provides it (IMPORT_TO_DIST, else the import name).

An entry that cannot be a requirement here (a URL, a local path, an unreadable marker) is
left out with a warning naming it: the image build then says what is missing.
"""

from __future__ import annotations

import ast
import configparser
import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from icae_tui.domain.task import REQUIREMENT
from icae_tui.importers.problems import Problem, Severity

MAX_METADATA = 1024 * 1024
# Import names whose distribution is named otherwise (the common ones; others: the name).
IMPORT_TO_DIST = {
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python-headless",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "jwt": "PyJWT",
    "git": "GitPython",
    "serial": "pyserial",
    "magic": "python-magic",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "attr": "attrs",
    "faker": "Faker",
    "zmq": "pyzmq",
    "fitz": "PyMuPDF",
    "websocket": "websocket-client",
}
# Standard library of the boxes' Python that a newer host's no longer lists.
FORMER_STDLIB = frozenset({"distutils", "imp", "asynchat", "asyncore", "smtpd"})
# What a marker's platform variables are in every box (Debian, CPython).
_BOX_MARKERS = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                "implementation_name": "cpython", "platform_python_implementation": "CPython"}  # fmt: skip


@dataclass
class Found:
    requires: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def add(self, requirement: str) -> None:
        key = _key(requirement)
        if all(_key(r) != key for r in self.requires):
            self.requires.append(requirement)


def _key(requirement: str) -> str:
    kind, spec = requirement.split(":", 1)
    if kind == "npm":
        return "npm:" + (spec[0] + spec[1:].split("@", 1)[0] if spec else spec)
    name = re.match(r"[A-Za-z0-9._-]*", spec)
    return "pip:" + re.sub(r"[-_.]+", "-", name.group(0) if name else spec).lower()


def _marker_holds(marker: str) -> bool | None:
    """Whether a PEP 508 marker holds in a box; None when it cannot be told here (a
    python_version comparison: the runtime decides), which keeps the requirement."""
    try:
        tree = ast.parse(marker.strip(), mode="eval").body
    except SyntaxError:
        return None

    def holds(node: ast.expr) -> bool | None:
        if isinstance(node, ast.BoolOp):
            values = [holds(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in values else (None if None in values else True)
            return True if True in values else (None if None in values else False)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(left, ast.Constant) and isinstance(right, ast.Name):
                left, right = right, left  # `"win32" == sys_platform`
            if not (isinstance(left, ast.Name) and isinstance(right, ast.Constant)):
                return None
            if left.id == "extra":
                return False  # an optional extra: not asked for
            if left.id not in _BOX_MARKERS or not isinstance(right.value, str):
                return None
            value, op = _BOX_MARKERS[left.id], node.ops[0]
            if isinstance(op, ast.Eq | ast.NotEq):
                return (value == right.value) == isinstance(op, ast.Eq)
            if isinstance(op, ast.In | ast.NotIn):
                return (value in right.value) == isinstance(op, ast.In)
        return None

    return holds(tree)


def pip_requirement(line: str) -> tuple[str | None, str | None]:
    """A PEP 508 line as `pip:NAME[extras]SPEC`: (requirement, None), (None, why it cannot
    be one), or (None, None) when its marker leaves it out of a box."""
    text, _, marker = line.partition(";")
    if marker and _marker_holds(marker) is False:
        return None, None
    if "://" in text or text.strip().startswith((".", "/", "file:")):
        return None, "a URL or a path, not a registry requirement"
    compact = re.sub(r"\s+", "", text).replace("(", "").replace(")", "")
    requirement = f"pip:{compact}"
    if not re.fullmatch(REQUIREMENT, requirement):
        return None, "not a requirement this task format takes"
    return requirement, None


def _add_pip(found: Found, lines: object, shown: str, where: str) -> None:
    for line in lines if isinstance(lines, list) else []:
        if not isinstance(line, str) or not line.strip():
            continue
        requirement, why = pip_requirement(line)
        if requirement is not None:
            found.add(requirement)
        elif why is not None:
            found.problems.append(Problem(Severity.WARNING, shown, where,
                                          f"{line.strip()!r} left out of [oracle] requires: "
                                          f"{why}"))  # fmt: skip


def _text(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_METADATA:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def _setup_py(text: str) -> list[str] | None:
    """setup.py's `install_requires`, when it is a literal (or a module-level name bound to
    one); None when it is computed."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    bound = {t.id: node.value for node in module.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}  # fmt: skip
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        for keyword in node.keywords if name == "setup" else []:
            if keyword.arg != "install_requires":
                continue
            value = keyword.value
            if isinstance(value, ast.Name):
                value = bound.get(value.id, value)
            try:
                listed = ast.literal_eval(value)
            except ValueError:
                return None
            if not isinstance(listed, list | tuple):
                return None
            return [r for r in listed if isinstance(r, str)]
    return []


def checkout_requires(checkout: Path) -> Found:
    """The declared dependencies of the checkout's metadata files (none read: none found)."""
    found = Found()

    def shown(name: str) -> str:
        return str(checkout / name)

    if (text := _text(checkout / "pyproject.toml")) is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            found.problems.append(Problem(Severity.WARNING, shown("pyproject.toml"), "",
                                          f"not TOML ({err}): its dependencies are not read"))  # fmt: skip
        else:
            for name, key in (("project", "dependencies"), ("build-system", "requires")):
                table = data.get(name)
                listed = table.get(key) if isinstance(table, dict) else None
                _add_pip(found, listed, shown("pyproject.toml"), f"{name}.{key}")
    if (text := _text(checkout / "setup.cfg")) is not None:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
            listed = parser.get("options", "install_requires", fallback="")
        except configparser.Error:
            listed = ""
        lines = [line.split("#", 1)[0] for line in listed.splitlines()]
        _add_pip(found, lines, shown("setup.cfg"), "options.install_requires")
    if (text := _text(checkout / "setup.py")) is not None:
        listed_py = _setup_py(text)
        if listed_py is None:
            found.problems.append(Problem(Severity.WARNING, shown("setup.py"), "install_requires",
                                          "computed, not a literal: not read (list its "
                                          "dependencies in [oracle] requires by hand)"))  # fmt: skip
        else:
            _add_pip(found, listed_py, shown("setup.py"), "install_requires")
    if (text := _text(checkout / "requirements.txt")) is not None:
        lines = [line.split(" #", 1)[0] for line in text.splitlines()
                 if not line.lstrip().startswith(("#", "-"))]  # fmt: skip
        _add_pip(found, lines, shown("requirements.txt"), "")
    if (text := _text(checkout / "package.json")) is not None:
        _add_npm(found, text, shown("package.json"))
    return found


def _add_npm(found: Found, text: str, shown: str) -> None:
    try:
        deps = json.loads(text).get("dependencies", {})
    except (ValueError, AttributeError):
        deps = None
    if not isinstance(deps, dict):
        found.problems.append(Problem(Severity.WARNING, shown, "dependencies",
                                      "not read: not a JSON object"))  # fmt: skip
        return
    for name, version in deps.items():
        requirement = f"npm:{name}" if version in ("", "*") else f"npm:{name}@{version}"
        if isinstance(version, str) and re.fullmatch(REQUIREMENT, requirement):
            found.add(requirement)
        else:
            found.problems.append(Problem(Severity.WARNING, shown, f"dependencies.{name}",
                                          f"{version!r} left out of [oracle] requires: not a "
                                          "registry version or range"))  # fmt: skip


def imported_names(source: str) -> list[str]:
    """The top-level modules `source` imports (absolute imports, wherever they are: in a
    try block, a function), in order of appearance. SyntaxError when it is not Python."""
    names: dict[str, None] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(dict.fromkeys(a.name.split(".")[0] for a in node.names))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names[node.module.split(".")[0]] = None
    return list(names)


def python_requires(names: list[str], local: set[str]) -> list[str]:
    """The modules of `names` that are neither the standard library nor `local` (the tree's
    own), as `pip:DIST` requirements, sorted."""
    out = Found()
    for name in names:
        if name in sys.stdlib_module_names or name in FORMER_STDLIB or name in local:
            continue
        out.add(f"pip:{IMPORT_TO_DIST.get(name, name)}")
    return sorted(out.requires, key=str.lower)
