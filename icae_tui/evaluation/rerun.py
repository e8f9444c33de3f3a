"""After a run: one case again, as it was or with an edited command or input, against the
run's kept delivery and the oracle (`RunConfig.keep_delivery`); and the command that opens
a shell in either side's image, as the run's engine gives it (`Sandbox.shell_argv`). The
delivery is removed by `discard_delivery` when the operator is done with it."""

from __future__ import annotations

from typing import Any

from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.differential import Evaluator, Sides
from icae_tui.sandbox.registry import DEFAULT_ENGINE, open_sandbox

UNCHANGED: Any = object()  # an argument left as the case has it


def edited(ref: CaseRef, *, command: str | None = None, input: Any = UNCHANGED) -> CaseRef:  # noqa: A002
    """The case with its command and/or input replaced (the same id: it is that case, tried
    another way)."""
    update: dict[str, Any] = {}
    if command is not None:
        update["command"] = command
    if input is not UNCHANGED:
        update["input"] = input
    return ref.model_copy(update={"case": ref.case.model_copy(update=update)}) if update else ref


async def rerun_case(
    task: Task, sides: Sides, ref: CaseRef, *, run_id: str, engine: str = DEFAULT_ENGINE
) -> CaseResult:
    """Judge one case again in fresh boxes of both sides (the oracle as many times as the
    task says), exactly as the run did, on the run's engine."""
    sandbox = await open_sandbox(engine)
    try:
        async with Evaluator(sandbox, task, sides, run_id=run_id, concurrency=1) as ev:
            return await ev.run_case(ref)
    finally:
        await sandbox.close()


async def discard_delivery(sides: Sides, *, engine: str = DEFAULT_ENGINE) -> None:
    sandbox = await open_sandbox(engine)
    try:
        await sandbox.remove_image(sides.delivery_image)
    finally:
        await sandbox.close()


async def shell_argv(image: str, workdir: str, *, engine: str = DEFAULT_ENGINE) -> list[str]:
    """The command line that opens a shell in a throwaway box of `image` on the run's engine:
    its backend's `Sandbox.shell_argv` (the docker backend's names a remote engine, `-H`, and
    gives the box no network and the hostname `sandbox`, like every box of a run)."""
    sandbox = await open_sandbox(engine)
    try:
        return sandbox.shell_argv(image, workdir)
    finally:
        await sandbox.close()
