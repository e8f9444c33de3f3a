"""Engine trouble, our own bugs and the delivery's failures are three different things
(icae_tui/errors.py), on the real engine: a bug of ours inside case handling fails the run
with its cause — it is never turned into a verdict against the delivery."""

from __future__ import annotations

import pytest

from icae_tui.domain.events import CaseFinished
from icae_tui.domain.states import RunStatus
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.docker import cases

pytestmark = pytest.mark.docker


@pytest.mark.parametrize("bug", [RuntimeError, KeyError, AttributeError])
async def test_a_bug_in_case_handling_fails_the_run_and_judges_nothing(
    fixture_catalog, store, monkeypatch, bug
):
    async def observe(*args: object, **kwargs: object) -> None:
        raise bug("a bug of ours while looking at a case")

    monkeypatch.setattr(cases, "_observe", observe)
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"], pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.FAILED, outcome
    assert "during evaluate: internal error" in outcome.error, outcome.error
    assert bug.__name__ in outcome.error and "a bug of ours" in outcome.error
    judged = [e.result for e in store.events(run.run_id) if isinstance(e, CaseFinished)]
    assert judged == []  # no case got a verdict from our bug: not runtime_error, not any
