"""Per-case engine faults on the real engine: one misbehaving case never ends a run.

The oracle's tool prints `ok`; the delivery's tool misbehaves as its first argument names.
Fork bombs, and containers removed out from under a case, must each end in that case's own
verdict while every other case is judged normally. Only a lost engine ends the run.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
from collections.abc import Callable

import pytest

from icae_tui.display.plain import PlainPrinter
from icae_tui.domain.events import (
    AgentCommandDone,
    AgentOutput,
    BuildChecked,
    CaseFinished,
    Event,
    PhaseChanged,
)
from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.domain.task import Case, CaseRef, Task
from icae_tui.evaluation.differential import EngineLost, Evaluator
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.docker.backend import DockerSandbox
from icae_tui.sandbox.docker.pool import SidePool
from icae_tui.sandbox.docker.proof import Box
from icae_tui.store.database import RunStore
from tests.integration.tool_images import ToolImages, command_task, evaluate
from tests.task_copies import add_solution, copy_mini, good_step, load_mini

pytestmark = pytest.mark.docker

ORACLE_TOOL = r"""#!/bin/bash
echo ok
"""

DELIVERY_TOOL = r"""#!/bin/bash
case "$1" in
  detached) f() { f | f & }; f & exit 0 ;;
  bomb) f() { f | f & }; f ;;
esac
echo ok
"""


IMAGES = ToolImages("faults", ORACLE_TOOL, DELIVERY_TOOL)


def _task(
    commands: list[str], *, timeout_s: float = 30, prep: dict[str, str] | None = None
) -> Task:
    """One case per command; `prep` maps a command to the `prep` line its case runs first."""
    prep = prep or {}
    cases = [Case(command=c, pattern=c, prep=prep.get(c)) for c in commands]
    return command_task("faults", cases, timeout_s=timeout_s)


def _by_command(task: Task, results: dict[str, CaseResult]) -> list[tuple[str, CaseResult]]:
    return [(ref.case.command or "", results[ref.id]) for ref in task.cases]


# --- fork bombs ------------------------------------------------------------------------------


async def test_fork_bombs_among_twenty_cases_end_in_their_own_verdicts(images):
    commands = ["tool detached", "tool bomb"] + [f"tool ok{i}" for i in range(20)]
    task = _task(commands[:11] + commands[1:2] + commands[11:])  # the plain bomb mid-run too
    results = await evaluate(task, images, run_id="test-faults-twenty", concurrency=2)
    assert len(results) == len(task.cases)  # every case judged, the run not aborted
    for command, r in _by_command(task, results):
        if "ok" in command:
            assert r.verdict == Verdict.ACCEPTED, (command, r.reason)
        else:
            assert r.verdict.counted and not r.passed, (command, r.verdict, r.reason)


async def test_ten_fork_bomb_runs_never_abort(images):
    task = _task(["tool detached", "tool ok1", "tool bomb", "tool ok2", "tool ok3", "tool ok4"])
    aborted: list[str] = []
    misjudged: list[tuple[int, str, str, str]] = []
    for attempt in range(10):  # all ten run, so a failure shows how many aborted
        try:
            results = await evaluate(
                task, images, run_id=f"test-faults-bombs-{attempt}", concurrency=2
            )
        except Exception as err:  # an aborted run: the failure this test is about
            aborted.append(f"{type(err).__name__}: {err}"[:200])
            continue
        for command, r in _by_command(task, results):
            expected_ok = "ok" in command
            if r.passed != expected_ok or not r.verdict.counted:
                misjudged.append((attempt, command, r.verdict.value, r.reason))
    assert aborted == [], f"{len(aborted)} of 10 runs aborted"
    assert misjudged == []


# --- containers removed out from under a case --------------------------------------------
#
# The test force-removes, through the engine, the container a side's pool has just handed to
# a chosen case: the engine then refuses that case's command (404), a real per-case refusal.


class Saboteur:
    """Wraps a pool's `take`: the next `count` boxes taken while `target()` names a planned
    case lose their container before the case can use them."""

    def __init__(self, pool: SidePool, plan: dict[str, int], target: Callable[[], str]) -> None:
        self.plan = dict(plan)
        self.removed: dict[str, int] = {}
        self._take = pool.take
        self._target = target
        pool.take = self._sabotaged  # type: ignore[method-assign]

    async def _sabotaged(self) -> Box:
        box = await self._take()
        case = self._target()
        if self.removed.get(case, 0) < self.plan.get(case, 0):
            self.removed[case] = self.removed.get(case, 0) + 1
            await box.container.raw.delete(force=True)
        return box


class OneAtATime(Evaluator):
    """Knows which case runs (concurrency 1), so a Saboteur can aim at one case."""

    current = ""

    async def run_case(self, ref: CaseRef) -> CaseResult:
        self.current = ref.case.command or ""
        return await super().run_case(ref)


async def test_a_case_whose_container_is_removed_gets_a_verdict(images):
    commands = ["tool ok1", "tool doomed", "tool ok2", "tool flaky", "tool oracle-doomed"]
    task = _task(commands + ["tool ok3"])
    sandbox = await DockerSandbox.open()
    try:
        async with OneAtATime(
            sandbox, task, images, run_id="test-faults-removed", concurrency=1
        ) as ev:
            target = lambda: ev.current  # noqa: E731
            deliveries = {"tool doomed": 2, "tool flaky": 1}  # twice: the retry fails too
            on_delivery = Saboteur(ev.delivery, deliveries, target)
            on_oracle = Saboteur(ev.oracle, {"tool oracle-doomed": 2}, target)
            results = {r.case_id: r async for r in ev.run_cases(task.cases)}
    finally:
        await sandbox.close()
    assert on_delivery.removed == on_delivery.plan and on_oracle.removed == on_oracle.plan
    verdicts = dict(_by_command(task, results))
    doomed = verdicts["tool doomed"]
    assert doomed.verdict == Verdict.RUNTIME_ERROR and doomed.verdict.counted
    assert doomed.reason.startswith("the engine could not run or inspect this case"), doomed
    assert verdicts["tool flaky"].verdict == Verdict.ACCEPTED, verdicts["tool flaky"].reason
    oracle = verdicts["tool oracle-doomed"]
    assert oracle.verdict == Verdict.ORACLE_ERROR and not oracle.verdict.counted, oracle.reason
    assert oracle.delivery is not None and oracle.delivery.stdout == "ok\n"
    for command in ("tool ok1", "tool ok2", "tool ok3"):
        assert verdicts[command].verdict == Verdict.ACCEPTED, verdicts[command].reason


async def test_a_lost_engine_ends_the_run_and_leaves_no_case_running(images, monkeypatch):
    """The engine "goes away" for the probe only (DOCKER_HOST points nowhere), so the test
    needs no real outage: a case's refusal is then taken for a lost engine."""
    task = _task([f"tool ok{i}" for i in range(6)])

    sandbox = await DockerSandbox.open()
    try:
        async with Evaluator(sandbox, task, images, run_id="test-faults-lost", concurrency=2) as ev:
            Saboteur(ev.delivery, {"": 1}, lambda: "")  # the first box taken
            monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            with pytest.raises(EngineLost) as lost:
                async for _ in ev.run_cases(task.cases):
                    pass
            assert _cases_in_flight() == []  # cancelled and awaited before the error surfaced
    finally:
        await sandbox.close()
    assert "nonexistent" in str(lost.value) and "No such container" in str(lost.value)


class _FullDisk(RunStore):
    """A store that cannot take a case's result: the run fails while cases are in flight."""

    def append(self, event: Event, payload: str | None = None) -> int:
        if isinstance(event, CaseFinished):
            raise OSError(28, "No space left on device")
        return super().append(event, payload)


def _cases_in_flight() -> list[asyncio.Task]:
    return [
        t
        for t in asyncio.all_tasks()
        if not t.done() and "run_cases.<locals>.one" in t.get_coro().__qualname__
    ]


async def test_a_run_failing_mid_evaluation_leaves_no_case_running(
    fixture_catalog, tmp_path, monkeypatch
):
    in_flight_at_close: list[int] = []
    close = SidePool.close

    async def close_and_look(pool: SidePool) -> None:
        in_flight_at_close.append(len(_cases_in_flight()))
        await close(pool)

    monkeypatch.setattr(SidePool, "close", close_and_look)
    store = _FullDisk(tmp_path / "runs.db")
    try:
        run = Run(RunConfig(task=fixture_catalog.tasks["mini"], pace_s=0), store)
        outcome = await run.execute()
    finally:
        store.close()
    assert outcome.status == "failed" and "during evaluate" in outcome.error, outcome.error
    # cancelled and awaited before the pools close, not whenever the generator is collected
    assert in_flight_at_close == [0, 0]
    assert _cases_in_flight() == []


async def test_a_build_gate_the_engine_refuses_is_a_failed_build_not_a_failed_run(
    fixture_catalog, store
):
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"], agent="scripted:good", pace_s=0), store)

    def remove_the_delivery_image(ev: Event) -> None:
        # Synchronous, so it is done before the gate asks the engine for a container.
        if isinstance(ev, PhaseChanged) and ev.phase == "build":
            image = f"icae-delivery-mini:{ev.run_id}"
            subprocess.run(["docker", "rmi", "-f", image], check=True, capture_output=True)

    run.subscribe(remove_the_delivery_image)
    outcome = await run.execute()
    assert outcome.status == "completed", outcome.error
    assert outcome.score is not None and not outcome.score.build_ok
    build = next(e for e in store.events(run.run_id) if isinstance(e, BuildChecked))
    assert build.reason.startswith("the engine could not run the build gate"), build.reason
    assert all(r.verdict == Verdict.BUILD_ERROR for r in outcome.results)


# --- a fork bomb as an agent step ---------------------------------------------------------


async def test_agent_fork_bomb_is_reported_and_the_next_step_runs(tmp_path, store):
    folder = copy_mini(tmp_path)
    write = good_step(folder)
    bomb = {
        "steps": [
            {"run": "f() { f | f & }; f & exit 0"},
            {"run": "echo after-the-bomb"},
            write,
            {"submit": "done"},
        ]
    }
    add_solution(folder, "bomb", bomb["steps"])
    task = load_mini(folder)
    run = Run(RunConfig(task=task, agent="scripted:bomb", pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    done = [e for e in events if isinstance(e, AgentCommandDone)]
    assert [d.command for d in done] == [bomb["steps"][0]["run"], "echo after-the-bomb"]
    assert done[0].pids_capped, done[0]
    assert done[1].exit_code == 0 and not done[1].pids_capped, done[1]
    assert done[0].left_running > 0 and done[0].killed_left  # so the next step could start
    said = "".join(e.text for e in events if isinstance(e, AgentOutput))
    assert "after-the-bomb" in said
    printed = io.StringIO()
    PlainPrinter(printed)(done[0])
    assert "hit the process limit" in printed.getvalue(), printed.getvalue()
    assert outcome.score is not None and outcome.score.overall == 1.0
