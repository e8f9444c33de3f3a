"""A console run's kept delivery, and the console's live runs that keep it.

A run started from the console keeps its frozen delivery once it has completed
(`RunConfig.keep_delivery`; `RunOutcome.sides`): `KeptImages` is what the console's run
handle (display/handle.py) does on it — re-run a case as it was or edited, give the command
of a shell in either side's image (the run's engine's), discard the delivery — through
`evaluation/rerun.py`, on the engine the run used.
This is the one module between the console and the engine's re-run: the console (ui/) sees
only the handle.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from icae_tui.display.handle import Keep, Outcome, ShellCommand, Side
from icae_tui.display.sources import LiveSource
from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation import rerun as rerun_core
from icae_tui.evaluation.differential import Sides
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.registry import DEFAULT_ENGINE
from icae_tui.store.database import RunStore


@dataclass(frozen=True)
class KeptImages:
    """The images a completed run judged, its delivery kept: a `KeptDelivery`."""

    task: Task
    sides: Sides
    engine: str = DEFAULT_ENGINE  # the run's: its re-runs and discard go to the same engine

    @property
    def label(self) -> str:
        return self.sides.delivery_image

    def rerun(self, ref: CaseRef, *, run_id: str) -> Coroutine[Any, Any, CaseResult]:
        return rerun_core.rerun_case(self.task, self.sides, ref, run_id=run_id, engine=self.engine)

    def edited(self, ref: CaseRef, *, command: str | None, input: Any) -> CaseRef:  # noqa: A002
        return rerun_core.edited(ref, command=command, input=input)

    async def shell(self, side: Side) -> ShellCommand:
        """The shell of `side` on the run's engine (its backend's `shell_argv`: a remote
        engine's shell opens there, where the images are)."""
        spec = self.task.spec
        if side is Side.ORACLE:
            # a task with no oracle: its "oracle image" is the agent image
            path = spec.oracle.path if spec.oracle is not None else spec.cases.workdir
            image, workdir = self.sides.oracle_image, path
        else:
            image, workdir = self.sides.delivery_image, spec.delivery.workspace
        argv = tuple(await rerun_core.shell_argv(image, workdir, engine=self.engine))
        return ShellCommand(side, image, workdir, argv, shlex.join(argv))

    def discard(self) -> Coroutine[Any, Any, None]:
        return rerun_core.discard_delivery(self.sides, engine=self.engine)


def keeping(task: Task, engine: str = DEFAULT_ENGINE) -> Keep:
    """How a run of `task` keeps its delivery: the images its outcome names, if any."""

    def kept(outcome: Outcome) -> KeptImages | None:
        sides = outcome.sides
        return KeptImages(task, sides, engine) if isinstance(sides, Sides) else None

    return kept


def console_source(config: RunConfig, store: RunStore) -> LiveSource:
    """A run started from the console: it keeps its delivery for the case detail (re-run,
    shells) until the console discards it (ui/kept.py)."""
    config = dataclasses.replace(config, keep_delivery=True)
    return LiveSource(
        Run(config, store), task=config.task, keep=keeping(config.task, config.engine)
    )
