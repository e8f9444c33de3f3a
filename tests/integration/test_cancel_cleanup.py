"""Cancel at any moment leaves nothing behind: no container, no delivery image, no socket
folder — whatever the run was doing. Cancelled at many points of a semver run under load
(70 cases, 8 in flight on this machine's cores), the way the console and Ctrl-C cancel it."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from icae_tui.domain.events import CaseFinished, Event, PhaseChanged, QuestionAsked
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.docker.engine import connect

pytestmark = pytest.mark.docker


def _phase(name: str) -> Callable[[Event], bool]:
    return lambda ev: isinstance(ev, PhaseChanged) and ev.phase == name


def _case(n: int) -> Callable[[Event], bool]:
    seen = {"cases": 0}

    def after_n_cases(ev: Event) -> bool:
        if isinstance(ev, CaseFinished):
            seen["cases"] += 1
        return seen["cases"] >= n

    return after_n_cases


POINTS = {
    "prepare": _phase("prepare"),
    "generate": _phase("generate"),
    "question": lambda ev: isinstance(ev, QuestionAsked),
    "freeze": _phase("freeze"),
    "build": _phase("build"),
    "evaluate": _phase("evaluate"),
    "case-1": _case(1),
    "case-4": _case(4),
    "case-12": _case(12),
    "case-30": _case(30),
    "case-55": _case(55),
}


def _ask_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"icae-ask-{os.getpid()}-*")}


async def _ours(docker, run_id: str) -> list[str]:
    found = await docker.containers.list(
        all=True, filters=json.dumps({"label": [f"icae.run={run_id}"]})
    )
    return [c.id[:12] for c in found]


@pytest.mark.parametrize("point", list(POINTS))
async def test_cancel_leaves_nothing(bundled_catalog, store, point):
    task = bundled_catalog.tasks["semver"]
    run = Run(RunConfig(task=task, agent="scripted:good", pace_s=0, concurrency=8), store)
    hit = POINTS[point]
    fired = asyncio.Event()
    execution: asyncio.Task | None = None

    def cancel_at_point(ev: Event) -> None:
        if not fired.is_set() and hit(ev):
            fired.set()
            assert execution is not None
            execution.cancel()

    run.subscribe(cancel_at_point)
    folders_before = _ask_folders()
    execution = asyncio.create_task(run.execute())
    with pytest.raises(asyncio.CancelledError):
        await execution
    assert fired.is_set()

    docker = await connect()
    try:
        assert await _ours(docker, run.run_id) == []
        images = await docker.images.list(
            filters={"reference": [f"icae-delivery-semver:{run.run_id}"]}
        )
        assert images == []
    finally:
        await docker.close()
    # The run's own removals did it: the final sweep by label found nothing to do.
    assert run.leftovers_removed == []
    row = store.run(run.run_id)
    assert row.status == "cancelled"
    assert _ask_folders() == folders_before  # the clarification socket's folder went too
