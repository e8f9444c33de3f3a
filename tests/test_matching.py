"""The matcher's results on small levels and on 100 records. Its speed is a figure, not a
test (a wall-clock bound fails under coverage or load): `python benchmarks/matching.py`."""

import random

from icae_tui.domain.task import OracleData
from icae_tui.users.matching import match, prepare

DATA = OracleData.model_validate(
    {
        "hidden_constraints": [
            {
                "constraint_id": "C001",
                "trigger_keywords": [
                    "how should invalid versions be reported",
                    "what error format should I use",
                ],
                "oracle_response": "err",
            },
            {
                "constraint_id": "C002",
                "trigger_keywords": [
                    "how are prerelease versions ordered",
                    "prerelease precedence rules",
                ],
                "oracle_response": "pre",
            },
        ],
        "context_pointers": [{"vague_reference": "like npm does", "actual_meaning": "caret"}],
        "fallback_response": "fb",
    }
)


def test_matches_records_and_pointers():
    assert [c.record_id for c in match("What error format should I use?", DATA).chosen] == ["C001"]
    assert [c.record_id for c in match("What do you mean by 'like npm does'?", DATA).chosen] == [
        "CP001"
    ]


def test_unrelated_question_falls_back_deterministically():
    first = match("What colour should the logo be?", DATA)
    assert first.fallback
    assert first == match("What colour should the logo be?", DATA)
    assert first.runner_up is not None


def test_hundred_records_the_asked_one_wins():
    big = OracleData.model_validate(
        {
            "hidden_constraints": [
                {
                    "constraint_id": f"C{i:03d}",
                    "trigger_keywords": [
                        f"question number {i} about feature {i * 7}",
                        f"how does feature {i} behave on empty input",
                    ],
                    "oracle_response": str(i),
                }
                for i in range(100)
            ],
            "fallback_response": "fb",
        }
    )
    result = match("how does feature 42 behave on empty input", big)
    assert [c.record_id for c in result.chosen] == ["C042"]
    assert result.chosen[0].score == 100.0


def test_hundred_records_of_six_phrases_same_answers_from_a_fresh_index():
    rng = random.Random(7)
    stems = [
        "release",
        "name",
        "sort",
        "parse",
        "folder",
        "range",
        "file",
        "match",
        "write",
        "link",
    ]
    words = [p + s for p in ("pre", "re", "un", "over", "sub", "de") for s in stems]
    words += ["version", "error", "output", "empty", "hidden", "order", "print", "exit", "code"]

    def phrase() -> str:
        return "how should " + " ".join(rng.choice(words) for _ in range(rng.randint(4, 8)))

    big = OracleData.model_validate(
        {
            "hidden_constraints": [
                {
                    "constraint_id": f"C{i:03d}",
                    "trigger_keywords": [phrase() for _ in range(6)],
                    "oracle_response": str(i),
                }
                for i in range(100)
            ],
            "fallback_response": "fb",
        }
    )
    questions = [f"{phrase()}, and {phrase()}? {phrase()}" for _ in range(20)]
    prepare(big)
    first = [match(question, big) for question in questions]
    # three phrases of a deliberately confusable vocabulary: some reach one record clearly,
    # the others tie with a second one and fall back (a near tie is not revealed)
    assert any(r.chosen for r in first) and any(not r.chosen for r in first)
    # a pure function of the question and the records: another index, the same answers
    fresh = OracleData.model_validate(big.model_dump())
    assert [match(question, fresh) for question in questions] == first
