"""After a run: one case again, as it was or with an edited command or input, against the
run's kept delivery and the oracle (`RunConfig.keep_delivery`); and the command that opens
a shell in either side's image. The delivery is removed by `discard_delivery` when the
operator is done with it."""

from __future__ import annotations

import shlex
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


SHELL_HOSTNAME = "sandbox"  # every box's hostname (the docker backend's too), the shell's


def shell_argv(image: str, workdir: str) -> list[str]:
    """`docker run` of a throwaway container of `image` with a shell, no network, removed on
    exit, named `sandbox` like every box of a run: what the console runs after stepping
    aside. (A terminal's client for the local engine: the docker CLI, not this package's
    engine client.)"""
    return ["docker", "run", "--rm", "-it", "--network", "none", "--hostname", SHELL_HOSTNAME,
            "-w", workdir, image, "bash", "-l"]  # fmt: skip


def shell_line(image: str, workdir: str) -> str:
    return shlex.join(shell_argv(image, workdir))
