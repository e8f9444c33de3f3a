"""A task's own output sanitizer (`[sanitizer]`), run in a box of its own for a whole
evaluation: each case's sides are masked together, in one exec, before they are compared.

The program is task code (CLI-Tool-Bench's adapters mask timestamps, sizes or ordering with
`sanitize_stdout`), so it never runs on the host: its box has no network, bounded memory,
pids and time, and gets only the task's `sanitizer/` folder. Its answer is validated (a JSON
list of strings, as long as what it was given, bounded); a program that fails, hangs or
answers otherwise leaves the texts as they were, and the failure is said in the log and the
case's record (`SideRun.sanitized` stays None).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.task import SanitizerSpec, StderrPolicy, Task
from icae_tui.errors import BoxError
from icae_tui.evaluation.verdict import Attempt
from icae_tui.sandbox.base import DISPLAY_CAP, Box, BoxSpec, Limits, Role, Sandbox

log = logging.getLogger(__name__)

BOX_FOLDER = "/icae-sanitizer"
MAX_FOLDER_BYTES = 16 * 1024 * 1024  # the sanitizer/ folder copied into the box
LIMITS = Limits(memory_bytes=512 * 1024 * 1024, pids=64, ttl_s=1800, disk_bytes=64 * 1024 * 1024)
ANSWER_SLACK = 4  # an answer may be this many times what it was given (plus 64 KiB)


class SanitizerError(Exception):
    """The sanitizer could not mask a case's texts: they are compared as they are."""


@dataclass
class OutputSanitizer:
    """One box of the sanitizer's image, holding its folder; `mask` runs it once."""

    box: Box
    spec: SanitizerSpec
    failures: int = 0

    @classmethod
    async def start(
        cls, sandbox: Sandbox, task: Task, image: str, *, run_id: str
    ) -> OutputSanitizer:
        spec = task.spec.sanitizer
        if spec is None:
            raise ValueError(f"task {task.id} has no [sanitizer]")
        files = folder_files(Path(task.root) / "sanitizer")
        box = await sandbox.create_box(
            # workdir /: a folder the engine made would cost the box its disk quota
            BoxSpec(image=image, run_id=run_id, role=Role.SANITIZER, limits=LIMITS, workdir="/")
        )
        try:
            await box.put_files({f"{BOX_FOLDER}/{rel}": data for rel, data in files.items()})
        except BaseException:
            await box.remove()
            raise
        return cls(box, spec)

    async def mask(self, texts: list[str]) -> list[str]:
        """Each text as the sanitizer leaves it; SanitizerError when it did not answer so."""
        given = json.dumps(texts, ensure_ascii=False).encode()
        cap = ANSWER_SLACK * len(given) + 64 * 1024
        program = f"{BOX_FOLDER}/{self.spec.program.removeprefix('sanitizer/')}"
        try:
            res = await self.box.exec(
                ["python3", program], stdin=given, timeout_s=self.spec.timeout_s,
                workdir=BOX_FOLDER, cap_bytes=cap, kill_after_bytes=cap,
            )  # fmt: skip
        except BoxError as err:
            raise self._failed(f"its box could not run it: {err}") from err
        if res.timed_out:
            raise self._failed(f"no answer within {self.spec.timeout_s:g} s")
        if res.exit_code != 0 or res.overflowed or res.truncated:
            last = res.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(no stderr)"]
            raise self._failed(f"exit {res.exit_code}: {last[0][:200]}")
        try:
            answer = json.loads(res.stdout)
        except (ValueError, RecursionError) as err:
            raise self._failed(f"its answer is not JSON: {err}") from None
        if not (isinstance(answer, list) and len(answer) == len(texts)
                and all(isinstance(t, str) for t in answer)):  # fmt: skip
            raise self._failed(f"its answer is not a list of {len(texts)} texts")
        return answer

    def _failed(self, why: str) -> SanitizerError:
        self.failures += 1
        log.warning("the task's sanitizer %s failed: %s", self.spec.program, why)
        return SanitizerError(why)

    async def close(self) -> None:
        await self.box.remove()


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder` (links and what is not a file left out), bounded."""
    if not folder.is_dir():
        raise SanitizerError(f"{folder}: missing: [sanitizer] needs its program here")
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        if total > MAX_FOLDER_BYTES:
            raise SanitizerError(f"{folder}: more than {MAX_FOLDER_BYTES >> 20} MiB")
        files[path.relative_to(folder).as_posix()] = data
    return files


def judged_text(task: Task, outcome: SideOutcome) -> str:
    """What a side's case is judged on: stdout, then stderr when the task merges them."""
    text = outcome.stdout_full.decode(errors="replace")
    return text + outcome.run.stderr if task.spec.cases.stderr is StderrPolicy.MERGE else text


async def masked(
    sanitizer: OutputSanitizer, task: Task, attempts: list[Attempt]
) -> list[Attempt]:
    """Every side that ran, its judged text masked (all of them in one exec); as they were
    when the sanitizer failed."""
    ran = [i for i, a in enumerate(attempts) if isinstance(a, SideOutcome)]
    outcomes = [a for a in attempts if isinstance(a, SideOutcome)]
    if not outcomes:
        return attempts
    try:
        texts = await sanitizer.mask([judged_text(task, o) for o in outcomes])
    except SanitizerError:
        return attempts
    out = list(attempts)
    for i, outcome, text in zip(ran, outcomes, texts, strict=True):
        run = outcome.run.model_copy(update={"sanitized": text[:DISPLAY_CAP]})
        out[i] = replace(outcome, run=run, compared=text)
    return out
