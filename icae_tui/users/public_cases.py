"""Public test cases on request: ICAE's `TC_<stem>` records.

ICAE-EVAL's harness records invite an agent to ask for a feature's public test cases by name,
and its data carries one `TC_<stem>` record per public case file whose response is that file.
A task here keeps its public cases in `cases/public/<stem>.json` (or, in ICAE's user-agent
format, `public_test_cases`); this adds a `TC_<stem>` record for each file that has none, so
the simulated user serves it like any record — the file's JSON, verbatim — and the turn names
which file was served. Only public files ever become records: hidden and enhanced cases are
never passed here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icae_tui.domain.task import HiddenConstraint, OracleData

TC_PREFIX = "TC_"
RESPONSE_CHARS = 16_000  # of a case file served in one answer (a huge file is cut, noted)


def tc_id(file_name: str) -> str:
    return TC_PREFIX + Path(file_name).stem


def _phrases(stem: str) -> list[str]:
    name = re.sub(r"[_\-.]+", " ", stem).strip()
    return [
        f"can I see the test cases for {name}",
        f"show me the public tests of {name}",
        f"example inputs and expected outputs for {name}",
        f"sample test cases of the {name} feature",
    ]


def _response(content: Any) -> str:
    text = json.dumps(content, indent=1, ensure_ascii=False)
    if len(text) > RESPONSE_CHARS:
        text = text[:RESPONSE_CHARS] + "\n[… cut: the rest of this file is not shown …]"
    return text


def with_public_cases(data: OracleData, public: Mapping[str, Any]) -> OracleData:
    """`data` with a TC_<stem> record for each public case file it has no record for."""
    have = {r.constraint_id for r in data.hidden_constraints}
    added = [
        HiddenConstraint(
            constraint_id=tc_id(name),
            trigger_keywords=_phrases(Path(name).stem),
            oracle_response=_response(content),
        )  # fmt: skip
        for name, content in sorted(public.items())
        if tc_id(name) not in have
    ]
    if not added:
        return data
    return data.model_copy(update={"hidden_constraints": [*data.hidden_constraints, *added]})


def public_case_files(task_root: Path) -> dict[str, Any]:
    """A task's public case files, by file name (unreadable ones are left out: the task
    loader reports them)."""
    out: dict[str, Any] = {}
    for path in sorted((task_root / "cases" / "public").glob("*.json")):
        try:
            out[path.name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return out
