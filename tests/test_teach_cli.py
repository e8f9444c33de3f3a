"""`icae tasks teach TASK`: the review list of a task's teachings — listed, accepted or
dropped by id (all or none), asked one by one at a terminal, a malformed file named by file
and line with exit 1, bad usage exit 2. On copies of the fixture task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from icae_tui.cli import main
from icae_tui.cli.teach import Io, run
from icae_tui.domain.task import Level
from icae_tui.users.teachings import TeachingStatus, load_teachings, teach, teachings_path
from tests.task_copies import copy_mini, load_mini


@pytest.fixture
def folder(tmp_path):
    """A copy of mini with two pending teachings (#1 to C001, #2 to C002) and one (#3) to a
    record its L1 does not have."""
    folder = copy_mini(tmp_path)
    for record, phrase in (("C001", "what about a verb it never heard of"),
                           ("C002", "how many words, shown how"), ("C404", "gone")):  # fmt: skip
        teach(folder, level=Level.L1, record_id=record, phrase=phrase, run_id="run-7",
              question_id=2, answer="exit 2", who="alice", now=lambda: "2026-01-01T00:00:00Z")  # fmt: skip
    return folder


def icae(folder, *argv: str) -> int:
    return main(["--tasks", str(folder.parent), "tasks", "teach", *argv])


def statuses(folder) -> list[TeachingStatus]:
    return [t.status for t in load_teachings(folder)]


def test_the_list_shows_each_teaching_with_who_when_and_which_run(folder, capsys):
    assert icae(folder, "mini") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("mini: 3 pending, 0 accepted, 0 dropped (")
    assert "#1   pending  L1     C001       'what about a verb it never heard of'" in out
    assert "taught by alice at 2026-01-01T00:00:00Z, run run-7 Q2" in out
    assert "answered: 'exit 2'" in out
    assert "the level L1 has no record C404" in out
    assert "decide with: icae tasks teach mini --accept" in out  # not a terminal: no asking
    assert statuses(folder) == [TeachingStatus.PENDING] * 3


def test_accept_and_drop_by_id(folder, capsys):
    assert icae(folder, "mini", "--accept", "1", "--drop", "#2,3") == 0
    out = capsys.readouterr().out
    assert "accepted #1: L1 C001 ← 'what about a verb it never heard of'" in out
    assert "dropped #2: L1 C002" in out
    assert statuses(folder) == [TeachingStatus.ACCEPTED, TeachingStatus.DROPPED,
                                TeachingStatus.DROPPED]  # fmt: skip
    assert icae(folder, "mini") == 0
    listed = capsys.readouterr().out
    assert "mini: 0 pending, 1 accepted, 2 dropped" in listed
    assert "accepted by " in listed


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["mini", "--accept", "9"], "no teaching #9"),
        (["mini", "--accept", "1", "--drop", "1"], "accepted and dropped at once: #1"),
        (["mini", "--accept", "1,3"], "#3 cannot be accepted: the level L1 has no record C404"),
        (["mini", "--accept", "one"], "not a teaching id: 'one'"),
        (["nosuch"], "no such task: nosuch"),
        ([], "tasks teach takes one task"),
    ],
)
def test_bad_usage_changes_nothing_and_exits_2(folder, capsys, argv, says):
    before = teachings_path(folder).read_text()
    assert icae(folder, *argv) == 2
    assert says in capsys.readouterr().err
    assert teachings_path(folder).read_text() == before


def test_a_malformed_file_is_named_and_exits_1(folder, capsys):
    with teachings_path(folder).open("a") as f:
        f.write("{oops\n")
    assert icae(folder, "mini") == 1
    assert f"error: {teachings_path(folder)}: line 4: not a JSON object" in capsys.readouterr().err
    assert icae(folder, "mini", "--accept", "1") == 1


def test_no_teachings_yet(tmp_path, capsys):
    folder = copy_mini(tmp_path)
    assert icae(folder, "mini") == 0
    assert capsys.readouterr().out.startswith("mini: no teachings (")


def _io(answers: list[str], out: list[str]) -> Io:
    said: Iterator[str] = iter(answers)

    def ask(prompt: str) -> str:
        out.append(prompt)
        try:
            return next(said)
        except StopIteration:
            raise EOFError from None

    return Io(out=out.append, err=out.append, ask=ask)


def test_at_a_terminal_each_pending_one_is_asked_and_written_at_once(folder):
    out: list[str] = []
    # #1: "x" is no answer, then accept; #2 drop; #3 accept refused (no record), so it stays
    assert run(load_mini(folder), set(), set(), _io(["x", "a", "d", "a"], out)) == 0
    assert "  a, d, s or q" in out
    assert any("not accepted: the level L1 has no record C404" in line for line in out)
    assert statuses(folder) == [TeachingStatus.ACCEPTED, TeachingStatus.DROPPED,
                                TeachingStatus.PENDING]  # fmt: skip


def test_quitting_keeps_what_was_decided(folder):
    out: list[str] = []
    assert run(load_mini(folder), set(), set(), _io(["d", "q"], out)) == 0
    assert statuses(folder) == [TeachingStatus.DROPPED, TeachingStatus.PENDING,
                                TeachingStatus.PENDING]  # fmt: skip
    assert run(load_mini(folder), set(), set(), _io(["s"], [])) == 0  # end of input: stops
    assert statuses(folder)[1:] == [TeachingStatus.PENDING] * 2
