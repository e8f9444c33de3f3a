"""Which clock stopped the agent: the run's wall clock is its time limit; a timeout raised
inside the agent (its own client giving up on a slow model, say) is an infrastructure error,
never counted as the agent running out of time. A real Run on the `processes` backend."""

from __future__ import annotations

import asyncio
import os

import pytest

from icae_tui.agents.base import AgentContext, AgentNeeds, Limits
from icae_tui.agents.registry import AgentKindEntry, register_agent_kind, unregister_agent_kind
from icae_tui.domain.events import AgentStopped
from icae_tui.domain.states import RunStatus, StopReason
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")


class Stalling:
    """`stall:forever` waits on nothing until the run's clock stops it; `stall:own` raises a
    timeout of its own, as an HTTP client with its own deadline would (`stall:own-capped`
    the same under an hour's time limit)."""

    def __init__(self, how: str) -> None:
        self.name, self.how, self.needs = f"stall:{how}", how, AgentNeeds()
        seconds = {"forever": 0.5, "own-capped": 3600.0}.get(how)
        self.limits = Limits(max_seconds=seconds)

    async def build(self, prd: str, ctx: AgentContext) -> str:
        await ctx.step()
        if self.how.startswith("own"):
            async with asyncio.timeout(0):
                await asyncio.Event().wait()
        await asyncio.Event().wait()
        return "never"


STALL = AgentKindEntry(
    "stall", make=lambda spec, name, ctx: Stalling(name), check=lambda spec, name, ctx: None
)


@pytest.fixture
def stall_kind(monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    register_agent_kind(STALL)
    try:
        yield
    finally:
        unregister_agent_kind("stall")


async def _stopped(fixture_catalog, store, agent: str) -> AgentStopped:
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent=agent, pace_s=0, engine="processes"), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.COMPLETED, outcome.error  # judged either way
    [stopped] = [e for e in store.events(run.run_id) if isinstance(e, AgentStopped)]
    return stopped


async def test_the_runs_clock_is_the_time_limit(fixture_catalog, store, stall_kind):
    stopped = await _stopped(fixture_catalog, store, "stall:forever")
    assert stopped.reason is StopReason.TIME_LIMIT
    assert stopped.detail == "time limit of 0.5 s" and stopped.steps == 1


@pytest.mark.parametrize("agent", ["stall:own", "stall:own-capped"])
async def test_a_timeout_inside_the_agent_is_infra_not_the_time_limit(
    fixture_catalog, store, stall_kind, agent
):
    stopped = await _stopped(fixture_catalog, store, agent)
    assert stopped.reason is StopReason.INFRA_ERROR
    assert stopped.detail.startswith("timed out inside the agent") and stopped.steps == 1
