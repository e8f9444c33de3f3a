"""Screenshots of the case detail at 80×24 (stacked: the oracle's line above the
delivery's) and 200×60 (side by side), compared with the accepted ones in __snapshots__/:
a failing case with hostile output, a line only the delivery has, side effects on different
paths, and the case's input, fixtures and prep. Stable: fixed results, the task's folder
shown as a fixed path (the snapshots' fixtures, tests/ui/conftest.py).
After an intended change: `pytest tests/ui/test_case_detail_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them.
"""

from __future__ import annotations

from icae_tui.display.handle import NOT_KEPT, CaseContext
from icae_tui.ui.screens.case_detail import CaseDetailScreen

from .helpers import still_console, until, wrong


def test_case_detail_compared(snap_compare, catalog, store, mini_with_files, size):
    result = wrong()
    result.oracle.duration_s, result.delivery.duration_s = 0.031, 0.047
    context = CaseContext(task=mini_with_files, source="as this run has it", gone=NOT_KEPT)

    async def detail(pilot) -> None:
        screen = CaseDetailScreen(result, context=context)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: pilot.app.screen is screen and screen.is_mounted)

    app = still_console(catalog, store)
    assert snap_compare(app, run_before=detail, terminal_size=size)


def test_case_detail_build_error(snap_compare, catalog, store, size):
    """A build_error case: the build's exit code, stdout and stderr under its reason, hostile
    bytes escaped (issue 38 item 10)."""
    from .test_case_detail import build_error_case, failed_build

    async def detail(pilot) -> None:
        screen = CaseDetailScreen(build_error_case(), context=CaseContext(gone=NOT_KEPT),
                                  build=failed_build())  # fmt: skip
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: pilot.app.screen is screen and screen.is_mounted)

    app = still_console(catalog, store)
    assert snap_compare(app, run_before=detail, terminal_size=size)
