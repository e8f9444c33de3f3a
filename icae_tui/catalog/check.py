"""`icae tasks check [TASK…]`: is each task's data sound, and is its oracle a reference?

Data. What the catalog refuses when it loads a task (a file that does not parse, a field the
format refuses, a solution that does not load, a language with no runtime recipe) is the
task's problem as the catalog words it. A task that loads is then checked for what the format
accepts but a run cannot use (`data_problems`):
  records   — a level's user-agent records: two records with one `constraint_id`, an empty
              `oracle_response`, an empty trigger keyword;
  cases     — a command task's case with no `command`, a dispatcher task's case with no
              `input` (it would send `null`);
  fixtures  — a fixture path that is also the folder of another (`a` and `a/b`), an empty
              path part (`a//b`, `a/`);
  recipes   — `[oracle]` with neither a pinned `package` nor an `oracle/` folder (nothing
              to put in the oracle image), an empty `delivery.build`.

Image. A task whose image cannot be had fails (`image_problems`): its language is one no
registry here provides (domain/runtimes.py REFUSALS: the message names what to supply), or
its `[image] base` names an image that is neither on the engine nor pullable. Its oracle is
not run then.

Oracle. Every case of a task judged against its oracle runs on it twice
(`evaluation/verify.py`, as `icae tasks verify`): a case whose two runs differ is flagged
nondeterministic; one whose stdout is not its stored `expected_output` is reported as such.

Each problem names the task, the file (relative to the task's folder) and the field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from icae_tui.catalog.loader import TaskError
from icae_tui.domain.runtimes import is_debian_base, runtime_refusal
from icae_tui.domain.task import CaseRef, Level, Reference, Task
from icae_tui.errors import ImageBuildError
from icae_tui.util.safe_text import printable

if TYPE_CHECKING:
    from icae_tui.evaluation.verify import CaseCheck
    from icae_tui.sandbox.base import Sandbox


class Kind(StrEnum):
    DATA = "data"
    IMAGE = "image"
    NONDETERMINISTIC = "nondeterministic"
    STORED = "stored output"


@dataclass(frozen=True)
class Problem:
    task: str
    file: str  # relative to the task's folder
    field: str  # "" when the message names it (a catalog error) or the whole file is meant
    message: str
    kind: Kind = Kind.DATA

    def line(self) -> str:
        field = f"field '{self.field}': " if self.field else ""
        return f"{self.task}: {self.file}: {field}{self.message}"


def load_problem(err: TaskError, tasks_dir: Path) -> Problem:
    """A catalog error as a problem of the task whose folder holds its file."""
    try:
        parts = err.path.resolve().relative_to(tasks_dir.resolve()).parts
    except ValueError:
        parts = ()
    if not parts:
        return Problem("(catalog)", str(err.path), "", err.message)
    return Problem(parts[0], "/".join(parts[1:]) or ".", "", err.message)


def case_file(ref: CaseRef) -> str:
    return f"cases/{ref.split.value}/{ref.stem}.json"


def record_problems(task: Task) -> Iterable[Problem]:
    for level in Level:
        data = task.user_agent.get(level)
        if data is None:
            continue
        file = f"user_agent/{level.value}.json"
        seen: set[str] = set()
        for i, record in enumerate(data.oracle_data.hidden_constraints):
            at = f"oracle_data.hidden_constraints[{i}]"
            if record.constraint_id in seen:
                yield Problem(task.id, file, f"{at}.constraint_id",
                              f"{record.constraint_id!r} is the id of an earlier record")  # fmt: skip
            seen.add(record.constraint_id)
            if not record.oracle_response.strip():
                yield Problem(task.id, file, f"{at}.oracle_response", "empty: nothing to reveal")
            for j, keyword in enumerate(record.trigger_keywords):
                if not keyword.strip():
                    yield Problem(task.id, file, f"{at}.trigger_keywords[{j}]", "empty")


def case_problems(task: Task) -> Iterable[Problem]:
    command = task.spec.interface.kind == "command"
    for ref in task.cases:
        file, at, case = case_file(ref), f"cases[{ref.index}]", ref.case
        if command and not (case.command or "").strip():
            yield Problem(task.id, file, f"{at}.command", "missing: a command task's case "
                          "runs its command")  # fmt: skip
        if not command and case.input is None:
            yield Problem(task.id, file, f"{at}.input", "missing: a dispatcher task's case "
                          "sends its input as JSON")  # fmt: skip
        paths = set(case.files)
        for path in case.files:
            if "" in path.split("/"):
                yield Problem(task.id, file, f"{at}.files.{path}", "an empty path part")
            parents = {"/".join(path.split("/")[:n]) for n in range(1, path.count("/") + 1)}
            for parent in sorted(parents & paths):
                yield Problem(task.id, file, f"{at}.files.{path}",
                              f"inside {parent!r}, which is a fixture file")  # fmt: skip


def recipe_problems(task: Task) -> Iterable[Problem]:
    root, oracle = Path(task.root), task.spec.oracle
    # a pinned registry package (`pip:NAME==V`, `npm:NAME@V`) is the oracle's code: its image
    # installs it, and oracle/ has nothing to add
    if oracle is not None and not oracle.package and not (root / "oracle").is_dir():
        yield Problem(task.id, "oracle/", "", "missing: [oracle] needs the golden code here "
                      "(or a pinned registry package in [oracle] package)")  # fmt: skip
    if not task.spec.delivery.build.strip():
        yield Problem(task.id, "task.toml", "delivery.build", "empty: the build gate runs it")


def data_problems(task: Task) -> list[Problem]:
    """What the format accepts in a loaded task but a run cannot use."""
    return [*record_problems(task), *case_problems(task), *recipe_problems(task)]


def refusal_problems(task: Task) -> list[Problem]:
    """A language no registry here provides: the task's images cannot be built (pure)."""
    if (refused := runtime_refusal(task.spec)) is None:
        return []
    return [Problem(task.id, "task.toml", refused[0], refused[1], Kind.IMAGE)]


async def image_problems(sandbox: Sandbox, task: Task) -> list[Problem]:
    """Whether the task's image can be had: a refused language, or a named base image that
    is neither on the engine nor pullable (asking the engine pulls it when it can). The
    Debian bases are built offline, so they always can."""
    if problems := refusal_problems(task):
        return problems
    base = task.spec.image.base
    if is_debian_base(base):
        return []
    try:
        await sandbox.base_image(name=base)
    except ImageBuildError as err:
        return [Problem(task.id, "task.toml", "image.base", str(err), Kind.IMAGE)]
    return []


def oracle_problems(task: Task, checks: Iterable[CaseCheck]) -> list[Problem]:
    """The oracle's two runs of each case: nondeterministic ones, stored outputs that differ."""
    refs = {ref.id: ref for ref in task.cases}
    problems = []
    for check in sorted(checks, key=lambda c: c.case_id):
        ref = refs[check.case_id]
        file, field = case_file(ref), f"cases[{ref.index}]"
        if not check.deterministic:  # its stored output cannot be right either: one problem
            problems.append(Problem(task.id, file, field, "nondeterministic: the oracle's two "
                                    "runs differ", Kind.NONDETERMINISTIC))  # fmt: skip
        elif not check.matches_stored:
            detail = next((d for d in check.detail.split("; ") if d.startswith("stored")), "")
            problems.append(Problem(task.id, f"{file}", f"{field}.expected_output",
                                    f"not the oracle's output: {detail}", Kind.STORED))  # fmt: skip
    return problems


def judged_by_oracle(task: Task) -> bool:
    return task.spec.oracle is not None and task.spec.cases.reference is Reference.ORACLE


def task_line(task_id: str, problems: list[Problem], cases_run: int | None) -> str:
    """`semver: ok — 120 cases on the oracle twice` / `mini: 2 problems (1 data, 1 …)`."""
    if not problems:
        oracle = (
            f"{cases_run} cases run twice on the oracle, deterministic and equal to their "
            "stored outputs"
            if cases_run is not None
            else "no oracle run (judged against its stored outputs, or not loaded)"
        )
        return f"{task_id}: ok — data sound; {oracle}"
    kinds = Counter(p.kind for p in problems)
    said = ", ".join(f"{kinds[k]} {k.value}" for k in Kind if kinds[k])
    return f"{task_id}: {len(problems)} problem{'s' if len(problems) != 1 else ''} ({said})"


def summary_line(checked: int, problems: dict[str, list[Problem]]) -> str:
    bad = [t for t, found in problems.items() if found]
    kinds = Counter(p.kind for found in problems.values() for p in found)
    if not bad:
        return f"checked {checked} task{'s' if checked != 1 else ''}: all sound"
    said = ", ".join(f"{kinds[k]} {k.value}" for k in Kind if kinds[k])
    return (
        f"checked {checked} task{'s' if checked != 1 else ''}: {checked - len(bad)} sound, "
        f"{len(bad)} with problems ({said}); fix each file and field above, then check again"
    )


async def check_tasks(
    sandbox: Sandbox,
    tasks: list[Task],
    failed: dict[str, list[Problem]],
    say: Callable[[str], None],
) -> int:
    """Check the loaded `tasks` (data, whether the image can be had, then the oracle twice
    on every case) and report, with the problems of the named tasks that did not load
    (`failed`); 0 when all are sound, 1 when a problem was found."""
    from icae_tui.evaluation.verify import verify_task
    from icae_tui.runs.run import new_run_id

    found: dict[str, list[Problem]] = {}
    for task in tasks:
        problems = data_problems(task)
        cases_run = None
        image = await image_problems(sandbox, task)
        problems += image
        if judged_by_oracle(task) and not image:
            images = await sandbox.task_images(task)
            checks = [
                c async for c in verify_task(sandbox, task, images.oracle, run_id=new_run_id(),
                                             sanitizer_image=images.sanitizer)
            ]  # fmt: skip
            problems += oracle_problems(task, checks)
            cases_run = len(checks)
        found[task.id] = problems
        report(task.id, problems, cases_run, say)
    for task_id, problems in failed.items():
        found[task_id] = problems
        report(task_id, problems, None, say)
    say(summary_line(len(found), found))
    return 1 if any(found.values()) else 0


def report(
    task_id: str, problems: list[Problem], cases_run: int | None, say: Callable[[str], None]
) -> None:
    say(task_line(task_id, problems, cases_run))
    for problem in problems:
        say(f"  {printable(problem.line(), limit=500)}")
