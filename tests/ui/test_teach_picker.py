"""The teach picker on the run screen: after a human answered a question the simulated user
fell back on, the level's records are offered (the likely one highlighted); Enter attaches
the question, as edited, to the record — stored pending with who, when and which run —
Escape skips; nothing is offered when the simulated user answered, when the fallback draft
was sent as it was, or in a replay; a malformed teachings file is notified, the picker kept.
On a copy of the fixture task; every wait is on the screen's state."""

from __future__ import annotations

import asyncio

from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.task import Level
from icae_tui.runs.run import RunOutcome
from icae_tui.ui.screens.run import RunScreen
from icae_tui.users.matching import match
from icae_tui.users.teaching import taught_data
from icae_tui.users.teachings import TeachingStatus, load_teachings, review, teachings_path
from tests.task_copies import copy_mini, load_mini

from .helpers import FakeRun, finish, open_screen, started, until

ASKED = "What does the tool say for a verb it has never heard of?"  # mini's L1: fallback
ANSWER = "Print error=unknown_op and exit 2"  # what C001 says


def _script(question: str = ASKED, then: asyncio.Event | None = None):
    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started(run.desk.mode))
        await run.channel.ask(question)
        if then is not None:
            await then.wait()
        return finish(run)

    return script


async def _answered(app, pilot, task, mode: str = "human", question: str = ASKED,
                    answer: str = ANSWER, then: asyncio.Event | None = None):  # fmt: skip
    """The run screen of a fake run whose one question the operator answered."""
    fake = FakeRun(task, mode, _script(question, then))
    screen = await open_screen(app, pilot, RunScreen(LiveSource(fake, task=task)))
    await until(pilot, lambda: screen.awaiting == 1)
    box = screen.answer_box
    if mode == "assisted":
        box.set_text(answer)
    else:
        await pilot.press(*answer)
    await pilot.press("enter")
    await until(pilot, lambda: screen.awaiting is None)
    return screen


async def test_a_human_answer_to_a_fallback_is_taught_to_the_picked_record(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    release = asyncio.Event()
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _answered(app, pilot, task, then=release)
        picker = screen.teach_picker
        await until(pilot, lambda: picker.display and picker.records.has_focus)
        assert picker.border_title == "Teach Q1: which record?"
        assert picker.phrase.value == ASKED
        assert picker.records.option_count == 2  # mini's L1 records: C001, C002
        assert picker.records.highlighted == 0  # C001: what the answer says
        await pilot.press("down", "up")  # ↑/↓ choose; back on C001
        await pilot.press("enter")
        await until(pilot, lambda: not picker.display)
        assert screen.trace.has_focus  # the focus goes back where it was
        [t] = load_teachings(folder)
        assert t.status is TeachingStatus.PENDING
        assert (t.taught.level, t.taught.record_id, t.taught.phrase) == (Level.L1, "C001", ASKED)
        assert (t.taught.run_id, t.taught.question_id, t.taught.answer) == ("test-run", 1, ANSWER)
        assert t.taught.who and t.taught.when
        assert any("teaching #1, pending until accepted (icae tasks teach mini)" in m
                   for m in app.told)  # fmt: skip
        release.set()
        await screen.worker.wait()
    data = task.user_agent[Level.L1].oracle_data
    assert match(ASKED, taught_data(data, folder, Level.L1)).fallback  # pending: no change
    review(folder, {1: TeachingStatus.ACCEPTED})
    chosen = match(ASKED, taught_data(data, folder, Level.L1)).chosen
    assert [c.record_id for c in chosen] == ["C001"]  # the next run answers it


async def test_the_phrase_can_be_trimmed_and_the_record_changed(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _answered(app, pilot, task, answer="words=<n>")
        picker = screen.teach_picker
        await until(pilot, lambda: picker.display and picker.records.has_focus)
        assert picker.records.highlighted == 1  # C002: what this answer says
        await pilot.press("shift+tab")  # to the phrase
        assert picker.phrase.has_focus
        picker.phrase.value = ""
        await pilot.press(*"a verb it never heard of", "up")  # ↑ from the phrase: C001
        await pilot.press("enter")
        await until(pilot, lambda: not picker.display)
        await screen.worker.wait()
    [t] = load_teachings(folder)
    assert (t.taught.record_id, t.taught.phrase) == ("C001", "a verb it never heard of")


async def test_escape_skips_and_nothing_is_written(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _answered(app, pilot, task)
        picker = screen.teach_picker
        await until(pilot, lambda: picker.display and picker.records.has_focus)
        await pilot.press("escape")
        await until(pilot, lambda: not picker.display)
        assert app.screen is screen  # Escape skipped; it did not leave the run
        await screen.worker.wait()
    assert not teachings_path(folder).exists()


async def test_no_offer_when_the_simulated_user_answered_or_the_draft_went_as_it_was(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    fallback = task.user_agent[Level.L1].oracle_data.fallback_response
    async with app.run_test(size=(160, 45)) as pilot:
        # a question the simulated user answers (C001), answered by a human anyway
        screen = await _answered(app, pilot, task, question="How should unknown operations "
                                 "be reported?")  # fmt: skip
        await screen.worker.wait()
        assert not screen.teach_picker.display
        app.pop_screen()
        # assisted: the fallback draft sent unchanged is no human answer
        screen = await _answered(app, pilot, task, mode="assisted", answer=fallback)
        await screen.worker.wait()
        assert not screen.teach_picker.display
    assert not teachings_path(folder).exists()


async def test_a_replay_offers_nothing(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    async with app.run_test(size=(160, 45)) as pilot:
        live = await _answered(app, pilot, task)
        await live.worker.wait()
        events = list(live.handle.recorded())
        app.pop_screen()
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(events)))
        await until(pilot, lambda: screen.finished is not None)
        assert not screen.teach_picker.display


async def test_a_malformed_teachings_file_is_notified_and_the_picker_stays(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    teachings_path(folder).write_text("{oops\n")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _answered(app, pilot, task)
        picker = screen.teach_picker
        await until(pilot, lambda: picker.display and picker.records.has_focus)
        await pilot.press("enter")
        await until(pilot, lambda: any(title == "Not taught" for title, _, _ in app.notified))
        message = next(m for title, m, _ in app.notified if title == "Not taught")
        assert message == f"{teachings_path(folder)}: line 1: not a JSON object"
        assert picker.display  # kept: fix the file and try again, or Escape
        await pilot.press("escape")
        await until(pilot, lambda: not picker.display)
        await screen.worker.wait()
    assert teachings_path(folder).read_text() == "{oops\n"


async def test_a_new_question_keeps_the_box_and_offers_wait_their_turn(app, tmp_path):
    folder = copy_mini(tmp_path)
    task = load_mini(folder)
    second = "And what colour is the logo?"  # a fallback too

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started("human"))
        await run.channel.ask(ASKED)
        await run.channel.ask(second)  # at once: the picker for Q1 is up
        return finish(run)

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(
            app, pilot, RunScreen(LiveSource(FakeRun(task, "human", script), task=task))
        )
        await until(pilot, lambda: screen.awaiting == 1)
        await pilot.press(*ANSWER, "enter")
        picker, box = screen.teach_picker, screen.answer_box
        await until(pilot, lambda: screen.awaiting == 2 and picker.display)
        assert box.has_focus  # answering comes first
        assert picker.offer is not None and picker.offer.question_id == 1
        await pilot.press(*"blue", "enter")
        await until(pilot, lambda: not box.display and picker.records.has_focus)
        assert picker.offer.question_id == 1
        await pilot.press("escape")  # Q1 skipped: Q2's offer is next
        await until(pilot, lambda: picker.offer is not None and picker.offer.question_id == 2)
        assert picker.border_title == "Teach Q2: which record?"
        assert picker.phrase.value == second
        await pilot.press("down", "enter")  # attached to C002
        await until(pilot, lambda: not picker.display)
        await screen.worker.wait()
    [t] = load_teachings(folder)
    assert (t.taught.question_id, t.taught.record_id, t.taught.answer) == (2, "C002", "blue")
