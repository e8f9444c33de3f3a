"""A `Run` through the sandbox protocol without an engine: the unsafe `processes` backend
(boxes as host processes over temporary folders, icae_tui/sandbox/processes.py) runs its
phases, cancel and error paths in about a second each. The real-engine tests stay in
tests/integration; these need root (mounts) and no Docker."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from icae_tui.domain.events import AgentCommandDone, CaseFinished, Event, PhaseChanged
from icae_tui.domain.results import Verdict
from icae_tui.domain.states import Phase, RunStatus
from icae_tui.errors import ConfigError, EngineUnavailable
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.sandbox.processes import ProcessSandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")


@pytest.fixture
def unsafe_allowed(monkeypatch, tmp_path):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    return tmp_path


def _config(task, agent: str = "scripted:good", engine: str = "processes") -> RunConfig:
    return RunConfig(task=task, agent=agent, pace_s=0, engine=engine)


@pytest.mark.parametrize(
    ("agent", "overall"), [("scripted:good", 1.0), ("scripted:partial", 0.4), ("scripted:broken", 0.0)]
)
async def test_a_run_judges_its_delivery_with_no_engine(
    fixture_catalog, store, unsafe_allowed, agent, overall
):
    run = Run(_config(fixture_catalog.tasks["mini"], agent), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.score is not None and outcome.score.overall == overall
    phases = [e.phase for e in store.events(run.run_id) if isinstance(e, PhaseChanged)]
    assert phases[:3] == [Phase.PREPARE, Phase.GENERATE, Phase.FREEZE]
    assert run.leftovers_removed == []  # every box removed by the run itself


async def test_a_run_cancelled_while_the_agent_builds_leaves_no_box(
    fixture_catalog, store, unsafe_allowed
):
    run = Run(_config(fixture_catalog.tasks["mini"]), store)
    building = asyncio.Event()

    def watch(ev: Event) -> None:
        if isinstance(ev, AgentCommandDone):
            building.set()

    run.subscribe(watch)
    execution = asyncio.ensure_future(run.execute())
    await building.wait()
    execution.cancel()
    with pytest.raises(asyncio.CancelledError):
        await execution
    assert store.run(run.run_id).status == RunStatus.CANCELLED
    assert run.leftovers_removed == []  # its own removals did it, the final sweep found none
    assert not any(isinstance(e, CaseFinished) for e in store.events(run.run_id))


async def test_a_bug_in_case_handling_fails_the_run(
    fixture_catalog, store, unsafe_allowed, monkeypatch
):
    from icae_tui.sandbox.processes import ProcessCasePool

    async def broken(self, call):
        raise ZeroDivisionError("our bug")

    monkeypatch.setattr(ProcessCasePool, "run", broken)
    run = Run(_config(fixture_catalog.tasks["mini"]), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.FAILED
    assert "during evaluate: internal error: ZeroDivisionError: our bug" in outcome.error
    assert not [e for e in store.events(run.run_id) if isinstance(e, CaseFinished)]


async def test_a_case_side_the_engine_cannot_run_is_its_verdict(
    fixture_catalog, store, unsafe_allowed, monkeypatch
):
    """A BoxError on the delivery's side (twice: the retry too) is that case's verdict."""
    from icae_tui.errors import BoxError
    from icae_tui.sandbox.processes import ProcessCasePool

    run_case = ProcessCasePool.run

    async def refused_on_delivery(self, call):
        if self.role == "delivery" and "upper" in (call.stdin or b"").decode():
            raise BoxError("the engine refused it")
        return await run_case(self, call)

    monkeypatch.setattr(ProcessCasePool, "run", refused_on_delivery)
    run = Run(_config(fixture_catalog.tasks["mini"]), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    refused = [r for r in outcome.results if r.verdict == Verdict.RUNTIME_ERROR]
    assert refused and all("could not run or inspect" in r.reason for r in refused)
    assert all(r.verdict == Verdict.ACCEPTED for r in outcome.results if r not in refused)


async def test_an_engine_that_does_not_answer_fails_the_run_with_its_reason(
    fixture_catalog, store, unsafe_allowed, monkeypatch
):
    async def unavailable(options):
        raise EngineUnavailable("the engine at nowhere is not answering")

    registry.register_backend("nowhere", unavailable)
    try:
        run = Run(_config(fixture_catalog.tasks["mini"], engine="nowhere"), store)
        outcome = await run.execute()
    finally:
        registry.unregister_backend("nowhere")
    assert outcome.status == RunStatus.FAILED
    assert outcome.error == "the engine at nowhere is not answering"


def test_the_unsafe_backend_is_refused_outside_the_tests(monkeypatch):
    monkeypatch.delenv(registry.UNSAFE_VAR, raising=False)
    with pytest.raises(ConfigError, match="tests only"):
        registry.resolve("processes", entries={})


def test_engines_are_found_by_backend_or_entry(tmp_path):
    path = tmp_path / "engines.toml"
    path.write_text('[engines.lab]\nbackend = "docker"\nhost = "tcp://lab:2375"\n')
    entries = registry.engine_entries(path)
    backend, options = registry.resolve("lab", entries)
    assert (backend.name, options) == ("docker", {"host": "tcp://lab:2375"})
    with pytest.raises(ConfigError, match="no such backend or engines entry"):
        registry.resolve("nope", entries)
    path.write_text("[engines.x\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        registry.engine_entries(path)


async def test_a_box_keeps_its_files_and_loses_everything_when_removed(tmp_path):
    from icae_tui.sandbox.base import BoxSpec, Role

    sandbox = ProcessSandbox(tmp_path)
    box = await sandbox.create_box(BoxSpec(image="icae-base:host", run_id="t", role=Role.TEST))
    await box.put_files({"/workspace/a.txt": b"hello\n"})
    res = await box.exec("cat a.txt && echo more >> a.txt", workdir="/workspace")
    assert (res.exit_code, res.stdout) == (0, b"hello\n")
    assert await box.read_file("/workspace/a.txt", 100) == b"hello\nmore\n"
    assert not Path("/workspace/a.txt").exists()  # written in the box, not on the host
    await box.remove()
    assert not list((tmp_path / "boxes").iterdir())
    await sandbox.close()
