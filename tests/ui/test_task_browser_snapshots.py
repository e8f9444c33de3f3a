"""Screenshots of the task browser at 80×24 and 200×60, compared with the accepted ones in
__snapshots__/ (see test_snapshots.py for how they stay stable and how to update them).

The catalog: the fixture task `mini` (its folder shown as a fixed path) and 60 generated
tasks (icae_tui's sizes and languages all populated)."""

from __future__ import annotations

import pytest

from icae_tui.catalog.loader import Catalog
from tests.generated_catalog import catalog_of, generated

from .helpers import still_console

SMALL_TERMINAL = (80, 24)
LARGE_TERMINAL = (200, 60)


@pytest.fixture
def browser_catalog(fixture_catalog) -> Catalog:
    mini = fixture_catalog.tasks["mini"].model_copy(update={"root": "tasks/mini"})
    return catalog_of([mini, *generated(60)])


def test_task_list_80x24(snap_compare, browser_catalog, store):
    assert snap_compare(still_console(browser_catalog, store), terminal_size=SMALL_TERMINAL)


def test_task_list_200x60(snap_compare, browser_catalog, store):
    assert snap_compare(still_console(browser_catalog, store), terminal_size=LARGE_TERMINAL)


def test_task_search_80x24(snap_compare, browser_catalog, store):
    """`csv` typed: the csv tasks ranked, the counts of each filter follow the search."""
    keys = ["slash", "c", "s", "v"]
    assert snap_compare(
        still_console(browser_catalog, store), press=keys, terminal_size=SMALL_TERMINAL
    )


def test_task_search_filters_and_cases_200x60(snap_compare, browser_catalog, store):
    """`csv`, back to the list, the small ones only, the second highlighted, its case counts
    per pattern (the preview's last tab)."""
    keys = ["slash", "c", "s", "v", "enter", "s", "down", "left_square_bracket"]
    assert snap_compare(
        still_console(browser_catalog, store), press=keys, terminal_size=LARGE_TERMINAL
    )
