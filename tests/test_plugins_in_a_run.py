"""A new agent kind and a new case scorer, each registered in a few lines, in a real Run (on
the `processes` backend: no engine, root for its mounts): the agent is made by its kind and
judged, and the new metric appears in the headless output printed as the run goes, in the
JSON report and in the console's results table, with no other change."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

import pytest

from icae_tui.agents.base import AgentContext, AgentNeeds, Limits
from icae_tui.agents.registry import AgentKindEntry, register_agent_kind, unregister_agent_kind
from icae_tui.catalog.loader import Catalog
from icae_tui.display.plain import PlainPrinter
from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import MetricSpec
from icae_tui.domain.states import RunStatus
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.scorers import case_scorer, registered
from icae_tui.evaluation.verdict import Attempt
from icae_tui.results.report import build_report
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.ui.app import IcaeApp
from tests.ui.test_scorer_plugin import SIZE, replayed

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")

MINI = """import json, sys
req = json.loads(sys.stdin.read())
op, text = req.get("op"), req.get("text", "")
if op == "upper":
    print(text.upper())
elif op == "count":
    print(f"words={len(text.split())}")
else:
    print("error=unknown_op")
    sys.exit(2)
"""

# --- the plug-ins, as a user would write them ---------------------------------------------

CHARS = MetricSpec(name="chars", label="CHARS", description="the delivery printed something")


@case_scorer(CHARS)
def chars(task: Task, ref: CaseRef, oracles: Sequence[Attempt], d: Attempt) -> dict[str, float]:
    return {CHARS.name: isinstance(d, SideOutcome) and bool(d.run.stdout.strip())}


class Inline:
    """An agent kind `inline:<name>` that writes its tool in one step."""

    def __init__(self, name: str) -> None:
        self.name, self.limits, self.needs = name, Limits(), AgentNeeds()

    async def build(self, prd: str, ctx: AgentContext) -> str:
        await ctx.step()
        await ctx.write(f"{ctx.workspace}/mini.py", MINI)
        return "written inline"


INLINE = AgentKindEntry(
    "inline", make=lambda spec, name, ctx: Inline(spec), check=lambda spec, name, ctx: None
)

# ---------------------------------------------------------------------------------------------


@pytest.fixture
def plugins(monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    register_agent_kind(INLINE)
    try:
        with registered(chars):
            yield
    finally:
        unregister_agent_kind("inline")


async def test_a_new_kind_and_a_new_metric_show_everywhere(fixture_catalog, store, plugins):
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent="inline:quick", pace_s=0, engine="processes"), store)
    out = io.StringIO()
    run.subscribe(PlainPrinter(out))
    outcome = await run.execute()
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.score is not None and 0 < outcome.score.overall < 1  # no note op
    printed = out.getvalue()
    [score_line] = [line for line in printed.splitlines() if line.startswith("score:")][-1:]
    assert "written inline" in printed and "FM 80.0%  CHARS 100.0%" in score_line

    events = store.events(run.run_id)
    report = build_report(events)
    assert report["metrics"][-1]["name"] == "chars"
    assert [c["metrics"]["chars"] for c in report["cases"]] == [1.0] * 6  # all printed
    assert "chars" in report["score"]["rates"]

    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await replayed(app, pilot, events)
        labels = [str(c.label) for c in screen.results.columns.values()]
        assert labels[-1] == "CHARS"
