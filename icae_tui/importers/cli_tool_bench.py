"""`icae tasks import cli-tool-bench PATH`: a CLI-Tool-Bench tree's tools as task folders.

A tool `owner/repo` is `run_differential_test/repo/<owner>/<repo>/start.py` (its adapter and
fuzzer, on the tree's `run_differential_test/BaseRepoAdapter.py`) with its agent prompt
`agent_prompt/<owner>/<repo>/agent_prompt.txt`. It becomes `<tasks>/ctb-<owner>-<repo>`:

- the agent prompt is the PRD of every level, followed by how the delivery is run here;
- the fuzzer's cases are generated once, here, with a fixed seed (kept in [origin] seed):
  CLI-Tool-Bench's fuzzers are unseeded, so each agent there sees other cases; here every
  agent sees the same ones. The fuzzer is third-party code: it runs in a box (the runner
  the caller gives, sandbox/docker/fuzz.py), never on the host, and what it prints is
  validated and bounded before anything is written. Each case's `category` is its command
  pattern, `mount_files` its fixtures under the work directory `/test_data`, `prep_script`
  its prep line (null: none), `env_vars` exported before its command. A category's first
  case (the fuzzers' edge case) is public, the others hidden. A case with a NUL in its
  command, prep line or an exported value is left out, with a warning naming it: no argv
  carries a NUL, so both sides would fail alike in the shell: the case would test the shell.
- CLI-Tool-Bench stores no expected output (it judges each case against the live oracle,
  as runs here do). Given an oracle runner (the command's: the oracle image built from the
  task's recipe, each case run once in its box, third-party code never on the host), each
  case's `expected_output` is then the oracle's stdout at import: what `icae tasks verify`
  and `check` hold the oracle to later (a rebuilt image that answers otherwise, a case that
  varies from run to run), and what a reader of the case sees it print. A case whose oracle
  run broke a bound of its box is said; an oracle image that does not build fails the tool.
- the tool's name (the command its cases call, moved off PATH in the oracle's image) is the
  one its repository gives it (console scripts, npm bins, the package's or folder's name),
  else its prompt's, confirmed by the cases calling it; a system command (`cat FILE | tool`)
  only when the repository installs or is named so; an ambiguous one fails the tool.
- an adapter's `sanitize_stdout` (CLI-Tool-Bench masks volatile output with it before
  comparing) becomes the task's `[sanitizer]`: the fuzzer's files under sanitizer/ and a
  program that runs the adapter's method there (evaluation/sanitizer.py runs it in a box);
  the oracle runs twice (`oracle_runs = 2`), so what it still varies on is set apart.
- the oracle's recipe is the adapter's (`install_oracle`, `base_image`, recorded in
  origin/cli-tool-bench.json), with its source replaced (`--oracle owner/repo=SOURCE`): a
  pinned registry package (`pip:NAME==V`, `npm:NAME@V`, [oracle] package, installed at
  image-build time) or a local checkout (copied into oracle/, the adapter's `git clone`
  becoming a copy of it). [origin] oracle_source says which. The adapter clones its
  source live and unpinned: without --oracle the tool is not imported.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from icae_tui.catalog.loader import TaskError, load_task
from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.runtimes import Release, runtime_problem
from icae_tui.domain.task import (
    PINNED_PACKAGE,
    Case,
    OriginSource,
    Reference,
    StderrPolicy,
    Task,
    TaskSpec,
)
from icae_tui.errors import ConfigError, ImageBuildError
from icae_tui.importers.ctb_fuzz_main import FUZZ_MAIN, SANITIZE_MAIN
from icae_tui.importers.declared import checkout_requires, imported_names, python_requires
from icae_tui.importers.folder_sync import Change, sync_folder
from icae_tui.importers.icae_eval import ImportReport, Outcome, TaskImport
from icae_tui.importers.json_format import OURS, dump
from icae_tui.importers.operator_edits import Edits, Found, Listed, read_edits
from icae_tui.importers.problems import Problem, Severity, errors_in, field_path
from icae_tui.importers.toml_text import TomlValue, toml_table
from icae_tui.sandbox.docker.requires import debian_clients
from icae_tui.util.safe_text import printable

SANITIZER_PROGRAM = "sanitizer/icae_sanitize.py"
SEED = 20260101  # every import's cases, unless --seed says otherwise
REPO_DIR = "run_differential_test/repo"
BASE_ADAPTER = "run_differential_test/BaseRepoAdapter.py"
PROMPT = "agent_prompt/{tool}/agent_prompt.txt"
ORIGIN_FILE = "origin/cli-tool-bench.json"
WORKDIR = "/test_data"
BOX_ROOT = "/fuzz"
ORACLE_BIN = "/opt/icae-oracle-bin"
# How CLI-Tool-Bench judges a case (its DiffTestEngine): the files of its test-data folder
# (and the tool's own repository, whose counterpart here is each side's install: never
# compared) and one output stream, stderr merged into stdout, the oracle run from the path
# the delivery's tool is called by.
BENCH_SCOPE: dict[str, TomlValue | None] = {
    "compare_roots": [WORKDIR], "stderr": StderrPolicy.MERGE.value,
    "oracle_at_delivery_path": True,
}  # fmt: skip
MAX_OUTPUT = 32 * 1024 * 1024  # the fuzzer's JSON, read back from the box
MAX_SOURCE = 1024 * 1024  # start.py, BaseRepoAdapter.py
MAX_PROMPT = 1024 * 1024
FUZZ_TIMEOUT_S = 300.0
STUBBED = ("DiffTestEngine",)  # the benchmark's docker runner: the box's FUZZ_MAIN stubs it
MAX_MODULES = 32  # the tree's modules a fuzzer's files bring along
_IMAGES = {"python": "python", "node": "javascript", "golang": "go", "rust": "rust"}
_PACKAGES = {"pip": ["python3-pip"], "npm": ["npm"]}
_PINNED_LANGUAGE = {"pip": "python", "npm": "javascript"}
_PIP = re.compile(r"(?<![\w./-])(?:python3? -m )?pip3? install(?=\s)")
_NPM = re.compile(r"(?<![\w./-])npm (?:install|i|ci)(?=\s|$)")
PIP_OFFLINE = "python3 -m pip install --no-index --no-build-isolation --break-system-packages"
_TOOL = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_CLONE = re.compile(
    r"git\s+clone\s+(?:-\S+\s+)*(\S+?)(?:\.git)?(?:\s+([^\s&;|]+))?(?=\s*(?:&&|;|$))"
)


@dataclass(frozen=True)
class FuzzJob:
    files: dict[str, bytes]  # absolute paths in the box
    argv: list[str]
    workdir: str
    env: dict[str, str]
    timeout_s: float
    cap_bytes: int
    requires: tuple[str, ...] = ()  # installed into the image its box is made from


@dataclass(frozen=True)
class FuzzRun:
    exit_code: int | None
    stdout: bytes
    stderr_tail: bytes = b""
    overflowed: bool = False
    timed_out: bool = False


FuzzRunner = Callable[[FuzzJob], FuzzRun]


@dataclass(frozen=True)
class OracleRecord:
    """What an oracle runner found: each case's (by CaseRef.id) one run on the oracle, in a
    box, and every package its pinned `package` installed, pinned ([oracle] locked)."""

    runs: dict[str, SideOutcome]
    locked: list[str] = field(default_factory=list)


OracleRunner = Callable[[Task], OracleRecord]

Text = Annotated[str, StringConstraints(max_length=100_000)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]


class FuzzCase(BaseModel):
    """One TestCase as the fuzzer gave it: hostile until it passes these bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Annotated[str, StringConstraints(min_length=1, max_length=20_000)]
    category: Annotated[str, StringConstraints(min_length=1, max_length=500)] = "UNKNOWN"
    prep_script: Text | None = ""  # null: no prep, as CLI-Tool-Bench runs one only when set
    mount_files: dict[Annotated[str, StringConstraints(min_length=1, max_length=500)], Text] = (
        Field(default_factory=dict, max_length=500)
    )
    env_vars: dict[EnvName, Annotated[str, StringConstraints(max_length=10_000)]] = Field(
        default_factory=dict, max_length=100
    )


class FuzzOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_image: Annotated[str, StringConstraints(max_length=300)]
    install: list[Annotated[str, StringConstraints(max_length=20_000)]] = Field(max_length=50)
    cases: list[FuzzCase] = Field(min_length=1, max_length=20_000)
    sanitizes: bool = False  # the adapter masks parts of the output (sanitize_stdout)


def task_id(tool: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", tool.lower()).strip("-")
    return ("ctb-" + slug)[:64].rstrip("-")


def tools_of(tree: Path) -> list[str]:
    root = tree / REPO_DIR
    found = sorted(p.parent.relative_to(root).as_posix() for p in root.glob("*/*/start.py"))
    return [t for t in found if not (root / t / "start.py").is_symlink()]


def _read(path: Path, limit: int) -> bytes:
    if path.is_symlink() or not path.is_file():
        raise ValueError("missing" if not path.exists() else "not a regular file")
    if path.stat().st_size > limit:
        raise ValueError(f"larger than {limit} bytes")
    return path.read_bytes()


def _imports(source: bytes) -> list[str]:
    try:
        return imported_names(source.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        return []  # not Python: its box says so when it runs


def fuzzer_files(tree: Path, tool: str) -> tuple[dict[str, bytes], set[str]]:
    """The fuzzer's files by path in the tree: start.py, the base adapter and the tree's
    modules they import (next to start.py or in run_differential_test/, as CLI-Tool-Bench
    runs start.py), but DiffTestEngine (stubbed in the box); and the names of the tree's
    own modules they import. ValueError when start.py or the base adapter cannot be read."""
    start = f"{REPO_DIR}/{tool}/start.py"
    files = {BASE_ADAPTER: _read(tree / BASE_ADAPTER, MAX_SOURCE),
             start: _read(tree / start, MAX_SOURCE)}  # fmt: skip
    local = set(STUBBED) | {"BaseRepoAdapter"}
    queue = [start, BASE_ADAPTER]
    while queue:
        for name in _imports(files[queue.pop()]):
            for folder in (f"{REPO_DIR}/{tool}", "run_differential_test"):
                rel, module = f"{folder}/{name}.py", tree / folder / f"{name}.py"
                if not (module.is_file() or (tree / folder / name).is_dir()):
                    continue
                local.add(name)
                if name not in STUBBED and rel not in files and module.is_file() and (
                    not module.is_symlink() and len(files) < MAX_MODULES
                ):
                    try:
                        files[rel] = _read(module, MAX_SOURCE)
                    except ValueError as err:
                        raise ValueError(f"{rel}, which it imports: {err}") from None
                    queue.append(rel)
                break  # the first folder's, as Python's path finds it
    return files, local


def fuzzer_requires(tree: Path, tool: str) -> list[str]:
    """The fuzzer's third-party modules as `pip:` requirements ([fuzz] requires)."""
    files, local = fuzzer_files(tree, tool)
    return python_requires([n for source in files.values() for n in _imports(source)], local)


def sanitizer_files(tree: Path, tool: str) -> dict[str, bytes | Path]:
    """The task's sanitizer/ folder: the fuzzer's files (its adapter) at their paths in the
    tree, and the program that masks texts with the adapter's sanitize_stdout."""
    found, _ = fuzzer_files(tree, tool)
    files: dict[str, bytes | Path] = {f"sanitizer/{rel}": data for rel, data in found.items()}
    files[SANITIZER_PROGRAM] = SANITIZE_MAIN.replace(
        "sys.argv[1]", repr(f"{REPO_DIR}/{tool}/start.py")
    ).encode()
    return files


def fuzz_job(tree: Path, tool: str, seed: int, requires: list[str] | None = None) -> FuzzJob:
    """The fuzzer's run; `requires` (default: what its files import) go into its image."""
    start = f"{BOX_ROOT}/{REPO_DIR}/{tool}/start.py"
    found, _ = fuzzer_files(tree, tool)
    files = {f"{BOX_ROOT}/{rel}": data for rel, data in found.items()}
    files[f"{BOX_ROOT}/icae_fuzz_main.py"] = FUZZ_MAIN.encode()
    return FuzzJob(
        files=files, argv=["python3", f"{BOX_ROOT}/icae_fuzz_main.py", str(seed), start],
        workdir=f"{BOX_ROOT}/{REPO_DIR}/{tool}",
        env={"PYTHONHASHSEED": str(seed), "PYTHONDONTWRITEBYTECODE": "1"},
        timeout_s=FUZZ_TIMEOUT_S, cap_bytes=MAX_OUTPUT,
        requires=tuple(fuzzer_requires(tree, tool) if requires is None else requires),
    )  # fmt: skip


def _unwrap(command: str) -> str:
    """`sh -c '<line>'` (as the adapters call exec_run) → the line."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0] in ("sh", "bash", "/bin/sh") and words[1] == "-c":
        return words[2]
    return command


# Debian bookworm minbase's (the base image's) /usr/bin and /bin, and python3's: a tool is
# never named so from its cases or prompt alone (`cat FILE | tool` would make it `cat`, and the
# import would move the system's cat off PATH); only the repository itself can say so.
_SYSTEM = """
    [ arch awk b2sum base32 base64 basename basenc bash cat chcon chgrp chmod chown chroot cksum
    cmp comm cp csplit cut dash date dd df diff diff3 dir dircolors dirname du echo egrep env
    expand expr factor false fgrep find fmt fold getopt grep groups gunzip gzip head hostid
    hostname id install join kill link ln logname ls mawk md5sum mkdir mkfifo mknod mktemp more
    mount mv nice nl nohup nproc numfmt od paste pathchk perl pinky pr printenv printf ptx pwd
    python python3 readlink realpath rm rmdir runcon sdiff sed seq sh sha1sum sha224sum sha256sum
    sha384sum sha512sum shred shuf sleep sort split stat stdbuf stty su sum sync tac tail tar tee
    test timeout touch tr true truncate tsort tty umount uname unexpand uniq unlink users vdir
    wc which who whoami xargs yes zcat
"""
SYSTEM_COMMANDS = frozenset(_SYSTEM.split())
_SEGMENT = re.compile(r"\|\|?|&&|;|\$\(|`|\n")  # where a shell line's next command starts
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _called_words(text: str) -> list[str]:
    """The words in command position of a shell line (each pipeline member's, each list
    member's, each substitution's), skipping `VAR=value` prefixes and `export`."""
    words = []
    for segment in _SEGMENT.split(text):
        parts = [w for w in segment.replace("(", " ").split() if not _ASSIGN.match(w)]
        if parts and parts[0] not in ("export", "exec", "time", "!"):
            words.append(parts[0])
    return words


def _script_names(text: str) -> list[str]:
    """The `NAME = module:func` entries of a console_scripts listing (setup.cfg, setup.py)."""
    return re.findall(r"""(?m)(?:^|["'\[,])\s*([A-Za-z0-9][\w.-]*)\s*=\s*[\w.]+:[\w.]+""", text)


@dataclass(frozen=True)
class Declared:
    """What a tool's repository says it is called: the executables its metadata installs
    (console scripts, npm bins) and the names it goes by (its package's, its folder's)."""

    executables: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the package's own name (the repository's)
    folders: list[str] = field(default_factory=list)  # the repository's folder name(s)


def declared_names(tool: str, source: str) -> Declared:
    """The names `tool`'s repository gives its command: a local checkout's package metadata
    (pyproject.toml, setup.cfg, setup.py, package.json), a pinned package's name, and the
    repository's folder name (`owner/<repo>`, the checkout's folder)."""
    executables: list[str] = []
    names: list[str] = []
    folders = [tool.rsplit("/", 1)[-1].lower()]
    if (pinned := re.match(PINNED_PACKAGE, source)) is not None:
        spec = pinned.group(0).split(":", 1)[1]
        names.append(re.split(r"==|@(?=[0-9])", spec)[0].rsplit("/", 1)[-1].lower())
        return Declared(executables, names, folders)
    checkout = Path(source).expanduser()
    folders.append(checkout.resolve().name.lower())

    def text(name: str) -> str:
        try:
            return _read(checkout / name, MAX_SOURCE).decode("utf-8")
        except (ValueError, UnicodeDecodeError, OSError):
            return ""

    try:
        pyproject = tomllib.loads(text("pyproject.toml"))
    except tomllib.TOMLDecodeError:
        pyproject = {}
    tools = pyproject.get("tool")
    poetry = tools.get("poetry") if isinstance(tools, dict) else None
    project = pyproject.get("project")
    for table in (project, poetry):  # PEP 621's, then Poetry's
        if isinstance(table, dict):
            scripts = table.get("scripts", {})
            executables += list(scripts) if isinstance(scripts, dict) else []
            names += [table["name"]] if isinstance(table.get("name"), str) else []
    setup_cfg, setup_py = text("setup.cfg"), text("setup.py")
    for found in (setup_cfg, setup_py):
        if "console_scripts" in found:
            executables += _script_names(found.split("console_scripts", 1)[1])
    names += re.findall(r"(?m)^name\s*=\s*([\w.-]+)\s*$", setup_cfg)[:1]
    names += re.findall(r"""\bname\s*=\s*["']([\w.-]+)["']""", setup_py)[:1]
    try:
        package = json.loads(text("package.json") or "{}")
    except ValueError:
        package = {}
    if isinstance(package, dict):
        npm_name = package.get("name")
        npm_name = npm_name.rsplit("/", 1)[-1] if isinstance(npm_name, str) else None
        bins = package.get("bin")
        if isinstance(bins, dict):
            executables += [k.rsplit("/", 1)[-1] for k in bins if isinstance(k, str)]
        elif isinstance(bins, str) and npm_name:
            executables.append(npm_name)  # npm names a single bin after the package
        names += [npm_name] if npm_name else []
    return Declared([e.lower() for e in executables], [n.lower() for n in names], folders)


def tool_name(
    declared: Declared, prompt_name: str | None, cases: list[FuzzCase]
) -> tuple[str | None, str]:
    """The command the cases call the tool by: the name its repository (or else the prompt)
    gives it, confirmed by the cases calling it; a system command only when the repository
    installs or is named so. (None, why) when no such name, or more than one, is left."""
    called = Counter(w for c in cases for text in (c.category, c.command)
                     for w in set(_called_words(text)))  # fmt: skip

    def confirmed(names: list[str], repository_says: set[str]) -> list[str]:
        return list(dict.fromkeys(n for n in names if _TOOL.match(n) and called[n]
                                  and (n in repository_says or n not in SYSTEM_COMMANDS)))  # fmt: skip

    # the executables it installs; else its package's or folder's name; else the prompt's
    own = set(declared.executables) | set(declared.names)  # a system name only from these
    tiers = [declared.executables, [*declared.names, *declared.folders],
             [prompt_name] if prompt_name else []]  # fmt: skip
    for names in tiers:
        found = confirmed(names, own)
        if len(found) == 1:
            return found[0], ""
        if len(found) > 1:
            if prompt_name in found:  # the prompt settles which of the repository's it is
                return prompt_name, ""
            return None, f"the cases call more than one of its names: {', '.join(found)}"
    said = list(dict.fromkeys([*declared.executables, *declared.names, *declared.folders,
                               *([prompt_name] if prompt_name else [])]))  # fmt: skip
    most = [w for w, _ in called.most_common(5)]
    return None, (f"the repository and prompt name it {', '.join(said) or 'nothing'}, and the "
                  f"cases call none of these (they call {', '.join(most) or 'nothing'})")  # fmt: skip


def _prompt_name(prompt: str) -> str | None:
    """The agent prompt's `**CLI Tool Name**: NAME`, when it is a command name."""
    match = re.search(r"\*\*CLI Tool Name\*\*:\s*`?([^\s`*]+)", prompt)
    return match.group(1) if match and _TOOL.match(match.group(1)) else None


def _slug(category: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "_", category.lower()).strip("_")[:60] or "case"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _nul_in(case: FuzzCase) -> str | None:
    """The field of `case` that holds a NUL where it becomes a shell line's argv (its
    command, its prep line, an exported variable's value), if one does."""
    if "\0" in case.command:
        return "command"
    if "\0" in (case.prep_script or ""):
        return "prep_script"
    return next((f"env_vars.{k}" for k, v in case.env_vars.items() if "\0" in v), None)


def _command(case: FuzzCase) -> str:
    if not case.env_vars:
        return case.command
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in case.env_vars.items())
    return f"export {exports}; {case.command}"


def contract(tool: str) -> str:
    return (
        "\n\n## How the delivery is run here\n\n"
        f"Deliver the tool as one executable file, `/workspace/{tool}` (a script with a `#!` "
        f"line; python3 is installed). Every command runs with `{tool}` on PATH calling it, in "
        f"`{WORKDIR}`, where the case's files are written first. Its exit code, stdout, stderr "
        f"and the files it changes under `{WORKDIR}` are compared with the original tool's.\n\n"
        "Packages: your box has no network but this run's package registry, through which "
        "`pip install NAME` and `npm install NAME` work as usual (a name this task does not "
        "allow is refused, with a message saying so). What you install stays in your box, "
        "which is what the cases run, later and without network; list what the tool needs "
        "in `/workspace` (requirements.txt, or package.json with its package-lock.json).\n"
    )


@dataclass
class _Built:
    files: dict[str, bytes | Path]
    reference: Reference
    oracle_source: str
    cases: dict[str, tuple[str, list[Case]]] = field(default_factory=dict)  # file → its cases


def oracle_of(built: _Built) -> str:
    return built.oracle_source


def _copy_of_checkout(m: re.Match[str]) -> str:
    """The adapter's `git clone URL [DIR]` as a copy of the checkout (at /opt/oracle)."""
    return f"cp -a /opt/oracle {shlex.quote(m.group(2) or m.group(1).rsplit('/', 1)[-1])}"


def offline(lines: list[str]) -> tuple[list[str], list[str]]:
    """A checkout's install lines as they can run with no network, and the Debian packages
    they then need: `pip install` from the system's pip, setuptools and wheel (no index, no
    build isolation: a dependency the system lacks fails the image build, said there)."""
    if not any(_PIP.search(line) for line in lines):
        return lines, ["npm"] if any(_NPM.search(line) for line in lines) else []
    lines = [_PIP.sub(PIP_OFFLINE, line) for line in lines]
    return lines, ["python3-pip", "python3-setuptools", "python3-wheel"]


def oracle_off_path(name: str) -> str:
    """The install line that takes the installed `name` off PATH (the delivery's is the one
    there) to ORACLE_BIN, the oracle's entry. A link (npm's global bin: a relative link into
    its node_modules) is made again to what it resolves to, which a move would break."""
    return (f'p="$(command -v {name})" && mkdir -p {ORACLE_BIN} && if [ -L "$p" ]; then '
            f'ln -s "$(readlink -f "$p")" {ORACLE_BIN}/{name} && rm "$p"; '
            f'else mv "$p" {ORACLE_BIN}/{name}; fi')  # fmt: skip


def _oracle(
    tool: str, name: str, source: str, install: list[str], shown: str
) -> tuple[dict[str, TomlValue | None], dict[str, Path], Problem | None]:
    move = oracle_off_path(name)
    spec: dict[str, TomlValue | None] = {"entry": f"{ORACLE_BIN}/{name}"}
    if re.match(PINNED_PACKAGE, source):
        spec |= {"package": source, "install": [move]}
        return spec, {}, None
    checkout = Path(source).expanduser()
    if not checkout.is_dir():
        return spec, {}, Problem(Severity.ERROR, shown, "", f"--oracle {tool}={source}: neither "
                                 "a pinned package (pip:NAME==V, npm:NAME@V) nor a folder")  # fmt: skip
    lines = [_unwrap(c) for c in install]
    replaced = [_CLONE.sub(_copy_of_checkout, line) for line in lines]
    if replaced == lines:
        return spec, {}, Problem(Severity.ERROR, shown, "", "install_oracle clones nothing: "
                                 "no source to replace with the checkout")  # fmt: skip
    golden = {f"oracle/{p.relative_to(checkout).as_posix()}": p
              for p in sorted(checkout.rglob("*"))
              if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(checkout).parts}  # fmt: skip
    replaced, packages = offline(replaced)
    spec |= {"install": [*replaced, move], "packages": packages}
    return spec, golden, None


@dataclass(frozen=True)
class Needs:
    """What a tool needs from the registries: as the import found it, with the operator's
    edits to the old task.toml kept (operator_edits.py)."""

    edits: Edits = field(default_factory=Edits)
    before: Found | None = None  # what the last import found (None: no record of it)
    fuzz: list[str] = field(default_factory=list)  # the fuzzer's imports, as found

    def merged(self, what: Listed, found: list[str]) -> list[str]:
        return self.edits.merged(what, found, self.before)


def found_before(folder: Path) -> Found | None:
    """What the import that wrote `folder` found (its origin record's `found`), if it says."""
    try:
        recorded = json.loads((folder / ORIGIN_FILE).read_text(encoding="utf-8")).get("found")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    if not isinstance(recorded, dict):
        return None
    return {what: [n for n in recorded.get(what.value, []) if isinstance(n, str)]
            for what in Listed if isinstance(recorded.get(what.value, []), list)}  # fmt: skip


def _registry_tables(
    source: str, install_packages: list[str], needs: Needs, result: TaskImport
) -> dict[Listed, tuple[list[str], list[str]]]:
    """Each kept list: (what the import found, what it writes). A checkout's declared
    dependencies are the oracle's requires (a pinned package brings its own through pip or
    npm); the image gets the clients they need."""
    declared: list[str] = []
    if not re.match(PINNED_PACKAGE, source):
        found = checkout_requires(Path(source).expanduser())
        result.problems += found.problems
        declared = found.requires
    requires = needs.merged(Listed.ORACLE_REQUIRES, declared)
    packages = list(dict.fromkeys([*install_packages, *debian_clients(requires)]))
    return {Listed.ORACLE_REQUIRES: (declared, requires),
            Listed.IMAGE_PACKAGES: (packages, needs.merged(Listed.IMAGE_PACKAGES, packages)),
            Listed.FUZZ_REQUIRES: (needs.fuzz, needs.merged(Listed.FUZZ_REQUIRES, needs.fuzz))}  # fmt: skip


def build_task(
    tree: Path, tool: str, out: FuzzOutput, seed: int, source: str, result: TaskImport,
    needs: Needs | None = None,
) -> _Built | None:  # fmt: skip
    shown = f"{REPO_DIR}/{tool}/start.py"
    needs = needs or Needs()
    prompt_rel = PROMPT.format(tool=tool)
    try:
        prompt = _read(tree / prompt_rel, MAX_PROMPT).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as err:
        result.problems.append(Problem(Severity.ERROR, prompt_rel, "", str(err)))
        return None
    name, unclear = tool_name(declared_names(tool, source), _prompt_name(prompt), out.cases)
    if name is None:
        result.problems.append(Problem(Severity.ERROR, shown, "cases[].category",
                                       f"which command is the tool is not clear: {unclear}"))  # fmt: skip
        return None
    oracle, golden, problem = _oracle(tool, name, source, out.install, shown)
    if problem is not None:
        result.problems.append(problem)
        return None
    files: dict[str, bytes | Path] = dict(golden)
    packages = oracle.pop("packages", None)
    try:  # its sanitize_stdout masks both sides' output as CLI-Tool-Bench's engine does
        files |= sanitizer_files(tree, tool)
    except ValueError as err:
        result.problems.append(Problem(Severity.ERROR, shown, "sanitize_stdout", str(err)))
        return None
    called = _prompt_name(prompt) or name  # the prompt may name the tool otherwise
    if called != name:
        result.problems.append(Problem(Severity.NOTE, prompt_rel, "CLI Tool Name",
                                       f"the prompt calls the tool {called}: so do the cases' "
                                       f"commands (the oracle's {name} answers for it)"))  # fmt: skip
    renamed = re.compile(rf"(?<![\w/.-]){re.escape(name)}(?![\w.-])")
    prd = (prompt.rstrip("\n") + contract(called)).encode()
    ua = dump({"fuzzy_prd": prompt, "oracle_data": {
        "task_id": task_id(tool), "golden_api_signature": f"{called} (a command-line tool)",
        "hidden_constraints": [], "context_pointers": [],
        "fallback_response": "That isn't specified; follow the requirement as written."}}, OURS)  # fmt: skip
    for level in ("L1", "L2", "L3", "ground"):
        files[f"prd/{level}.md"] = prd
        files[f"user_agent/{level}.json"] = ua
    by_category: dict[str, list[tuple[int, FuzzCase]]] = {}
    case_files: dict[str, tuple[str, list[Case]]] = {}
    for i, case in enumerate(out.cases):
        if (where := _nul_in(case)) is not None:
            result.problems.append(Problem(Severity.WARNING, shown, f"cases[{i}].{where}",
                                           f"a NUL in the case ({printable(case.command, limit=80)}"
                                           "): no argv can carry one, so both sides would fail "
                                           "in the shell alike; the case is left out"))  # fmt: skip
            continue
        by_category.setdefault(case.category, []).append((i, case))
    if not by_category:
        result.problems.append(Problem(Severity.ERROR, shown, "cases",
                                       "every case was left out: none is left to judge by"))  # fmt: skip
        return None
    taken: set[str] = set()
    for original, cases in by_category.items():
        category = renamed.sub(called, original)
        stem = _slug(category, taken)
        made = []
        for i, c in cases:
            try:
                command = renamed.sub(called, _command(c))
                made.append(Case(command=command, pattern=category, prep=c.prep_script or None,
                                 files={k.strip("/"): v for k, v in c.mount_files.items()}))  # fmt: skip
            except ValidationError as err:
                first = err.errors()[0]
                result.problems.append(Problem(Severity.ERROR, shown, field_path(
                    first["loc"], f"cases[{i}]"), first["msg"]))  # fmt: skip
                return None
        public, hidden = made[:1], made[1:]
        for split, chosen in (("public", public), ("hidden", hidden)):
            if chosen:
                case_files[f"cases/{split}/{stem}.json"] = (category, chosen)
    files |= {rel: _case_file(*kept) for rel, kept in case_files.items()}
    language = _IMAGES.get(out.base_image.split(":")[0].rsplit("/", 1)[-1], "unknown")
    kind = source.split(":", 1)[0] if re.match(PINNED_PACKAGE, source) else None
    if kind and language != _PINNED_LANGUAGE[kind]:
        # the oracle is that registry's package: its runtime, not the adapter's toolchain
        result.problems.append(Problem(Severity.NOTE, shown, "base_image",
                                       f"{out.base_image} is {language}'s, but the oracle is the "
                                       f"{kind} package {source.split(':', 1)[1]}: the task's "
                                       f"runtime is {_PINNED_LANGUAGE[kind]}'s"))  # fmt: skip
        language = _PINNED_LANGUAGE[kind]
    recorded = source if kind else f"checkout:{Path(source).expanduser().resolve()}"
    top: dict[str, TomlValue | None] = {"id": task_id(tool), "title": tool, "language": language,
                                        "summary": f"CLI-Tool-Bench's {tool}: the `{called}` "
                                        "command-line tool", "budget": 0}  # fmt: skip
    origin: dict[str, TomlValue | None] = {"source": OriginSource.CLI_TOOL_BENCH.value,
                                           "alias": tool, "seed": seed, "oracle_source": recorded}  # fmt: skip
    clients = _PACKAGES[kind] if kind else packages if isinstance(packages, list) else []
    tables = _registry_tables(source, clients, needs, result)
    written = {what: tables[what][1] or None for what in Listed}
    # CLI-Tool-Bench runs on python:latest / node:latest: trixie's runtimes (Python 3.13),
    # not the default base's recipe release (bookworm's Python 3.11 prints differently)
    image: dict[str, TomlValue | None] = {"base": Release.TRIXIE.base, "setup": [],
                                          "packages": written[Listed.IMAGE_PACKAGES]}  # fmt: skip
    oracle["requires"] = written[Listed.ORACLE_REQUIRES]
    files["task.toml"] = "\n".join([
        f"# Imported from CLI-Tool-Bench ({tool}) by `icae tasks import cli-tool-bench`: a new\n"
        "# import rewrites this folder but solutions/, recordings/ and tools/, and keeps the\n"
        "# operator's edits to [packages], [image] packages and requires.\n"
        + toml_table(None, top),
        toml_table("origin", origin), toml_table("image", image),
        toml_table("interface", {"kind": "command", "tool": called}),
        toml_table("oracle", oracle),
        *([toml_table("fuzz", {"requires": written[Listed.FUZZ_REQUIRES]})]
          if written[Listed.FUZZ_REQUIRES] else []),
        toml_table("delivery", {"entry": f"/workspace/{called}",
                                "build": f"test -x /workspace/{called}"}),
        toml_table("sanitizer", {"program": SANITIZER_PROGRAM,
                                 "requires": written[Listed.FUZZ_REQUIRES]}),
        # twice: what the oracle itself prints otherwise from run to run is set apart
        toml_table("cases", {"timeout_s": 30, "workdir": WORKDIR, "oracle_runs": 2,
                             **BENCH_SCOPE}),
        *([kept] if (kept := needs.edits.packages_table()) else []),
    ]).encode()  # fmt: skip
    files[ORIGIN_FILE] = dump({"tool": tool, "seed": seed, "base_image": out.base_image,
                               "install_oracle": out.install, "oracle_source": recorded,
                               "found": {w.value: tables[w][0] for w in Listed}}, OURS)  # fmt: skip
    spec = TaskSpec.model_validate(tomllib.loads(files["task.toml"].decode()))  # type: ignore[union-attr]
    if (why := runtime_problem(spec)) is not None:
        result.problems.append(Problem(Severity.ERROR, shown, "base_image", why[1]))
        return None
    return _Built(files, Reference.ORACLE, recorded, case_files)


def _case_file(description: str, cases: list[Case]) -> bytes:
    return dump({"description": description,
                 "cases": [c.model_dump(exclude_defaults=True) for c in cases]}, OURS)  # fmt: skip


def _broken(run: SideOutcome) -> str | None:
    """The bound of its box the oracle's run broke (its stdout then is what it printed)."""
    r = run.run
    for broke, why in ((r.timed_out, "timed out"), (r.overflowed, "printed past the bound"),
                       (r.oom_killed, "ran out of memory"), (r.pids_capped, "hit the pids limit"),
                       (r.disk_full, "filled its disk"), (r.box_died, "killed its box"),
                       (bool(r.left_running), "left processes running")):  # fmt: skip
        if broke:
            return why
    return None


def with_locked(toml: bytes | Path, locked: list[str]) -> bytes:
    """task.toml with `locked` after its [oracle] table's `package` line."""
    text = toml.read_bytes() if isinstance(toml, Path) else toml
    lines = text.decode().split("\n")
    at = lines.index("[oracle]")
    package = next(i for i in range(at, len(lines)) if lines[i].startswith("package = "))
    pins = [f"  {json.dumps(p)}," for p in locked]
    return "\n".join([*lines[:package + 1], "locked = [", *pins, "]",
                      *lines[package + 1:]]).encode()  # fmt: skip


def record_outputs(built: _Built, tool: str, runner: OracleRunner, result: TaskImport) -> bool:
    """Each case's `expected_output`: the oracle's stdout, from `runner` run on the task as
    staged outside the tasks folder (the final folder is written once, complete). False after
    saying why not."""
    shown = f"{REPO_DIR}/{tool}/start.py"
    with tempfile.TemporaryDirectory(prefix="icae-ctb-") as stage:
        folder = Path(stage) / result.task_id
        sync_folder(folder, built.files)
        try:
            task = load_task(folder)
        except TaskError as err:
            result.problems.append(Problem(Severity.ERROR, shown, "",
                                           f"the catalog refuses the task: {err.message}"))  # fmt: skip
            return False
        try:
            record = runner(task)
        except ImageBuildError as err:
            result.problems.append(Problem(Severity.ERROR, shown, "install_oracle",
                                           f"the oracle's image did not build: {err}"))  # fmt: skip
            return False
    runs = record.runs
    if record.locked:  # the oracle is built again from exactly this set
        built.files["task.toml"] = with_locked(built.files["task.toml"], record.locked)
    for rel, (description, cases) in built.cases.items():
        split, stem = rel.removeprefix("cases/").removesuffix(".json").split("/", 1)
        filled = []
        for i, case in enumerate(cases):
            run = runs.get(f"{split}/{stem}#{i}")
            if run is None:
                result.problems.append(Problem(Severity.ERROR, rel, f"cases[{i}]",
                                               "the oracle gave no run of this case"))  # fmt: skip
                return False
            if (why := _broken(run)) is not None:
                result.problems.append(Problem(Severity.WARNING, rel,
                                               f"cases[{i}].expected_output", f"the oracle's run "
                                               f"{why}: stored is what it printed until then"))  # fmt: skip
            filled.append(case.model_copy(update={"expected_output": run.stored_stdout}))
        built.files[rel] = _case_file(description, filled)
    return True


def fuzz_output(
    tree: Path, tool: str, seed: int, runner: FuzzRunner, result: TaskImport,
    requires: list[str] | None = None,
) -> FuzzOutput | None:  # fmt: skip
    """The tool's cases, from its fuzzer run by `runner` (a box, from an image with
    `requires` installed: by default what its files import); None after saying why not."""
    shown = f"{REPO_DIR}/{tool}/start.py"
    try:
        job = fuzz_job(tree, tool, seed, requires)
    except ValueError as err:
        result.problems.append(Problem(Severity.ERROR, shown, "", str(err)))
        return None
    try:
        run = runner(job)
    except ImageBuildError as err:
        result.problems.append(Problem(Severity.ERROR, shown, "[fuzz] requires",
                                       f"the fuzzer's image did not build: {err}"))  # fmt: skip
        return None
    if run.overflowed or run.timed_out or run.exit_code != 0:
        why = ("printed more than the bound" if run.overflowed else "timed out" if run.timed_out
               else f"exited {run.exit_code}")  # fmt: skip
        tail = run.stderr_tail.decode("utf-8", errors="replace").strip()[-800:]
        result.problems.append(Problem(Severity.ERROR, shown, "", f"the fuzzer {why} in its box"
                                       + (f":\n{tail}" if tail else "")))  # fmt: skip
        return None
    try:
        return FuzzOutput.model_validate_json(run.stdout)
    except ValidationError as err:
        first = err.errors()[0]
        result.problems.append(Problem(Severity.ERROR, shown, field_path(first["loc"]),
                                       f"the fuzzer's output: {first['msg']}"))  # fmt: skip
        return None


def _owner_problem(folder: Path, tool: str) -> Problem | None:
    """Why `folder` must not be written for `tool` (None: it is free or tool's import)."""
    if not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
        return None
    try:
        origin = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8")).get("origin")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        origin = None
    if isinstance(origin, dict) and origin.get("source") == OriginSource.CLI_TOOL_BENCH.value:
        if origin.get("alias") == tool:
            return None
        why = f"it is {origin.get('alias')}'s"
    else:
        why = "it is not a CLI-Tool-Bench import"
    return Problem(
        Severity.ERROR, str(folder), "", f"the task folder exists and {why}: left as it is"
    )


_OUTCOMES = {Change.CREATED: Outcome.CREATED, Change.UPDATED: Outcome.UPDATED,
             Change.UNCHANGED: Outcome.UNCHANGED}  # fmt: skip


def import_tree(
    tree: Path, into: Path, *, runner: FuzzRunner, oracles: dict[str, str],
    only: list[str] | None = None, seed: int = SEED, outputs: OracleRunner | None = None,
) -> ImportReport:  # fmt: skip
    """Import the tools of `tree` (or those `only` names) into `into`, each tool's oracle
    from `oracles[tool]`; with `outputs`, each case's expected output is its oracle's stdout.
    ConfigError when `tree` holds no CLI-Tool-Bench tools."""
    tools = tools_of(tree)
    if not tools:
        raise ConfigError(f"{tree}: no CLI-Tool-Bench tools ({REPO_DIR}/<owner>/<repo>/start.py)")
    report = ImportReport(tree, into)
    wanted = [t for t in tools if not only or t in only or task_id(t) in only]
    for name in sorted(set(only or []) - set(wanted) - {task_id(t) for t in wanted}):
        report.problems.append(
            Problem(Severity.ERROR, str(tree), "", f"no tool {name!r} in the tree")
        )
    for tool in sorted(set(oracles) - set(tools)):
        report.problems.append(
            Problem(Severity.ERROR, str(tree), "", f"--oracle {tool}: no such tool")
        )
    into.mkdir(parents=True, exist_ok=True)
    for tool in wanted:
        result = TaskImport(tool, task_id(tool), Outcome.FAILED)
        report.tasks.append(result)
        source = oracles.get(tool)
        if source is None:
            result.problems.append(Problem(
                Severity.ERROR, f"{REPO_DIR}/{tool}/start.py", "install_oracle",
                f"the adapter installs its oracle from a live, unpinned source: give --oracle "
                f"{tool}=pip:NAME==V, npm:NAME@V or a local checkout"))  # fmt: skip
            continue
        if (owned := _owner_problem(into / result.task_id, tool)) is not None:
            result.problems.append(owned)
            continue
        edits, unreadable = read_edits(into / result.task_id)  # the operator's: kept
        if unreadable is not None:
            result.problems.append(unreadable)
            continue
        try:
            imports = fuzzer_requires(tree, tool)
        except ValueError:
            imports = []  # unreadable: fuzz_output says so
        needs = Needs(edits, found_before(into / result.task_id), imports)
        out = fuzz_output(tree, tool, seed, runner, result,
                          needs.merged(Listed.FUZZ_REQUIRES, imports))  # fmt: skip
        built = build_task(tree, tool, out, seed, source, result, needs) if out else None
        if built is None or errors_in(result.problems):
            continue
        if outputs is not None and not record_outputs(built, tool, outputs, result):
            continue
        folder = into / result.task_id
        synced = sync_folder(folder, built.files)
        try:
            load_task(folder)
        except TaskError as err:
            result.problems.append(Problem(Severity.ERROR, str(folder), "",
                                           f"imported, but the catalog refuses it: {err.message}"))  # fmt: skip
            continue
        n = sum(1 for k in built.files if k.startswith("cases/"))
        count = sum(len(json.loads(v)["cases"]) for k, v in built.files.items()
                    if k.startswith("cases/") and isinstance(v, bytes))  # fmt: skip
        result.problems.append(Problem(Severity.NOTE, f"{REPO_DIR}/{tool}/start.py", "",
                                       f"{count} cases in {n} files, generated with seed {seed}; "
                                       f"oracle: {oracle_of(built)}"
                                       + ("; expected outputs: its stdout, run once here"
                                          if outputs is not None else "")))  # fmt: skip
        result.outcome, result.reference = _OUTCOMES[synced.change], built.reference
    return report
