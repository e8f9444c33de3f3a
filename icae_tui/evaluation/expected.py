"""Cases judged against their stored expected output (`[cases] reference = "expected"`),
exactly as ICAE-EVAL scores them. Pure: no engine.

ICAE-EVAL compares each case's captured output file with the case's `expected_output` on
the host: the file read as text (UTF-8, an undecodable byte as U+FFFD, universal newlines:
`\r\n` and `\r` read as `\n`) must equal the stored string (a stored value that is not a
string is compared as its `json.dumps`; the importer stores that text) — so a stored string
holding a `\r` is never equalled there, not even by the same bytes. Exit code, stderr and
side effects are not part of its protocol. Here the delivery's command is the case's whole
run (for an ICAE import, the protocol's adapter, importers/icae_contract.py: its stdout is the
captured file, or a line saying none was captured), so:

| step   | passes when                                              | else the verdict is |
| ------ | -------------------------------------------------------- | ------------------- |
| Engine | the engine ran and inspected the delivery's side         | `runtime_error`     |
| Limits | as the ladder's delivery steps (left running, processes, | as there            |
|        | box, time, memory, disk, output)                         |                     |
| EM     | its stdout, read as ICAE reads it, equals the stored one | `wrong_answer`      |
|        | (whatever its exit code: the reason names one not 0)     |                     |
| —      | all of the above                                         | `accepted`          |

Nothing else is compared: exec is that the command ended (it did, past the limits), SP is
exec, EM and FM as their names say. FM is the normalised similarity to the stored output. The
case's `oracle` record is the stored output (the text as stdout), so every display shows what
the delivery was held to; the reasons say it was the stored output, never an oracle's run.
"""

from __future__ import annotations

import hashlib
from typing import Any

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import CaseResult, LadderMetric, SideRun, Verdict
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.compare import fuzzy_score
from icae_tui.evaluation.verdict import (
    COMPARE_CAP,
    Attempt,
    SideFault,
    bound_broken,
    case_result,
)
from icae_tui.sandbox.base import DISPLAY_CAP

STORED = "the stored expected output"


def icae_text(data: bytes) -> str:
    """Output bytes as ICAE-EVAL reads its output files: `Path.read_text(encoding="utf-8",
    errors="replace")`, which decodes with universal newlines."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def reference_run(expected: str) -> SideRun:
    """The stored output as the record of the side the delivery is compared with."""
    raw = expected.encode()
    shown = expected[:DISPLAY_CAP]
    return SideRun(
        exit_code=0, stdout=shown, stderr="", stdout_bytes=len(raw),
        stdout_sha256=hashlib.sha256(raw).hexdigest(), stderr_sha256=hashlib.sha256().hexdigest(),
        stdout_tail=expected[-8192:] if len(shown) < len(expected) else "",
    )  # fmt: skip


def same_as_stored(delivery: SideOutcome, expected: str) -> bool:
    if "\r" in expected:
        # ICAE compares its translated read with the stored string as stored: a carriage
        # return there is never equalled, not even by the very same bytes
        return False
    raw = expected.encode()
    if delivery.run.stdout_sha256 == hashlib.sha256(raw).hexdigest():
        return True  # byte-identical, however long
    if delivery.run.stdout_bytes > COMPARE_CAP:
        return False  # what was not kept cannot be read as ICAE reads it
    return icae_text(delivery.stdout_full) == expected


def judge_expected(task: Task, ref: CaseRef, delivery: Attempt) -> CaseResult:
    """The verdict of a case the delivery ran, against the case's stored expected output."""
    expected = ref.case.expected_output
    o = reference_run(expected)

    def result(verdict: Verdict, reason: str, **fields: Any) -> CaseResult:
        d = delivery.run if isinstance(delivery, SideOutcome) else None
        return case_result(task, ref, verdict, reason, oracle=o, delivery=d, **fields)

    if isinstance(delivery, SideFault):
        return result(
            Verdict.RUNTIME_ERROR, f"the engine could not run or inspect this case: {delivery}"
        )
    d = delivery.run
    limit = ref.case.timeout_s or task.spec.cases.timeout_s
    if breach := bound_broken(d, limit, task.spec.cases.disk_mb):
        return result(*breach)
    em = same_as_stored(delivery, expected)
    fm_score = 1.0 if em else round(fuzzy_score(expected, d.stdout), 4)
    fm = fm_score >= task.spec.cases.fm_threshold
    m = LadderMetric
    flags = dict(metrics={m.EXEC: 1.0, m.SP: 1.0, m.EM: float(em), m.FM: float(fm),
                          m.FM_SCORE: fm_score})  # fmt: skip
    if not em:
        reason = f"stdout differs from {STORED} (similarity {fm_score:.2f})"
        if "\r" in expected:
            reason += "; it holds a carriage return, which ICAE-EVAL's reading never yields"
        if d.exit_code != 0:
            reason += f"; exit code {d.exit_code}"
            if d.stderr.strip():
                last = d.stderr.strip().split("\n")[-1]  # not splitlines(): U+2028 ends no line
                reason += f"; stderr: {last[:120]}"
        return result(Verdict.WRONG_ANSWER, reason, **flags)
    return result(Verdict.ACCEPTED, f"identical to {STORED}", passed=True, **flags)
