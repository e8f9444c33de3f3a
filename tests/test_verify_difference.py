"""Issue 38, item 8a: `icae tasks verify`/`check` say where a stored output and the oracle's
first differ (a cut of both at 60 characters showed two equal prefixes)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import SideRun
from icae_tui.domain.task import StderrPolicy
from icae_tui.evaluation import verify
from icae_tui.evaluation.verify import first_difference

HEAD = "line of the report, the same on both sides\n" * 3  # 129 characters


def _side(stdout: str) -> SideOutcome:
    return SideOutcome(SideRun(exit_code=0, stdout=stdout, stderr=""), stdout.encode())


def test_a_check_of_long_outputs_shows_where_they_first_differ(monkeypatch):
    stored, oracle = HEAD + "total: 12\n" + "x" * 200, HEAD + "total: 13\n" + "x" * 200
    ref = SimpleNamespace(id="public/t#0", case=SimpleNamespace(expected_output=stored))

    async def runs(*_args, **_kwargs):
        yield ref, (_side(oracle), _side(oracle))

    monkeypatch.setattr(verify, "oracle_runs", runs)
    cases = SimpleNamespace(stderr=StderrPolicy.COMPARE)
    task = SimpleNamespace(spec=SimpleNamespace(oracle=object(), sanitizer=None, cases=cases))

    async def checks():
        return [c async for c in verify.verify_task(None, task, "img", run_id="r")]  # type: ignore[arg-type]

    (check,) = asyncio.run(checks())
    assert not check.matches_stored and check.deterministic
    at = len(HEAD) + len("total: 1")
    assert check.detail == (
        f"stored 339 characters, oracle 339, first differ at character {at}: "
        f"stored …{stored[at - 30 : at + 30]!r}…, oracle …{oracle[at - 30 : at + 30]!r}…"
    )
    assert "total: 12" in check.detail and "total: 13" in check.detail  # the difference shown


def test_a_prefix_says_so_with_both_lengths():
    stored, oracle = HEAD, HEAD + "one more line\n"
    assert first_difference(stored, oracle) == (
        "stored 129 characters, oracle 143, the stored output is a prefix of the other, which "
        f"goes on at character 129: stored …{HEAD[99:]!r}, oracle …{oracle[99:]!r}"
    )
    assert "the oracle output is a prefix" in first_difference(oracle, stored)


def test_short_outputs_are_shown_whole_and_a_difference_at_the_start_has_no_leading_cut():
    assert first_difference("Strasse\n", "STRASSE\n") == "stored 'Strasse\\n', oracle 'STRASSE\\n'"
    text = first_difference("a" + HEAD, "b" + HEAD)
    assert text.startswith("stored 130 characters, oracle 130, first differ at character 0: "
                           f"stored {('a' + HEAD)[:30]!r}…")  # fmt: skip


def test_verify_judges_stderr_as_the_tasks_policy_says(monkeypatch):
    """Two oracle runs that differ only in stderr are sound where stderr is not judged."""
    ref = SimpleNamespace(id="public/t#0", case=SimpleNamespace(expected_output="ok\n"))

    def side(stderr: str) -> SideOutcome:
        run = SideRun(exit_code=0, stdout="ok\n", stderr=stderr, stderr_sha256=stderr or "-")
        return SideOutcome(run, b"ok\n")

    async def runs(*_args, **_kwargs):
        yield ref, (side("took 1 ms"), side("took 2 ms"))

    monkeypatch.setattr(verify, "oracle_runs", runs)

    def checked(policy: StderrPolicy) -> bool:
        cases = SimpleNamespace(stderr=policy)
        task = SimpleNamespace(spec=SimpleNamespace(oracle=object(), sanitizer=None, cases=cases))

        async def checks():
            return [c async for c in verify.verify_task(None, task, "img", run_id="r")]  # type: ignore[arg-type]

        (check,) = asyncio.run(checks())
        return check.deterministic

    assert checked(StderrPolicy.IGNORE) and not checked(StderrPolicy.COMPARE)
