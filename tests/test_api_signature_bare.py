"""The API-signature diagnostic reads signatures as ICAE-EVAL writes them: a bare function
signature with annotations, `handle_operation(operation: str, payload: dict) -> str`,
possibly over several lines or several functions (issue 38, item 14). Before, such a
signature named no item and the diagnostic said "nothing to check". Pure: no engine."""

from __future__ import annotations

import pytest

from icae_tui.evaluation.api_signature import check_signature, items_of

ICAE = "handle_operation(operation: str, payload: dict) -> str"

SEVERAL = """\
Implement in /workspace/ledger.py:

parse_entry(line: str) -> Entry
Ledger.balance(
    self,
    account: str,
    *,
    as_of: date | None = None,
) -> Decimal
render(entries: list[Entry], fmt: str = "text")
"""


@pytest.mark.parametrize(
    ("signature", "names"),
    [
        (ICAE, ["handle_operation"]),
        ("handleOperation(operation: string, payload: object): string", ["handleOperation"]),
        ("main() -> int", ["main"]),  # annotated by its return type alone
        ("run(opt?: string)", ["run"]),
        ("def handle(op: str) -> str\nhelper(x: int) -> None", ["handle", "helper"]),
    ],
)
def test_a_bare_annotated_signature_names_its_function(signature, names):
    assert items_of(signature, "/workspace") == [("function", n) for n in names]


def test_several_functions_over_several_lines():
    assert items_of(SEVERAL, "/workspace") == [
        ("file", "ledger.py"), ("function", "parse_entry"), ("function", "balance"),
        ("function", "render"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "prose",
    [
        "see handle(x) for details",  # no annotation: a mention, not a signature
        'example: handle_operation("add", {"a": 1})',
        'call run({a: 1}) or print("a: b")',  # a literal's colon annotates nothing
        "the list (type: str) of names",  # a space before the parenthesis
    ],
)
def test_calls_and_prose_name_no_function(prose):
    assert [i for i in items_of(prose, "/workspace") if i[0] == "function"] == []


def test_the_check_looks_for_the_function_in_the_delivery():
    sources = {"app.py": "def handle_operation(operation, payload):\n    return ''\n"}
    check = check_signature(ICAE, set(sources), sources, workspace="/workspace")
    assert [(i.kind, i.name, i.found, i.where) for i in check.items] == [
        ("function", "handle_operation", True, "app.py")
    ]
    elsewhere = {"app.py": "def handle(op, payload):\n    return ''\n"}
    missed = check_signature(ICAE, set(elsewhere), elsewhere, workspace="/workspace")
    assert (missed.checked, missed.honoured) == (1, 0)
