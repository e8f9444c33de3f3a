"""Issue 38 item 13: a request for a feature's public test cases by name or number is served
from the record of exactly that feature (never a neighbour: `feature 12` is not `feature 1`),
and falls back when no record names it; ICAE's named protocol records (`FULL_SCOPE`,
`EXECUTION_CONTRACT`, `PUBLIC_TEST_CASES_AUTHORITY`) are generic, not task constraints, in
the coverage metric. Records of ICAE's shape (tests/fixtures/tasks/mini/user_agent/*.json)."""

from __future__ import annotations

from typing import Any

import pytest

from icae_tui.domain.events import QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import OracleData
from icae_tui.users.matching import candidates, is_generic, match
from icae_tui.users.metrics import interaction_metrics
from icae_tui.users.public_cases import with_public_cases
from icae_tui.users.responders import grounded_reply

FALLBACK = "That is not specified; use your best judgement."

TASK: list[dict[str, Any]] = [
    {"constraint_id": "C001", "trigger_keywords": ["what happens when a request times out",
                                                   "timeout behaviour"],
     "oracle_response": "A request that takes longer than 5 s prints error=timeout, exits 3."},
    {"constraint_id": "C002", "trigger_keywords": ["how many retries", "retry count"],
     "oracle_response": "Retry at most 3 times, with 1 s between attempts."},
    {"constraint_id": "C003", "trigger_keywords": ["how is the word count formatted"],
     "oracle_response": "Print words=<n>."},
]  # fmt: skip

GENERIC: list[dict[str, Any]] = [
    {"constraint_id": "ARCH001", "trigger_keywords": ["how should I organize the code"],
     "oracle_response": "Keep the core decoupled from stdin/stdout and JSON parsing."},
    {"constraint_id": "HARNESS003", "trigger_keywords": ["do you have test cases"],
     "oracle_response": "Yes, public test cases are provided, one file per feature. Ask me for "
                        "a specific feature by name and I will give you the full test case "
                        "JSON."},
    {"constraint_id": "FULL_SCOPE", "trigger_keywords": ["which features must I implement",
                                                         "is the whole scope required"],
     "oracle_response": "Implement every feature described; none is optional."},
    {"constraint_id": "EXECUTION_CONTRACT", "trigger_keywords": ["how is my program run"],
     "oracle_response": "Each case runs through rcb_tests/test.sh with --cases-dir."},
    {"constraint_id": "PUBLIC_TEST_CASES_AUTHORITY",
     "trigger_keywords": ["are the public test cases authoritative"],
     "oracle_response": "Yes: where the PRD and the public test cases differ, the cases win."},
]  # fmt: skip

STEMS = ["feature1_count", "feature2_upper", "feature5_timeout", "feature10_len",
         "feature12_retry"]  # fmt: skip


def _tc(stem: str) -> dict[str, Any]:
    return {"constraint_id": f"TC_{stem}", "trigger_keywords": [f"test cases for {stem}"],
            "oracle_response": f"Here are the public test cases for {stem}: [{stem}]"}  # fmt: skip


def _data(records: list[dict[str, Any]]) -> OracleData:
    return OracleData.model_validate(
        {
            "task_id": "TASK-X",
            "golden_api_signature": "",
            "hidden_constraints": records,
            "context_pointers": [
                {"vague_reference": "like the old one", "actual_meaning": "the 2019 word counter"}
            ],
            "fallback_response": FALLBACK,
        }  # fmt: skip
    )


# ICAE-written TC records, and TC records generated here from public case files
WRITTEN = _data([*TASK, *GENERIC, *(_tc(s) for s in STEMS)])
GENERATED = with_public_cases(
    _data([*TASK, *GENERIC]), {f"{s}.json": {"cases": [s]} for s in STEMS}
)
LEVELS = pytest.mark.parametrize("data", [WRITTEN, GENERATED], ids=["written", "generated"])


def _ids(question: str, data: OracleData) -> list[str]:
    return [c.record_id for c in match(question, data).chosen]


@LEVELS
@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("Can you give me the feature5_timeout test file?", ["TC_feature5_timeout"]),
        ("Can I have feature5_timeout.json please?", ["TC_feature5_timeout"]),
        ("Show me the test cases for feature 12", ["TC_feature12_retry"]),
        ("Show me the test cases for feature12", ["TC_feature12_retry"]),
        ("Could I see the tests of feature #12?", ["TC_feature12_retry"]),
        ("test cases for feature_12 please", ["TC_feature12_retry"]),
        ("Show me the test cases for feature 1", ["TC_feature1_count"]),
        ("Please send the public test cases for Feature 10.", ["TC_feature10_len"]),
        ("What are the test cases for feature 5?", ["TC_feature5_timeout"]),
        ("Give me the feature2_upper cases", ["TC_feature2_upper"]),
        (
            "Show me the test cases for feature 2 and for feature 12",
            ["TC_feature2_upper", "TC_feature12_retry"],
        ),
    ],
)
def test_a_feature_is_served_from_exactly_its_record(
    data: OracleData, question: str, want: list[str]
) -> None:
    assert sorted(_ids(question, data)) == sorted(want)


@LEVELS
@pytest.mark.parametrize(
    "question",
    [
        "Show me the test cases for feature 3",  # no record names feature 3
        "Can you give me the feature7_export test file?",
        "Could I see the test cases for feature 120?",
        "test cases for feature 11",
    ],
)
def test_a_feature_no_record_names_falls_back(data: OracleData, question: str) -> None:
    reply = grounded_reply(question, data)
    assert reply.fallback and reply.record_ids == [] and reply.text == FALLBACK


def test_a_record_naming_the_feature_only_in_its_trigger_keywords_is_found() -> None:
    data = _data([*TASK, *GENERIC,
                  {"constraint_id": "TC_timeouts", "trigger_keywords": ["feature 5 test cases"],
                   "oracle_response": "[cases of feature 5]"},
                  {"constraint_id": "TC_counts", "trigger_keywords": ["feature 1 test cases"],
                   "oracle_response": "[cases of feature 1]"}])  # fmt: skip
    assert _ids("Show me the test cases for feature 5", data) == ["TC_timeouts"]
    assert _ids("Can I get the feature5 test file?", data) == ["TC_timeouts"]
    assert _ids("Show me the test cases for feature 15", data) == []


def test_a_neighbour_is_never_a_candidate_for_the_model_user() -> None:
    ids = [c.record_id for c in candidates("Show me the test cases for feature 12", WRITTEN)]
    assert "TC_feature1_count" not in ids and "TC_feature2_upper" not in ids


@LEVELS
@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("What happens when a request times out?", ["C001"]),
        ("How many retries should I do?", ["C002"]),
        ("Do you have test cases?", ["HARNESS003"]),
        ("How should I organize the code?", ["ARCH001"]),
    ],
)
def test_other_questions_are_matched_as_before(
    data: OracleData, question: str, want: list[str]
) -> None:
    assert _ids(question, data) == want


@pytest.mark.parametrize(
    ("record_id", "generic"),
    [
        ("ARCH001", True), ("HARNESS002", True), ("TC_feature5_timeout", True),
        ("FULL_SCOPE", True), ("EXECUTION_CONTRACT", True),
        ("PUBLIC_TEST_CASES_AUTHORITY", True),
        ("C001", False), ("C012", False), ("HC_03", False),
    ],
)  # fmt: skip
def test_generic_records_are_recognised(record_id: str, generic: bool) -> None:
    assert is_generic(record_id) is generic


def test_named_protocol_records_do_not_count_as_never_asked_task_constraints() -> None:
    # what runs/run.py records today: only ARCH/HARNESS/TC_ are set apart
    records: list[str] = [r["constraint_id"] for r in [*TASK, *GENERIC]]
    started = RunStarted(
        task_id="x", task_title="t", agent="a", level="L1", responder=ResponderMode.SIMULATED,
        budget=4, prd="",
        task_records=[r for r in records if not r.startswith(("ARCH", "HARNESS", "TC_"))],
        generic_records=[r for r in records if r.startswith(("ARCH", "HARNESS", "TC_"))],
    )  # fmt: skip
    events = [
        started,
        QuestionAsked(question_id=1, text="timeouts?", remaining_before=4),
        QuestionAnswered(question_id=1, text="...", record_ids=["C001"]),
        QuestionAsked(question_id=2, text="scope?", remaining_before=3),
        QuestionAnswered(question_id=2, text="...", record_ids=["FULL_SCOPE"]),
    ]
    m = interaction_metrics(events)
    assert m.covered == ["C001"]
    assert m.coverage == round(1 / 3, 4)
    assert m.never_asked == ["C002", "C003"]
    assert m.generic_revealed == ["FULL_SCOPE"]
