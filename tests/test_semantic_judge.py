"""The SM judge (icae_tui/evaluation/semantic.py): asked only for pairs that passed SP and
failed EM, its answers cached by content, its failures "not measured" (never 0 or 1), and
SM's rate over the measured cases with its agreement with EM and FM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from icae_tui.domain.results import CaseResult, Score, SideRun, Split, Verdict
from icae_tui.evaluation.semantic import (
    SM,
    JudgeCache,
    SemanticJudge,
    judge_failures,
    verdict_of,
    with_sm,
)


def _reply(content: str, model: str = "judge-1") -> dict[str, Any]:
    return {"model": model, "choices": [{"message": {"role": "assistant", "content": content}}]}


class ScriptedChat:
    """Plays the judge: `answers` in turn (a dict is sent as JSON, an exception raised)."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return _reply(answer if isinstance(answer, str) else json.dumps(answer))


def _side(stdout: str) -> SideRun:
    return SideRun(exit_code=0, stdout=stdout, stderr="")


def _result(case: str, *, sp: bool, em: bool, fm: bool = False, oracle="a", delivery="b",
            split=Split.HIDDEN, verdict=Verdict.WRONG_ANSWER) -> CaseResult:  # fmt: skip
    metrics = {"exec": 1.0, "sp": float(sp), "em": float(em), "fm": float(fm)}
    return CaseResult(
        case_id=case, split=split, pattern="p", command=f"tool {case}", verdict=verdict,
        reason="", metrics=metrics, passed=em, oracle=_side(oracle), delivery=_side(delivery),
    )  # fmt: skip


async def test_only_pairs_past_sp_and_short_of_em_are_asked(tmp_path):
    chat = ScriptedChat({"same": True, "why": "same numbers, other spacing"})
    judge = SemanticJudge(chat, "judge-1", JudgeCache(tmp_path / "cache.db"))
    no_sp = await judge.judge(_result("a", sp=False, em=False))
    exact = await judge.judge(_result("b", sp=True, em=True, verdict=Verdict.ACCEPTED))
    asked = await judge.judge(_result("c", sp=True, em=False, oracle="1, 2", delivery="1,2"))
    assert (no_sp.metrics[SM], exact.metrics[SM], asked.metrics[SM]) == (0.0, 1.0, 1.0)
    assert len(chat.bodies) == 1 and judge.asked == 1
    body = chat.bodies[0]
    assert body["temperature"] == 0 and body["model"] == "judge-1"
    assert "1, 2" in body["messages"][1]["content"] and "tool c" in body["messages"][1]["content"]
    assert asked.notes[SM] == "judge-1: same numbers, other spacing"
    assert asked.passed is False  # SM never changes the verdict


async def test_a_re_score_of_the_same_pairs_asks_nothing(tmp_path):
    cache_path = tmp_path / "cache.db"
    first = SemanticJudge(ScriptedChat({"same": False, "why": "a value differs"}), "m",
                          JudgeCache(cache_path))  # fmt: skip
    before = await first.judge(_result("c", sp=True, em=False))
    again = SemanticJudge(ScriptedChat(), "m", JudgeCache(cache_path))  # no answer to give
    after = await again.judge(_result("c", sp=True, em=False))
    assert before.metrics[SM] == after.metrics[SM] == 0.0 and again.asked == 0
    assert after.notes[SM].endswith("(cached): a value differs")
    other_model = SemanticJudge(ScriptedChat({"same": True}), "m2", JudgeCache(cache_path))
    assert (await other_model.judge(_result("c", sp=True, em=False))).metrics[SM] == 1.0
    assert other_model.asked == 1  # the model is part of what was asked


@pytest.mark.parametrize(
    "answer", [ConnectionError("endpoint down"), "I think they are similar", {"same": "yes"}]
)
async def test_a_pair_the_judge_cannot_say_is_not_measured(tmp_path, answer):
    judge = SemanticJudge(ScriptedChat(answer), "m", JudgeCache(tmp_path / "c.db"))
    result = await judge.judge(_result("c", sp=True, em=False))
    assert SM not in result.metrics and SM not in result.notes
    assert len(judge.failures) == 1
    assert "1 case not measured" in judge_failures(judge.failures)


def test_sm_rate_is_over_the_measured_cases_only():
    measured = [
        _result("a", sp=False, em=False).model_copy(update={"metrics": {"sp": 0.0, SM: 0.0}}),
        _result("b", sp=True, em=True).model_copy(
            update={"metrics": {"sp": 1.0, "em": 1.0, "fm": 1.0, SM: 1.0}}
        ),
        _result("c", sp=True, em=False, fm=True).model_copy(
            update={"metrics": {"sp": 1.0, "em": 0.0, "fm": 1.0, SM: 1.0}}
        ),
        _result("d", sp=True, em=False, fm=True).model_copy(
            update={"metrics": {"sp": 1.0, "em": 0.0, "fm": 1.0, SM: 0.0}}
        ),
    ]
    unmeasured = _result("e", sp=True, em=False)
    score = with_sm(Score(), [*measured, unmeasured])
    assert score.rates[SM] == 0.5 and score.semantic.measured == 4
    # where SP held (b, c, d): SM agrees with EM on b and d, with FM on b and c
    assert score.semantic.agrees_em == round(2 / 3, 4)
    assert score.semantic.agrees_fm == round(2 / 3, 4)
    assert [m.name for m in score.metrics] == [SM]


def test_no_measured_case_leaves_sm_not_measured():
    score = with_sm(Score(rates={"em": 0.5}), [_result("e", sp=True, em=False)])
    assert SM not in score.rates and score.metrics == []


@pytest.mark.parametrize(
    ("content", "verdict"),
    [
        ('{"same": true, "why": "ok"}', (True, "ok")),
        ('Sure.\n```json\n{"same": false, "why": "no"}\n```', (False, "no")),
        ('{"same": 1}', None),
        ("no json here", None),
    ],
)
def test_a_verdict_is_read_only_from_a_json_object_with_a_boolean(content, verdict):
    assert verdict_of(_reply(content)) == verdict
