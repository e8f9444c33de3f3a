"""The operator teaching the simulated user: the teachings file (stored pending with who,
when and which run; accepted or dropped; never rewritten), what the matcher does with it
(an accepted phrase answers its question from the record; a pending or dropped one changes
nothing), when a teaching is offered, and a malformed file named by file and line — in a
run too. Every test works on a copy of the fixture task."""

from __future__ import annotations

import json
import threading

import pytest

from icae_tui.domain.events import Progress, QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.domain.states import AnsweredBy, RunStatus
from icae_tui.domain.task import Level
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.users.matching import match
from icae_tui.users.responders import SimulatedUser
from icae_tui.users.teaching import (
    OfferWatch,
    TaughtLevel,
    TeachOffer,
    load_taught,
    record_choices,
    taught_data,
    taught_match,
    teachable,
    with_taught,
)
from icae_tui.users.teachings import (
    TeachingsError,
    TeachingStatus,
    UnknownTeaching,
    load_teachings,
    review,
    teach,
    teachings_path,
)
from tests.task_copies import copy_mini, load_mini

# the mini task's L1 has C001 (unknown operations) and C002 (the word count); this asks
# about C001 in words none of its phrases use, so the simulated user falls back
ASKED = "What does the tool say for a verb it has never heard of?"
STAMP = "2026-01-02T03:04:05+00:00"


def _teach(folder, phrase: str = ASKED, record: str = "C001", level: Level = Level.L1):
    return teach(folder, level=level, record_id=record, phrase=phrase, run_id="run-1",
                 question_id=3, answer="error=unknown_op, exit 2", who="alice",
                 now=lambda: STAMP)  # fmt: skip


def test_a_teaching_is_stored_pending_with_who_when_and_which_run(tmp_path):
    folder = copy_mini(tmp_path)
    teaching, new = _teach(folder)
    assert new and teaching.id == 1 and teaching.status is TeachingStatus.PENDING
    [loaded] = load_teachings(folder)
    assert loaded == teaching
    t = loaded.taught
    assert (t.level, t.record_id, t.phrase) == (Level.L1, "C001", ASKED)
    assert (t.who, t.when, t.run_id, t.question_id) == ("alice", STAMP, "run-1", 3)
    assert teachings_path(folder) == folder / "user_agent" / "teachings.jsonl"
    assert load_mini(folder).user_agent[Level.L1]  # the task still loads beside the file


def test_the_same_phrase_twice_is_one_teaching_and_ids_go_up(tmp_path):
    folder = copy_mini(tmp_path)
    _teach(folder)
    again, new = _teach(
        folder, phrase="  what does the TOOL say for a verb it has never heard of? "
    )
    assert not new and again.id == 1
    other, new = _teach(folder, phrase="and for an empty op?")
    assert new and other.id == 2
    assert [t.id for t in load_teachings(folder)] == [1, 2]


def test_accept_and_drop_are_appended_and_the_last_decision_wins(tmp_path):
    folder = copy_mini(tmp_path)
    _teach(folder)
    _teach(folder, phrase="second")
    before = teachings_path(folder).read_text()
    done = review(folder, {1: TeachingStatus.ACCEPTED, 2: TeachingStatus.DROPPED},
                  who="bob", now=lambda: STAMP)  # fmt: skip
    assert [(t.id, t.status, t.reviewed_by) for t in done] == [
        (1, TeachingStatus.ACCEPTED, "bob"), (2, TeachingStatus.DROPPED, "bob"),
    ]  # fmt: skip
    text = teachings_path(folder).read_text()
    assert text.startswith(before)  # appended: the file is its own audit trail
    assert [json.loads(line)["kind"] for line in text.splitlines()] == [
        "taught", "taught", "reviewed", "reviewed",
    ]  # fmt: skip
    review(folder, {1: TeachingStatus.DROPPED}, who="carol")
    assert [t.status for t in load_teachings(folder)] == [TeachingStatus.DROPPED] * 2
    lines = len(teachings_path(folder).read_text().splitlines())
    review(folder, {1: TeachingStatus.DROPPED})  # already so: nothing written
    assert len(teachings_path(folder).read_text().splitlines()) == lines
    # a dropped phrase may be taught again, as a new teaching
    assert _teach(folder)[1]


def test_a_review_naming_an_unknown_teaching_changes_nothing(tmp_path):
    folder = copy_mini(tmp_path)
    with pytest.raises(UnknownTeaching, match="no teachings"):
        review(folder, {1: TeachingStatus.ACCEPTED})
    _teach(folder)
    before = teachings_path(folder).read_text()
    with pytest.raises(UnknownTeaching, match="#7"):
        review(folder, {1: TeachingStatus.ACCEPTED, 7: TeachingStatus.ACCEPTED})
    assert teachings_path(folder).read_text() == before


def test_only_an_accepted_teaching_changes_the_answer(tmp_path):
    folder = copy_mini(tmp_path)
    data = load_mini(folder).user_agent[Level.L1].oracle_data
    assert match(ASKED, data).fallback
    _teach(folder)
    pending = taught_data(data, folder, Level.L1)
    assert pending is data and match(ASKED, pending).fallback  # pending: nothing changes
    review(folder, {1: TeachingStatus.ACCEPTED})
    taught = taught_data(data, folder, Level.L1)
    assert [c.record_id for c in match(ASKED, taught).chosen] == ["C001"]
    assert taught.hidden_constraints[0].trigger_keywords[-1] == ASKED
    assert taught_data(data, folder, Level.L2) is data  # taught at L1 only
    review(folder, {1: TeachingStatus.DROPPED})
    assert match(ASKED, taught_data(data, folder, Level.L1)).fallback


def test_a_teaching_for_a_record_the_level_lacks_adds_nothing(tmp_path):
    folder = copy_mini(tmp_path)
    data = load_mini(folder).user_agent[Level.L1].oracle_data
    _teach(folder, record="C404")
    _teach(folder, phrase="how is the word count formatted", record="C002")  # it has that one
    review(folder, {1: TeachingStatus.ACCEPTED, 2: TeachingStatus.ACCEPTED})
    assert with_taught(data, load_teachings(folder), Level.L1) is data


def _accepted(folder, *taught: tuple[str, str]) -> TaughtLevel:
    """The mini L1 records, and the same with these (record, phrase) teachings accepted."""
    for record, phrase in taught:
        _teach(folder, phrase=phrase, record=record)
    review(folder, dict.fromkeys(range(1, len(taught) + 1), TeachingStatus.ACCEPTED))
    own = load_mini(folder).user_agent[Level.L1].oracle_data
    return TaughtLevel(own, taught_data(own, folder, Level.L1))


def _ids(question: str, level: TaughtLevel) -> list[str]:
    return [c.record_id for c in taught_match(question, level).chosen]


def test_a_taught_phrase_answers_its_question_and_close_rewordings_only(tmp_path):
    level = _accepted(copy_mini(tmp_path), ("C001", ASKED))
    assert _ids(ASKED, level) == ["C001"]
    assert _ids("which verb has the tool never heard of", level) == ["C001"]  # a rewording
    # loosely related: the taught phrase alone would reveal C001 (below the bar: it does not)
    loose = "does the tool say anything for a verb"
    assert [c.record_id for c in match(loose, level.taught).chosen] == ["C001"]
    assert _ids(loose, level) == []
    assert _ids("what does count print", level) == ["C002"]  # the records' own, as before


def test_teaching_never_takes_an_answer_away(tmp_path):
    # the same words taught to C002 make a tie with C001: alone the taught records fall back
    question = "How should unknown operations be reported?"
    level = _accepted(copy_mini(tmp_path), ("C002", question))
    assert match(question, level.taught).fallback
    assert _ids(question, level) == ["C001"]


async def test_the_simulated_user_answers_from_the_taught_records(tmp_path):
    level = _accepted(copy_mini(tmp_path), ("C001", ASKED))
    reply = await SimulatedUser(level.own, taught=level.taught).reply(1, ASKED)
    assert reply.record_ids == ["C001"] and not reply.fallback
    assert (await SimulatedUser(level.own).reply(1, ASKED)).fallback  # untaught


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not a JSON object"),
        ("[1, 2]", "not a JSON object"),
        ('{"kind": "forgot", "id": 1}', "field 'kind'"),
        ('{"kind": "taught", "id": 2, "who": "a", "when": "b", "level": "L9", "record_id": "C1",'
         ' "phrase": "p"}', "field 'level'"),
        ('{"kind": "reviewed", "id": 5, "who": "a", "when": "b", "status": "accepted"}',
         "reviews teaching #5, not taught before"),
        ('{"kind": "reviewed", "id": 1, "who": "a", "when": "b", "status": "pending"}',
         "field 'status'"),
    ],
)  # fmt: skip
def test_a_malformed_file_is_named_with_its_line(tmp_path, line, says):
    folder = copy_mini(tmp_path)
    _teach(folder)
    with teachings_path(folder).open("a") as f:
        f.write("\n" + line + "\n")  # line 3: a blank line is no line
    with pytest.raises(TeachingsError) as err:
        load_teachings(folder)
    assert str(err.value).startswith(f"{teachings_path(folder)}: line 3: ")
    assert says in str(err.value)
    assert err.value.line == 3
    with pytest.raises(TeachingsError, match="line 3"):  # nor is anything added to it
        _teach(folder, phrase="another")


def test_a_last_line_without_its_newline_is_kept_whole(tmp_path):
    folder = copy_mini(tmp_path)
    _teach(folder)
    path = teachings_path(folder)
    path.write_text(path.read_text().rstrip("\n"))  # as another tool may leave it
    _teach(folder, phrase="another")
    assert [t.id for t in load_teachings(folder)] == [1, 2]


def _asked(fallback: bool = True) -> QuestionAsked:
    return QuestionAsked(question_id=3, text=ASKED, remaining_before=2, draft_fallback=fallback)


@pytest.mark.parametrize(
    ("answered", "fallback", "offered"),
    [
        (QuestionAnswered(question_id=3, text="exit 2", responder=AnsweredBy.HUMAN), True, True),
        (QuestionAnswered(question_id=3, text="exit 2", responder=AnsweredBy.ASSISTED,
                          edited=True), True, True),
        # the fallback draft sent as it was: no human answer
        (QuestionAnswered(question_id=3, text="not specified", responder=AnsweredBy.ASSISTED),
         True, False),
        # the simulated user answered it: nothing to teach
        (QuestionAnswered(question_id=3, text="exit 2", responder=AnsweredBy.HUMAN), False, False),
        (QuestionAnswered(question_id=3, text="fallback", fallback=True), True, False),
        (QuestionAnswered(question_id=3, text="  ", responder=AnsweredBy.HUMAN), True, False),
        (QuestionAnswered(question_id=3, text="spent", over_budget=True,
                          responder=AnsweredBy.BUDGET), True, False),
    ],
)  # fmt: skip
def test_a_teaching_is_offered_after_a_human_answer_to_a_fallback(answered, fallback, offered):
    assert teachable(_asked(fallback), answered) is offered
    watch = OfferWatch()
    started = RunStarted(run_id="run-9", task_id="mini", task_title="", agent="scripted:good",
                         level="L1", responder="human", budget=3, prd="")  # fmt: skip
    assert watch.observe(started) is None and watch.observe(_asked(fallback)) is None
    offer = watch.observe(answered)
    assert (offer is not None) is offered
    if offer is not None:
        assert offer == TeachOffer("run-9", Level.L1, 3, ASKED, answered.text)


def test_the_record_the_answer_came_from_is_suggested(mini_data):
    offer = TeachOffer("r", Level.L1, 1, "what is printed then?", "it prints words=<n>")
    choices, best = record_choices(mini_data, offer)
    assert [c.record_id for c in choices] == ["C001", "C002"]  # the level's records, in order
    assert choices[best].record_id == "C002"


async def test_a_run_answers_from_an_accepted_teaching(tmp_path, store):
    folder = copy_mini(tmp_path)
    _teach(folder)
    review(folder, {1: TeachingStatus.ACCEPTED})
    run = Run(RunConfig(task=load_mini(folder), agent="scripted:good", pace_s=0), store)
    reply = await run.desk.auto.reply(1, ASKED)
    assert reply.record_ids == ["C001"] and not reply.fallback


async def test_a_run_with_a_malformed_teachings_file_fails_naming_it(tmp_path, store):
    folder = copy_mini(tmp_path)
    teachings_path(folder).write_text('{"kind": "taught"}\n')
    run = Run(RunConfig(task=load_mini(folder), agent="scripted:good", pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.FAILED
    assert f"{teachings_path(folder)}: line 1: field 'id'" in outcome.error


def test_two_consoles_teaching_at_once_lose_nothing(tmp_path):
    folder = copy_mini(tmp_path)
    start = threading.Barrier(2)

    def console(name: str) -> None:
        start.wait()
        for i in range(20):
            teach(folder, level=Level.L1, record_id="C001", phrase=f"{name} {i}", who=name)

    threads = [threading.Thread(target=console, args=(n,)) for n in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    teachings = load_teachings(folder)
    assert sorted(t.id for t in teachings) == list(range(1, 41))  # each id once, none lost
    assert {t.taught.phrase for t in teachings} == {
        f"{n} {i}" for n in ("alice", "bob") for i in range(20)
    }


async def test_a_run_says_which_teachings_it_answers_with(tmp_path, store):
    folder = copy_mini(tmp_path)
    _teach(folder)  # 1: accepted, used
    _teach(folder, phrase="at L2", level=Level.L2)  # 2: another level
    _teach(folder, phrase="gone", record="C404")  # 3: no such record
    _teach(folder, phrase="pending")  # 4: not accepted
    review(folder, dict.fromkeys([1, 2, 3], TeachingStatus.ACCEPTED))
    data = load_mini(folder).user_agent[Level.L1].oracle_data
    taught, used = load_taught(data, folder, Level.L1)
    assert [t.id for t in used] == [1] and taught == taught_data(data, folder, Level.L1)
    # an agent that cannot be made: the run starts, says so, and fails with no engine needed
    run = Run(RunConfig(task=load_mini(folder), agent="scripted:nosuch", pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status == RunStatus.FAILED
    notes = [e.message for e in store.events(run.run_id) if isinstance(e, Progress)]
    assert "simulated user: 1 accepted teaching in use (teachings.jsonl #1 → C001)" in notes
