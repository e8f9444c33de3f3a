"""The case detail on the real engine: a short run of the mini task by `scripted:partial`,
started in the console (which keeps its delivery); a failing case's detail re-runs it on the
kept delivery to the same verdict, then with an edited input that makes it pass; leaving the
run's screen removes the delivery image."""

from __future__ import annotations

import pytest
from textual.widgets import TextArea

from icae_tui.runs.config import RunConfig
from icae_tui.runs.kept import KeptImages
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.case_detail import CaseDetailScreen, EditCaseScreen
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.run import RunScreen
from tests.integration.test_rerun import _image_exists
from tests.ui.helpers import until

pytestmark = pytest.mark.docker

FAILING = "hidden/ops#0"  # count: partial prints "3" where the oracle prints "words=3"


async def test_case_detail_reruns_a_failing_case_as_it_was_and_edited(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    app = IcaeApp(catalog=fixture_catalog, store=store, pace_s=0)
    async with app.run_test(size=(160, 45)) as pilot:
        config = RunConfig(task=task, agent="scripted:partial", pace_s=0, keep_delivery=True)
        run = app.start_run(config)
        await until(pilot, lambda: run.worker is not None)
        await run.worker.wait()
        await until(pilot, lambda: run.finished is not None)
        outcome = run.outcome
        assert outcome.status == "completed", outcome.error
        assert outcome.sides is not None and await _image_exists(outcome.sides.delivery_image)
        failed = next(r for r in outcome.results if r.case_id == FAILING)
        assert not failed.passed

        # Enter on the failing case's row opens its detail, which knows what the run kept
        await until(pilot, lambda: FAILING in run.results.planned)
        run.results.focus()
        run.results.move_cursor(row=run.results.planned.index(FAILING))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CaseDetailScreen))
        detail = app.screen
        assert detail.result.case_id == FAILING
        assert detail.context().kept == KeptImages(task, outcome.sides)

        # r: as it was, to the same verdict
        await pilot.press("r")
        await until(pilot, lambda: detail.rerun_worker is not None)
        assert detail.note.startswith("re-running…")
        await detail.rerun_worker.wait()
        await until(pilot, lambda: detail.pending is None)
        assert detail.result.verdict == failed.verdict, detail.note
        assert "the same verdict as the run" in detail.note

        # e: an input that partial handles as the oracle does
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditCaseScreen))
        app.screen.query_one("#edit-input", TextArea).text = '{"op": "upper", "text": "fine"}'
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.screen is detail and detail.reruns == 2)
        await detail.rerun_worker.wait()
        await until(pilot, lambda: detail.pending is None)
        assert detail.result.passed, detail.note
        assert "(edited input): accepted — changed" in detail.note
        assert detail.result.delivery is not None and detail.result.delivery.stdout == "FINE\n"

        # leaving the run's screen discards the kept delivery
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is run)
        assert await _image_exists(outcome.sides.delivery_image)
        await pilot.press("escape")  # it asks first: leaving discards the kept delivery
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: not isinstance(app.screen, RunScreen))
        await until(pilot, lambda: app.kept.discarded == [KeptImages(task, outcome.sides)]
                    and not app.kept.pending())  # fmt: skip
        assert not await _image_exists(outcome.sides.delivery_image)
