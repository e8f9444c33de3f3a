"""Switching the responder on the run screen, and answering in human and assisted modes.

A fake run with the real desk and clarification channel (no Docker): the screen must call
`set_responder`, show the mode, offer the simulated draft in assisted mode and send it back
unchanged or edited.
"""

from __future__ import annotations

import asyncio

from textual.widgets import Select, Static

from icae_tui.catalog.loader import Catalog
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.events import QuestionAnswered, QuestionAsked, ResponderChanged, RunFinished
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.run_setup import RESPONDERS, RunSetupScreen
from icae_tui.ui.widgets.clarifications import SWITCHES_SHOWN, earlier_switches_text
from icae_tui.users.responders import Reply

from .helpers import (
    Q_COUNT,
    Q_OTHER,
    Q_UNKNOWN,
    FakeRun,
    finish,
    score,
    started,
    text_of,
    until,
)

C001 = "Print error=unknown_op and exit 2."
FALLBACK = "That is not specified; use your judgement."


def kinds(screen: RunScreen) -> list[str]:
    return [kind for kind, _ in screen.clarify.turns]


def last(screen: RunScreen, kind: str) -> str:
    return [text for k, text in screen.clarify.turns if k == kind][-1]


async def drawn_to_the_end(pilot, screen: RunScreen) -> None:
    """The run's worker is done and the screen has drawn the end (the metrics summary)."""
    await screen.worker.wait()
    await until(pilot, lambda: "metrics" in kinds(screen))


async def start(app: IcaeApp, pilot, fake: FakeRun) -> RunScreen:
    screen = RunScreen(LiveSource(fake))
    await app.push_screen(screen)
    await until(pilot, lambda: screen.started is not None)
    return screen


async def test_switching_calls_set_responder_and_shows_the_mode(mini, store):
    release = asyncio.Event()

    async def script(run: FakeRun):
        run.emit(started())
        await release.wait()
        return finish(run)

    fake = FakeRun(mini, "simulated", script)
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, fake)
        assert "responder simulated" in text_of(screen, "#run-header")
        assert screen.active_bindings["m"].binding.description == "Responder ▸ human"

        await pilot.press("m")
        await pilot.pause()
        assert fake.switches == ["human"] and fake.desk.mode == "human"
        assert screen.mode == "human"
        assert "responder human" in text_of(screen, "#run-header")
        assert screen.clarify.border_title.endswith("responder human")
        assert last(screen, "switch") == "⇄ responder → human"
        assert screen.active_bindings["m"].binding.description == "Responder ▸ assisted"

        await pilot.press("m")
        await pilot.press("m")
        await pilot.press("3")
        await pilot.press("3")  # already assisted: nothing to do
        await pilot.press("ctrl+t")
        await pilot.press("2")
        await pilot.pause()
        assert fake.switches == ["human", "assisted", "simulated", "assisted", "simulated", "human"]
        assert kinds(screen).count("switch") == 6
        screen.flush()
        assert [line for line in screen.trace.lines if line.startswith("⇄")][:2] == [
            "⇄ responder → human",
            "⇄ responder → assisted",
        ]

        release.set()
        await screen.worker.wait()
        await until(
            pilot, lambda: screen.finished is not None and "m" not in screen.active_bindings
        )
        await pilot.press("m")  # the run is over: no more switching
        await pilot.pause()
        assert len(fake.switches) == 6
        assert "m" not in screen.active_bindings and "ctrl+t" not in screen.active_bindings


async def test_the_pane_shows_the_latest_switches_and_counts_the_earlier_ones(mini, store):
    release = asyncio.Event()

    async def script(run: FakeRun):
        run.emit(started())
        await run.channel.ask(Q_COUNT)  # answered by the simulated user: a question and answer
        await release.wait()
        return finish(run)

    fake = FakeRun(mini, "simulated", script)
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, fake)
        await until(pilot, lambda: "answer" in kinds(screen))
        pane = screen.clarify
        switches = SWITCHES_SHOWN + 7
        for _ in range(switches):
            await pilot.press("m")
            await pilot.pause()
        assert kinds(screen).count("switch") == switches  # every switch is a turn...
        statics = list(pane.query(Static))
        classes = [set(widget.classes) for widget in statics]
        assert sum("switch" in c and "gone" not in c for c in classes) == SWITCHES_SHOWN
        assert "gone" in classes[0]  # ... the earlier ones counted at the top
        assert str(statics[0].render()) == str(earlier_switches_text(7))
        assert "question" in classes[1] and "answer" in classes[2]  # the rest stays
        assert pane.switches_gone == 7
        screen.flush()
        assert sum(line.startswith("⇄") for line in screen.trace.lines) == switches
        release.set()
        await screen.worker.wait()


def one_question_for_a_human(answers: list[str]):
    """A run's script: started with the human answering, one question, its answer kept."""

    async def script(run: FakeRun):
        run.emit(started("human"))
        answers.append((await run.channel.ask(Q_UNKNOWN)).text)
        return finish(run)

    return script


async def waiting_for_the_human(app: IcaeApp, pilot, fake: FakeRun) -> RunScreen:
    """The run screen of `fake`, once its first question waits for the operator."""
    screen = await start(app, pilot, fake)
    await until(pilot, lambda: screen.awaiting == 1)
    return screen


async def test_escape_leaves_the_answer_box_not_the_run(mini, store):
    answers: list[str] = []
    fake = FakeRun(mini, "human", one_question_for_a_human(answers))
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await waiting_for_the_human(app, pilot, fake)
        box = screen.answer_box
        await pilot.press(*"half")
        await pilot.press("escape")
        await until(pilot, lambda: screen.trace.has_focus)
        assert app.screen is screen  # no "cancel the run?" dialog
        assert box.display and box.text == "half" and screen.awaiting == 1
        assert screen.active_bindings["w"].binding.description == "Answer"
        await pilot.press("w")  # back into the box, the text kept
        await until(pilot, lambda: box.has_focus)
        await pilot.press(*"way", "enter")
        await until(pilot, lambda: screen.awaiting is None)
        await drawn_to_the_end(pilot, screen)
        assert fake.sent == [(1, "halfway")] and answers == ["halfway"]


async def test_switching_to_simulated_hands_the_waiting_question_over(mini, store):
    answers: list[str] = []
    fake = FakeRun(mini, "human", one_question_for_a_human(answers))
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await waiting_for_the_human(app, pilot, fake)
        box = screen.answer_box
        assert box.display and box.has_focus and box.text == ""
        assert "Answer Q1 · human" in str(box.border_title)
        await pilot.press(*"half an ans")
        screen.trace.focus()  # the operator leaves the box, then switches
        await pilot.press("1")
        await until(pilot, lambda: screen.awaiting is None)
        await drawn_to_the_end(pilot, screen)
        assert fake.switches == ["simulated"] and fake.sent == []
        assert answers == [C001]
        assert not box.display
        assert last(screen, "answer").startswith("A1  simulated · C001 · ")
        assert kinds(screen) == ["question", "switch", "answer", "metrics"]


async def test_assisted_prefills_the_draft_and_sends_it(mini, store):
    answers: list[str] = []

    async def script(run: FakeRun):
        run.emit(started("assisted"))
        answers.append((await run.channel.ask(Q_UNKNOWN)).text)
        answers.append((await run.channel.ask(Q_OTHER)).text)
        return finish(run)

    fake = FakeRun(mini, "assisted", script)
    app = IcaeApp(catalog=Catalog(), store=store)
    answered: list[QuestionAnswered] = []
    fake.subscribe(lambda ev: answered.append(ev) if isinstance(ev, QuestionAnswered) else None)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, fake)
        await until(pilot, lambda: screen.awaiting == 1)
        box = screen.answer_box
        assert box.display and box.has_focus
        assert box.text == C001
        assert "Answer Q1 · assisted · draft C001" in str(box.border_title)
        assert kinds(screen) == ["question", "draft"]
        assert last(screen, "draft").startswith("draft Q1  simulated · C001\n" + C001)
        await pilot.press("enter")

        await until(pilot, lambda: screen.awaiting == 2)
        assert box.text == FALLBACK  # a fresh draft for the next question
        assert "draft fallback" in str(box.border_title)
        assert last(screen, "draft").startswith("draft Q2  simulated · fallback")
        await pilot.press("enter")
        await drawn_to_the_end(pilot, screen)

        assert fake.sent == [(1, C001), (2, FALLBACK)]
        assert answers == [C001, FALLBACK]
        assert [(a.responder, a.edited, a.record_ids) for a in answered] == [
            ("assisted", False, ["C001"]),
            ("assisted", False, []),
        ]
        turns = [text for kind, text in screen.clarify.turns if kind == "answer"]
        assert turns[0].startswith("A1  assisted · C001 · ")
        assert turns[1].startswith("A2  assisted · fallback · ")
        assert not box.display


async def test_an_edited_draft_is_sent_as_edited_text(mini, store):
    answers: list[str] = []

    async def script(run: FakeRun):
        run.emit(started("assisted"))
        answers.append((await run.channel.ask(Q_UNKNOWN)).text)
        answers.append((await run.channel.ask(Q_COUNT)).text)
        return finish(run)

    fake = FakeRun(mini, "assisted", script)
    answered: list[QuestionAnswered] = []
    fake.subscribe(lambda ev: answered.append(ev) if isinstance(ev, QuestionAnswered) else None)
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, fake)
        await until(pilot, lambda: screen.awaiting == 1)
        box = screen.answer_box
        await pilot.press(*" Log it too.")  # the cursor waits at the end of the draft
        await pilot.press("enter")

        await until(pilot, lambda: screen.awaiting == 2)
        await pilot.press("ctrl+l")  # clear, restore, clear again, then write one's own
        assert box.text == ""
        await pilot.press("ctrl+r")
        assert box.text == "Print words=<n>."
        await pilot.press("ctrl+l")
        await pilot.press(*"Print the count", "ctrl+j", *"as words=N.")
        await pilot.press("enter")
        await drawn_to_the_end(pilot, screen)

        edited_1 = C001 + " Log it too."
        edited_2 = "Print the count\nas words=N."
        assert fake.sent == [(1, edited_1), (2, edited_2)]
        assert answers == [edited_1, edited_2]
        assert [(a.responder, a.edited, a.text) for a in answered] == [
            ("assisted", True, edited_1),
            ("assisted", True, edited_2),
        ]
        turns = [text for kind, text in screen.clarify.turns if kind == "answer"]
        assert turns[0].startswith("A1  assisted (edited) · typed · ")  # an edit claims no record
        assert turns[1].startswith("A2  assisted (edited) · typed · ")
        assert turns[1].endswith(edited_2)


class LongDrafts:
    """An automatic responder with a long, multi-paragraph answer."""

    name = "simulated"
    text = "\n\n".join(
        f"Paragraph {i}: " + "the tool must behave exactly so. " * 8 for i in range(6)
    )

    async def reply(self, question_id: int, question: str) -> Reply:
        return Reply(self.text, ["C001", "C002"])


async def test_a_long_multiline_draft_is_sent_back_unchanged(mini, store):
    async def script(run: FakeRun):
        run.emit(started("assisted"))
        await run.channel.ask("Tell me everything.")
        return finish(run)

    fake = FakeRun(mini, "assisted", script, auto=LongDrafts())
    answered: list[QuestionAnswered] = []
    fake.subscribe(lambda ev: answered.append(ev) if isinstance(ev, QuestionAnswered) else None)
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, fake)
        await until(pilot, lambda: screen.awaiting == 1)
        box = screen.answer_box
        assert box.text == LongDrafts.text  # newlines kept: nothing flattened
        assert 3 <= box.size.height <= 12 - 2  # bounded; it scrolls inside
        assert screen.clarify.size.height >= 5  # the pane keeps room
        await pilot.press("enter")
        await drawn_to_the_end(pilot, screen)
        assert fake.sent == [(1, LongDrafts.text.strip())]
        assert [(a.responder, a.edited, a.record_ids) for a in answered] == [
            ("assisted", False, ["C001", "C002"])
        ]


async def test_switching_while_a_question_waits_offers_or_withdraws_the_draft(mini, store):
    async def script(run: FakeRun):
        run.emit(started("human"))
        await run.channel.ask(Q_UNKNOWN)
        return finish(run)

    fake = FakeRun(mini, "human", script)
    answered: list[QuestionAnswered] = []
    fake.subscribe(lambda ev: answered.append(ev) if isinstance(ev, QuestionAnswered) else None)
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, fake)
        await until(pilot, lambda: screen.awaiting == 1)
        box = screen.answer_box
        assert box.text == "" and "draft" not in kinds(screen)
        typing = screen.active_bindings["ctrl+t"].binding  # m would be typed: ctrl+t is listed
        assert typing.show and typing.description == "Responder ▸ assisted"

        await pilot.press("ctrl+t")  # human → assisted, typing in the box
        await pilot.pause()
        assert fake.desk.mode == "assisted"
        assert box.display and box.text == C001
        assert "draft" in kinds(screen)

        screen.trace.focus()
        await pilot.pause()
        assert not screen.active_bindings["ctrl+t"].binding.show  # m is listed instead
        assert screen.active_bindings["m"].binding.description == "Responder ▸ simulated"
        await pilot.press("2")  # back to human: the untouched draft goes
        await pilot.pause()
        assert box.display and box.text == "" and box.draft == ""
        assert "Answer Q1 · human" in str(box.border_title)

        box.focus()
        await pilot.press(*"mine", "enter")
        await drawn_to_the_end(pilot, screen)
        assert fake.switches == ["assisted", "human"]
        assert [(a.responder, a.text) for a in answered] == [("human", "mine")]
        assert last(screen, "answer").startswith("A1  human · typed · ")


async def test_finished_run_shows_the_interaction_metrics(mini, store):
    async def script(run: FakeRun):
        run.emit(started(task_records=["C001", "C002"]))
        await run.channel.ask(Q_UNKNOWN)
        await run.channel.ask(Q_OTHER)
        return finish(run)

    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await start(app, pilot, FakeRun(mini, "simulated", script))
        await drawn_to_the_end(pilot, screen)
        title = screen.clarify.border_title
        assert title == "Clarifications · 2/3 turns · coverage 50% · fallback 50%"
        summary = last(screen, "metrics")
        assert "never asked C002" in summary and "covered C001" in summary
        assert "by responder: simulated 2" in summary
        assert "2/3 turns · coverage 50% · fallback 50%" in text_of(screen, "#status")
        assert "\\x0a" not in summary and "\nby responder" in summary


async def test_a_replay_shows_switches_and_drafts(store):
    events = [
        started(task_records=["C001"]),
        ResponderChanged(mode="assisted"),
        QuestionAsked(
            question_id=1,
            text="Errors?",
            remaining_before=3,
            mode="assisted",
            draft="Print error=x.",
            draft_records=["C001"],
        ),  # fmt: skip
        QuestionAnswered(
            question_id=1,
            text="Print error=y.",
            record_ids=["C001"],
            responder="assisted",
            edited=True,
            latency_s=4.25,
        ),  # fmt: skip
        RunFinished(status="completed", score=score(1, 1, 1.0)),
    ]
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = RunScreen(ReplaySource(events))
        await app.push_screen(screen)
        await pilot.pause()
        assert kinds(screen) == ["switch", "question", "draft", "answer", "metrics"]
        assert last(screen, "answer").startswith("A1  assisted (edited) · C001 · 4.2s")
        assert "responder assisted" in text_of(screen, "#run-header")
        assert not screen.answer_box.display
        assert "m" not in screen.active_bindings  # nothing to switch in a replay


async def test_run_setup_offers_assisted(fixture_catalog, store):
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        setup = RunSetupScreen(fixture_catalog.tasks["mini"])
        await app.push_screen(setup)
        await pilot.pause()
        assert [value for value, _ in RESPONDERS] == ["simulated", "human", "assisted"]
        setup.query_one("#responder", Select).value = "assisted"  # refused if not offered
        config = setup.config()
        assert config is not None and config.responder == "assisted"
