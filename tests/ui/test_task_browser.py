"""The task browser (task list screen): search as you type, the language and size filters with
their counts, the preview (PRD per level, case counts — never a hidden case), the keys, and
Enter still opening the run setup. A catalog of 500 generated tasks checks that the list
follows each keystroke exactly (no timing is measured here)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual import events
from textual.widgets import Input, Static

from icae_tui.catalog.loader import Catalog
from icae_tui.catalog.search import Ability, Size, TaskFinder
from icae_tui.domain.task import Level, Origin, OriginSource, Reference
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens import task_list
from icae_tui.ui.screens.help import HelpScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen
from icae_tui.ui.screens.task_list import TaskListScreen
from icae_tui.ui.widgets.task_preview import TaskPreview
from icae_tui.ui.widgets.task_table import TaskTable
from tests.generated_catalog import (
    HIDDEN_SECRET,
    RECORD_SECRET,
    SECRET,
    catalog_of,
    generated,
    make_task,
)

from .helpers import until

PRDS = {
    Level.L1: "# Versions\nBuild a version tool. alpha-one",
    Level.L2: "# Versions\nBuild a version tool that bumps. beta-two",
    Level.L3: "# Versions\nBuild a version tool that bumps and sorts. gamma-three",
    Level.GROUND: "# Versions\nEverything, exactly. delta-ground",
}
SMALL = [
    make_task("csvkit", "CSV toolkit", "python", "slices and joins tables", cases=12),
    make_task("json-tool", "JSON converter", "go", "converts csv to json and back", cases=40),
    make_task("todo", "Todo list", "rust", "keeps a todo list in a file", cases=120),
    make_task("semver", "Semantic versions", "python", "parse and bump", cases=70, prd=PRDS),
]


def plain(content: object) -> str:
    """What a widget's content reads as on a wide terminal."""
    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(content)
    return console.export_text().replace("\u00a0", " ")


def static(screen, selector: str) -> str:
    return plain(screen.query_one(selector, Static).content)


def shown(screen) -> list[str]:
    return list(screen.query_one("#tasks", TaskTable).ids)


def console_app(catalog: Catalog, store) -> IcaeApp:
    app = IcaeApp(catalog=catalog, store=store)
    app.animation_level = "none"
    return app


async def type_text(pilot, text: str) -> None:
    for ch in text:
        await pilot.press("space" if ch == " " else ch)


async def test_slash_searches_as_you_type_and_ranks(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, TaskListScreen)
        assert shown(screen) == ["csvkit", "json-tool", "todo", "semver"]
        assert screen.query_one("#tasks").has_focus
        await pilot.press("slash")
        search = screen.query_one("#task-search", Input)
        assert search.has_focus
        await type_text(pilot, "csv")
        await pilot.pause()
        assert shown(screen) == ["csvkit", "json-tool"]  # id match first, summary match next
        assert screen.query_one("#tasks", TaskTable).border_title == "Tasks · 2 of 4"
        assert "CSV toolkit" in static(screen, "#task-detail")  # the best match is previewed
        await type_text(pilot, " go")
        await pilot.pause()
        assert shown(screen) == ["json-tool"]  # every word must match: csv (summary) + go
        await pilot.press("escape")  # clears the search, all tasks are back
        await pilot.pause()
        assert search.value == "" and search.has_focus
        assert shown(screen) == ["csvkit", "json-tool", "todo", "semver"]
        assert screen.query_one("#tasks", TaskTable).border_title == "Tasks"
        await pilot.press("escape")  # an empty search: back to the list
        await pilot.pause()
        assert screen.query_one("#tasks").has_focus
        await pilot.press("slash")
        await type_text(pilot, "zzzz")
        await pilot.pause()
        assert shown(screen) == []
        assert screen.query_one("#no-matches").display
        assert not screen.query_one(TaskPreview).display
        await pilot.press("escape")
        await pilot.pause()
        assert not screen.query_one("#no-matches").display
        assert screen.query_one(TaskPreview).display


async def test_a_typo_still_finds_the_task(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("slash")
        await type_text(pilot, "smever")
        await pilot.pause()
        assert shown(app.screen)[0] == "semver"


async def test_language_filter_cycles_with_counts(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        filters = static(screen, "#task-filters")
        assert "all 4" in filters and "python 2" in filters and "go 1" in filters
        await pilot.press("l")  # the language with most tasks first
        await pilot.pause()
        assert screen.language_filter == "python"
        assert shown(screen) == ["csvkit", "semver"]
        filters = static(screen, "#task-filters")
        assert "small 1" in filters and "medium 1" in filters and "large 0" in filters
        await pilot.press("l", "l")
        await pilot.pause()
        assert screen.language_filter == "rust" and shown(screen) == ["todo"]
        await pilot.press("l")  # round again: every language
        await pilot.pause()
        assert screen.language_filter is None and len(shown(screen)) == 4


async def test_size_filter_cycles_and_combines_with_search(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        assert "small 1" in static(screen, "#task-filters")
        await pilot.press("s")
        await pilot.pause()
        assert screen.size_filter is Size.SMALL and shown(screen) == ["csvkit"]
        await pilot.press("s")
        await pilot.pause()
        assert screen.size_filter is Size.MEDIUM and shown(screen) == ["json-tool", "semver"]
        filters = static(screen, "#task-filters")
        assert "python 1" in filters and "go 1" in filters and "rust 0" in filters
        await pilot.press("slash")
        await type_text(pilot, "csv")
        await pilot.pause()
        assert shown(screen) == ["json-tool"]  # csv among the medium ones
        assert screen.query_one("#tasks", TaskTable).border_title == "Tasks · 1 of 4"
        await pilot.press("escape", "escape")  # the search, then the filters
        await pilot.pause()
        assert screen.size_filter is None and len(shown(screen)) == 4


async def test_preview_switches_levels_and_counts_cases(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        await pilot.press("j", "j", "j")  # down to semver
        await pilot.pause()
        preview = screen.query_one(TaskPreview)
        assert preview.card is not None and preview.card.id == "semver"
        detail = static(screen, "#task-detail")
        assert "70 cases (medium): 11 public · 35 hidden · 24 enhanced" in detail
        assert "alpha-one" in static(screen, "#preview-text")
        for key, level, word in [("]", "L2", "beta-two"), ("]", "L3", "gamma-three"),
                                 ("]", "ground", "delta-ground")]:  # fmt: skip
            await pilot.press(key)
            await pilot.pause()
            body = static(screen, "#preview-text")
            assert preview.tab == level and f"{level} PRD" in body and word in body
        await pilot.press("]")
        await pilot.pause()
        assert preview.tab == "cases"
        body = static(screen, "#preview-text")
        assert "70 cases by pattern" in body
        rows = {line.split()[0]: line.split()[1:] for line in body.splitlines() if line.strip()}
        assert rows["parse"] == ["3", "9", "6", "18"]  # public, hidden, enhanced, all
        assert rows["total"] == ["11", "35", "24", "70"]
        await pilot.press("[", "[", "]", "]")  # keys in a row each count
        await pilot.pause()
        assert preview.tab == "cases"
        await pilot.press("k")  # another task: the tab stays
        await pilot.pause()
        assert preview.card.id == "todo" and "120 cases by pattern" in static(
            screen, "#preview-text"
        )
        await pilot.press("]")  # round to L1
        await pilot.pause()
        assert preview.tab == "L1" and "L1 PRD" in static(screen, "#preview-text")
        await pilot.press("[")
        await pilot.pause()
        assert preview.tab == "cases"


async def test_preview_never_shows_a_case_or_a_record(store):
    """Every case of the catalog carries a marker in its input, output and fixtures, and
    every user-agent record one too: no tab of the preview, no line of the screen has it."""
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        for _ in range(len(SMALL)):
            for _ in range(5):  # the four PRDs and the case counts
                texts = [static(screen, s) for s in ("#task-detail", "#preview-text")]
                texts.append(app.export_screenshot())
                for text in texts:
                    for secret in (SECRET, HIDDEN_SECRET, RECORD_SECRET):
                        assert secret not in text
                await pilot.press("]")
                await pilot.pause()
            await pilot.press("down")
            await pilot.pause()
        assert "semver" in app.export_screenshot()  # the check does read the screen


async def test_enter_opens_setup_for_the_highlighted_task(fixture_catalog, store):
    catalog = catalog_of([*generated(40), fixture_catalog.tasks["mini"]])
    app = console_app(catalog, store)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("slash")
        await type_text(pilot, "mini text")
        await pilot.press("enter")  # from the search box to the list
        await pilot.pause()
        assert app.screen.query_one("#tasks").has_focus
        assert shown(app.screen)[0] == "mini"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        config = app.screen.config()
        assert config is not None and config.task.id == "mini"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))
        assert shown(app.screen) == ["mini"]  # the search is kept
        await pilot.press("escape", "down", "enter")  # the search cleared: another task
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        second = shown(app.screen_stack[-2])[1]
        assert second in str(app.screen.query_one("#setup-title", Static).render())


async def test_a_click_highlights_a_second_click_opens_setup(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        table = app.screen.query_one("#tasks", TaskTable)
        await pilot.pause()  # laid out: the filters line has its height
        await pilot.click("#tasks", offset=(4, 4))  # border, header, then rows 0, 1, 2
        await pilot.pause()
        assert table.highlighted == "todo"
        assert app.screen.query_one(TaskPreview).card.id == "todo"
        await pilot.click("#tasks", offset=(4, 4))
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        assert "todo" in str(app.screen.query_one("#setup-title", Static).render())


@pytest.fixture(scope="module")
def five_hundred() -> Catalog:
    return catalog_of(generated(500))


async def test_five_hundred_tasks_follow_every_keystroke(five_hundred, store, monkeypatch):
    """Each keystroke shows exactly what the finder ranks for the text typed so far, under
    the filters — and no row is built again (rows are built once, when the screen opens)."""
    finder = TaskFinder(five_hundred.tasks.values())
    app = console_app(five_hundred, store)
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.screen
        table = screen.query_one("#tasks", TaskTable)
        assert table.row_count == 500
        built = []
        monkeypatch.setattr(task_list, "task_row", lambda card: built.append(card) or ())
        rows = dict(table.rows)
        await pilot.press("slash")
        typed = ""
        for ch in "yaml linter":
            typed += ch
            await type_text(pilot, ch)
            await pilot.pause()
            assert shown(screen) == finder.find(typed).ids, typed
        assert shown(screen) == ["yaml-linter-111", "yaml-linter-311"]
        await pilot.press("enter", "l", "s")  # to the list; first language; first size
        await pilot.pause()
        # each the first that shows some task (the ones with none are skipped)
        language = next(lang for lang, n in finder.find("yaml linter").languages if n)
        size = next(s for s, n in finder.find("yaml linter", language).sizes if n)
        assert (screen.language_filter, screen.size_filter) == (language, size)
        expected = finder.find("yaml linter", language, size)
        assert shown(screen) == expected.ids and expected.ids
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert table.row_count == 500 and shown(screen) == [c.id for c in finder.cards]
        assert built == [] and all(table.rows[k] is v for k, v in rows.items())
        # the cursor walks the list and the preview follows it
        await pilot.press("G")
        await pilot.pause()
        assert table.highlighted == finder.cards[-1].id
        assert screen.query_one(TaskPreview).card.id == finder.cards[-1].id
        await pilot.press("g", "pagedown")
        await pilot.pause()
        assert table.cursor == table.page_rows
        assert table.highlighted in app.export_screenshot()  # scrolled into view


# --- issue 20: what a new user tripped on ----------------------------------------------------


async def test_size_cycle_skips_the_sizes_with_no_task(store):
    """Only medium tasks (as the shipped tasks are): `s` goes all → medium → all, never to
    `small 0` or `large 0` (an empty list, the preview gone, the layout jumping)."""
    tasks = [make_task("a", "A tool", "python", cases=40), make_task("b", "B tool", "go", cases=70)]
    app = console_app(catalog_of(tasks), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        assert "small 0" in static(screen, "#task-filters")
        await pilot.press("s")
        await pilot.pause()
        assert screen.size_filter is Size.MEDIUM and shown(screen) == ["a", "b"]
        await pilot.press("s")
        await pilot.pause()
        assert screen.size_filter is None and shown(screen) == ["a", "b"]


async def test_both_cycles_skip_what_the_other_filter_and_the_search_leave_empty(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        await pilot.press("l")  # python: small 1 · medium 1 · large 0
        await pilot.pause()
        assert screen.language_filter == "python"
        for size in (Size.SMALL, Size.MEDIUM, None):  # large 0 skipped
            await pilot.press("s")
            await pilot.pause()
            assert screen.size_filter is size and shown(screen)
        await pilot.press("escape", "s", "s")  # no filter (Escape), then medium
        await pilot.pause()
        assert screen.size_filter is Size.MEDIUM
        assert "rust 0" in static(screen, "#task-filters")
        for language in ("python", "go", None):  # rust 0 skipped
            await pilot.press("l")
            await pilot.pause()
            assert screen.language_filter == language and shown(screen)
        await pilot.press("escape", "slash")
        await type_text(pilot, "zzzz")  # nothing matches: no value shows a task
        await pilot.press("enter", "l", "s")
        await pilot.pause()
        assert (screen.language_filter, screen.size_filter) == (None, None)


def listed(screen, query: str) -> bool:
    """The list shows what the search finds for `query`, and not every task."""
    ids = screen.finder.find(query).ids
    return shown(screen) == ids and len(ids) < len(screen.finder.cards)


def queue_keys(app, *keys: str) -> None:
    """Keys as a terminal delivers what was typed fast (tmux): all of them queued before the
    first one is handled (Pilot's `press` lets each one settle first)."""
    for key in keys:
        char = "\x15" if key == "ctrl+u" else "\x7f" if key == "backspace" else key
        app.post_message(events.Key(key, char if len(char) == 1 else None))


async def test_typing_right_after_ctrl_u_is_kept(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        await pilot.press("slash")
        await type_text(pilot, "csv")
        await pilot.pause()
        search = screen.query_one("#task-search", Input)
        queue_keys(app, "ctrl+u", "t", "o", "d", "o")
        await until(pilot, lambda: search.value == "todo" and listed(screen, "todo"))
        queue_keys(app, "backspace", "backspace", "ctrl+u", "s", "e", "m")
        await until(pilot, lambda: search.value == "sem" and listed(screen, "sem"))


async def test_typing_right_after_escape_clears_is_kept(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        await pilot.press("slash")
        await type_text(pilot, "csv")
        await pilot.pause()
        search = screen.query_one("#task-search", Input)
        queue_keys(app, "escape", "t", "o", "d", "o")  # Escape clears, typing goes on
        await until(pilot, lambda: search.value == "todo" and listed(screen, "todo"))
        assert search.has_focus


LONG = {
    level: f"# Long {level.value}\n\n"
    + "\n\n".join(f"Paragraph {i} of the {level.value} PRD." for i in range(40))
    + f"\n\nlast-line-of-{level.value}"
    for level in Level
}


def screen_text(app) -> str:
    return app.export_screenshot().replace("&#160;", " ")


async def test_a_long_prd_scrolls_from_the_list_and_its_border_says_how(store):
    """At 80×24: `J` / `K` scroll the preview a page from the list, the border names the keys
    and how far down it is, and the whole PRD is reached."""
    tasks = [make_task("long", "Long PRD", "python", "a task with a long PRD", prd=LONG),
             make_task("other", "Other", "go")]  # fmt: skip
    app = console_app(catalog_of(tasks), store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        preview = screen.query_one(TaskPreview)
        await until(pilot, lambda: preview.border_subtitle == "[ ] tabs · J K scroll · top")
        assert "last-line-of-L1" not in screen_text(app)
        for _ in range(60):  # a page each: far fewer
            if preview.border_subtitle == "[ ] tabs · J K scroll · end":
                break
            await pilot.press("J")
            await pilot.pause()
        assert preview.border_subtitle == "[ ] tabs · J K scroll · end"
        assert "last-line-of-L1" in screen_text(app)
        assert screen.query_one("#tasks").has_focus  # the list keeps the keys
        await pilot.press("K")
        await until(pilot, lambda: "%" in str(preview.border_subtitle))
        await pilot.press("right_square_bracket")  # L2 from its top: the tab bar first
        await pilot.pause()
        body = preview.body
        assert body.scroll_y == preview.query_one("#preview-tabs").virtual_region.y > 0
        assert "Paragraph 0 of the L2 PRD" in screen_text(app)
        await pilot.press("j")  # another task: from the top
        await until(pilot, lambda: preview.card.id == "other" and body.scroll_y == 0)


async def test_at_80x24_the_list_takes_its_rows_and_the_preview_the_rest(store):
    """No empty rows between the list and the preview: a short list leaves them to the
    preview, a long one stops at a third of the screen."""
    for tasks, rows in ((SMALL, len(SMALL) + 3), (generated(60), 24 // 3)):
        app = console_app(catalog_of(tasks), store)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            screen = app.screen
            table = screen.query_one("#tasks", TaskTable)
            preview = screen.query_one(TaskPreview)
            assert table.region.height == rows  # its rows, borders and header
            assert preview.region.y == table.region.bottom  # right below the list
            assert preview.region.bottom == screen.query_one("Footer").region.y
            assert preview.body.region.height >= 6


async def test_help_names_each_preview_tab_key(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        rows = {r.action_id: (r.keys, r.description) for r in app.screen.rows}
        assert rows["tasks.preview_tab.-1"] == (["["], "Previous preview tab")
        assert rows["tasks.preview_tab.1"] == (["]"], "Next preview tab")
        assert rows["tasks.preview_scroll.1"] == (["J"], "Scroll the preview down")
        assert rows["tasks.preview_scroll.-1"] == (["K"], "Scroll the preview up")


# --- issue 21: a catalog of several benchmarks ---------------------------------------------------


def _from(task, source, alias, **update):
    spec = task.spec.model_copy(update={"origin": Origin(source=source, alias=alias)})
    if update.pop("expected", False):
        cases = spec.cases.model_copy(update={"reference": Reference.EXPECTED})
        spec = spec.model_copy(update={"cases": cases})
    return task.model_copy(update={"spec": spec, **update})


MIXED = [
    make_task("local", "Local tool", "python", cases=12),
    _from(make_task("icae-a", "ICAE A", "python", cases=12), OriginSource.ICAE_EVAL,
          "realcode@050", expected=True),  # fmt: skip
    _from(make_task("icae-b", "ICAE B", "go", cases=40), OriginSource.ICAE_EVAL, "realcode@051"),
    _from(make_task("ctb-a", "CTB A", "python", cases=40), OriginSource.CLI_TOOL_BENCH, "o/r"),
]


async def test_origin_and_ability_cycle_when_the_catalog_mixes_benchmarks(store):
    app = console_app(catalog_of(MIXED), store)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.screen
        filters = static(screen, "#task-filters")
        filters = " ".join(filters.split())
        assert "origin all 4 · ICAE-EVAL 2 · CLI-Tool-Bench 1 · bundled 1" in filters
        assert "can do all 4 · user-agent records 4 · golden oracle 3 · expected outputs 1" in (
            filters
        )
        await pilot.press("o")
        await pilot.pause()
        assert screen.origin_filter == "ICAE-EVAL" and shown(screen) == ["icae-a", "icae-b"]
        await pilot.press("c", "c")  # user-agent records, then golden oracle
        await pilot.pause()
        assert screen.ability_filter is Ability.GOLDEN and shown(screen) == ["icae-b"]
        await pilot.press("o")  # CLI-Tool-Bench: its one task has a golden oracle
        await pilot.pause()
        assert shown(screen) == ["ctb-a"]
        await pilot.press("escape")
        await pilot.pause()
        assert screen.origin_filter is None and screen.ability_filter is None
        assert len(shown(screen)) == 4


async def test_a_catalog_of_one_origin_neither_draws_nor_offers_those_filters(store):
    app = console_app(catalog_of(SMALL), store)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.screen
        assert "origin" not in static(screen, "#task-filters")
        assert "can do" not in static(screen, "#task-filters")
        await pilot.press("o", "c")
        await pilot.pause()
        assert screen.origin_filter is None and screen.ability_filter is None
        assert len(shown(screen)) == len(SMALL)
