"""Verdicts: what a case's runs on the oracle and on the delivery come to. Pure: no engine.

The differential engine (differential.py) runs each case and hands over, per side, a
SideOutcome, or a SideFault when the engine could not run or inspect that side even after
its retry. `decide` walks the ladder; the first step that fails gives the verdict:

| step      | passes when                                             | else the verdict is        |
| --------- | ------------------------------------------------------- | -------------------------- |
| Build     | the build command exits 0, before any case runs         | `build_error`, every case  |
| Engine    | the engine ran and inspected both sides                 | `runtime_error` (the       |
|           |                                                         | delivery's side failed,    |
|           |                                                         | whatever the oracle's did) |
|           |                                                         | / `oracle_error`           |
| Oracle    | with `oracle_runs` ≥ 2, all runs agree (exit code,      | `oracle_nondeterministic`  |
|           | stdout, stderr byte for byte, side effects); then the   | / `oracle_error`           |
|           | first finished in time, in memory, under the output cap |                            |
| Left      | no process of the delivery's was alive after its        | `runtime_error`, whatever  |
|           | command ended with an exit code (unless the oracle's    | their number               |
|           | were too; a command cut at the output cap or never seen |                            |
|           | to end is judged below, and one that hit the process    |                            |
|           | limit and ran out the clock by Processes)               |                            |
| Processes | no fork of the delivery failed at the pids limit        | `runtime_error`, even if   |
|           | (unless the oracle's did too)                           | it ran out the clock too   |
| Box       | the delivery's box survived the case (it did not end    | `runtime_error`            |
|           | every process in it, its init's keepalive included)     |                            |
| Time      | the delivery's command ended within the case's timeout, | `time_limit`               |
|           | on the host's clock (never told by its exit code: 124)  |                            |
| Memory    | the delivery was not OOM-killed                         | `memory_limit`             |
| Disk      | the delivery's box did not fill its disk (sandbox/disk) | `disk_limit`               |
|           | (unless the oracle's did too)                           |                            |
| Output    | the delivery wrote at most OUTPUT_LIMIT bytes           | `output_limit`             |
| Exec      | the delivery's exit code equals the oracle's            | `runtime_error` (126+ or a |
|           |                                                         | signal) / `wrong_answer`   |
| SP        | the same effective side effects (paths, change, type,   | `side_effects`             |
|           | content, link target; by digest past the cap)           |                            |
| EM        | stdout byte-identical, or equal after whitespace        | `wrong_answer`             |
|           | normalisation (both within COMPARE_CAP)                 |                            |
| stderr    | stderr equal under the same normalisation               | `wrong_answer`             |
| —         | all of the above                                        | `accepted`                 |

FM (normalised similarity ≥ the task's `fm_threshold`) is reported beside EM. A case that
leaves processes running is the delivery's fault however many they are, and that comes
first: a detached fork bomb may or may not reach the pids limit before it is stopped, but
it is always left running, so its verdict and reason are the same on every run (how many
were left is in `SideRun.left_running`, never in the reason). A fork bomb killed at its
timeout is the other way round: it always hit the limit, and a fork in flight when the kill
came may or may not outlive it (a shell blocks SIGTERM while it forks, and its child is
born without the signal), so there the limit comes first. Processes that were only still
exiting when the host looked are never counted as left (sandbox/docker/procs.py). `oracle_error` and
`oracle_nondeterministic` are not counted against the agent (Verdict.counted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import CaseResult, LadderMetric, SideRun, Verdict
from icae_tui.domain.task import CaseRef, StderrPolicy, Task
from icae_tui.evaluation.compare import exact_match, fuzzy_score
from icae_tui.evaluation.scope import same_merged, scoped, stderr_judged

COMPARE_CAP = 4 * 1024 * 1024  # bytes of each stream kept for comparison
OUTPUT_LIMIT = 64 * 1024 * 1024  # both streams together; past this the case is stopped


@dataclass(frozen=True)
class SideFault:
    """A side whose case the engine could not run or inspect (the engine itself answers)."""

    error: Exception

    def __str__(self) -> str:
        return f"{type(self.error).__name__}: {self.error}"[:300]


Attempt = SideOutcome | SideFault


def invocation(task: Task, ref: CaseRef) -> tuple[str, bytes | None]:
    """The shell line and the stdin bytes of a case."""
    case, tool = ref.case, task.spec.interface.tool
    if task.spec.interface.kind == "dispatcher" and case.command is None:
        return tool, json.dumps(case.input, ensure_ascii=False).encode()
    stdin = case.input.encode() if isinstance(case.input, str) else None
    return case.command or tool, stdin


def case_result(
    task: Task, ref: CaseRef, verdict: Verdict, reason: str, **fields: Any
) -> CaseResult:
    command, _ = invocation(task, ref)
    return CaseResult(
        case_id=ref.id, split=ref.split, pattern=ref.pattern, command=command,
        verdict=verdict, reason=reason, **fields,
    )  # fmt: skip


def build_error_result(task: Task, ref: CaseRef, reason: str) -> CaseResult:
    return case_result(task, ref, Verdict.BUILD_ERROR, reason)


def decide(task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt) -> CaseResult:
    """The verdict of a case from every oracle run (`oracle_runs` of them) and the delivery's."""
    outcomes = [scoped(task.spec, o) for o in oracles if isinstance(o, SideOutcome)]
    if isinstance(delivery, SideFault) or len(outcomes) < len(oracles):
        return fault_result(task, ref, oracles, delivery)
    first, stderr = outcomes[0], stderr_judged(task.spec)
    if any(not oracle_agrees(first, other, stderr=stderr) for other in outcomes[1:]):
        return case_result(
            task, ref, Verdict.ORACLE_NONDETERMINISTIC,
            "the oracle gave different results on two runs; not counted",
            oracle=first.run, delivery=delivery.run,
        )  # fmt: skip
    return judge(task, ref, first, delivery)


def fault_result(
    task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
) -> CaseResult:
    """A case that failed on a side twice, the second time with nothing else running.

    The delivery's fault counts against it even when the oracle failed too: an agent must
    not turn its failing cases into uncounted ones by breaking the engine."""
    oracle_run = next((o.run for o in oracles if isinstance(o, SideOutcome)), None)
    if isinstance(delivery, SideFault):
        return case_result(
            task, ref, Verdict.RUNTIME_ERROR,
            f"the engine could not run or inspect this case: {delivery}", oracle=oracle_run,
        )  # fmt: skip
    fault = next(o for o in oracles if isinstance(o, SideFault))
    return case_result(
        task, ref, Verdict.ORACLE_ERROR,
        f"the engine could not run or inspect the oracle's side: {fault}; not counted",
        oracle=oracle_run, delivery=delivery.run,
    )  # fmt: skip


def oracle_agrees(a: SideOutcome, b: SideOutcome, *, stderr: bool = True) -> bool:
    """Two oracle runs gave the same result: stricter than EM, byte for byte (stderr unless
    the task does not judge it)."""
    if a.compared is not None and b.compared is not None:  # as the task's sanitizer left them
        same_output = a.compared == b.compared
    else:
        same_output = a.run.stdout_sha256 == b.run.stdout_sha256 and (
            not stderr or a.run.stderr_sha256 == b.run.stderr_sha256
        )
    return a.run.exit_code == b.run.exit_code and same_output and same_effects(a.run, b.run)


def same_effects(a: SideRun, b: SideRun) -> bool:
    if a.changes_sha256 and b.changes_sha256:  # digests of all changes, kept or past the cap
        return a.changes_sha256 == b.changes_sha256
    return _effects_key(a) == _effects_key(b)


def _effects_key(r: SideRun) -> list[tuple[str, ...]]:
    return sorted((c.path, c.change, c.type, c.sha256, c.target) for c in r.changes)


def _same_stdout(oracle: SideOutcome, delivery: SideOutcome) -> bool:
    if oracle.run.stdout_sha256 == delivery.run.stdout_sha256:
        return True  # byte-identical, however long
    if oracle.run.stdout_bytes > COMPARE_CAP or delivery.run.stdout_bytes > COMPARE_CAP:
        return False  # cannot normalise what was not kept; different bytes stay different
    return exact_match(
        oracle.stdout_full.decode(errors="replace"), delivery.stdout_full.decode(errors="replace")
    )


def _change_order(path: str) -> tuple[bool, str]:
    """The order kept changes are in (see sidefx.to_file_changes): work directory first."""
    return (path.startswith("/"), path)


def effects_reason(oracle: SideRun, delivery: SideRun) -> str:
    """Name the first differing paths. Past a side's cap only the digest is known: paths
    beyond its last kept entry are not called untouched, and if every kept entry agrees
    the reason says the difference lies past the kept ones."""
    ours = {c.path: c for c in delivery.changes}
    theirs = {c.path: c for c in oracle.changes}
    horizons = [
        _change_order(side.changes[-1].path)
        for side in (oracle, delivery)
        if side.changes and side.changes_total > len(side.changes)
    ]
    seen_up_to = min(horizons) if horizons else None
    diffs = []
    for p in sorted(ours.keys() | theirs.keys(), key=_change_order):
        if seen_up_to is not None and _change_order(p) > seen_up_to:
            break
        mine, gold = ours.get(p), theirs.get(p)
        if mine is None or gold is None or mine.change != gold.change:
            d = mine.change if mine else "untouched"
            o = gold.change if gold else "untouched"
            diffs.append(f"{p}: {d} (oracle {o})")
        elif (mine.sha256, mine.type, mine.target) != (gold.sha256, gold.type, gold.target):
            diffs.append(f"{p}: different content")
    if not diffs:
        return (
            f"side effects differ past the {min(len(oracle.changes), len(delivery.changes))} "
            f"kept changes: {delivery.changes_total} changes (oracle {oracle.changes_total})"
        )
    return "side effects differ: " + "; ".join(diffs[:3]) + (" …" if len(diffs) > 3 else "")


def judge(task: Task, ref: CaseRef, oracle: SideOutcome, delivery: SideOutcome) -> CaseResult:
    """The ladder's verdict of a case both sides ran, on what the task judges of them (its
    compared roots, never the oracle's own install: scope.py)."""
    return _ladder(task, ref, scoped(task.spec, oracle), scoped(task.spec, delivery))


def ended(r: SideRun) -> bool:
    """Whether the command ended (by itself, or killed at its timeout): then what still runs
    was left by it. A command whose output was cut, or whose end never came, may be what
    still runs."""
    return r.exit_code is not None and not r.overflowed


def bound_broken(
    d: SideRun, limit: float, disk_mb: int, *, oracle: SideRun | None = None
) -> tuple[Verdict, str] | None:
    """The bound of its box the delivery's run broke, as a verdict and its reason; None when
    it kept them all. What the oracle's run (where there is one) did too is not held against
    the delivery. A fork bomb usually also runs out the clock: the cause is the better
    verdict, so the rungs go from cause to symptom."""
    clock = f", no exit within {limit:g} s" if d.timed_out else ""
    capped = d.pids_capped and not (oracle is not None and oracle.pids_capped)
    left = d.left_running and not (oracle is not None and oracle.left_running) and ended(d)
    if left and not (capped and d.timed_out):  # a bomb killed at its timeout: capped first
        return Verdict.RUNTIME_ERROR, "left processes running after its command ended" + clock
    if capped:
        return Verdict.RUNTIME_ERROR, "hit the process limit (fork bomb?)" + clock
    if d.box_died and not d.oom_killed:
        return (Verdict.RUNTIME_ERROR, "killed its own box: every process in it ended, "
                "its init's keepalive included")  # fmt: skip
    if d.timed_out:
        return Verdict.TIME_LIMIT, f"no exit within {limit:g} s"
    if d.oom_killed:
        return Verdict.MEMORY_LIMIT, "killed: out of memory"
    if d.disk_full:
        return (Verdict.DISK_LIMIT, f"filled its box's disk (the disk limit of {disk_mb} MiB: "
                "more was written than the box may keep)")  # fmt: skip
    if d.overflowed:
        return Verdict.OUTPUT_LIMIT, f"more than {OUTPUT_LIMIT // (1024 * 1024)} MiB of output"
    return None


def _oracle_failure(o: SideRun) -> str | None:
    """Why the oracle's run cannot be the reference; None when it can."""
    if o.prep_failed:
        return f"failed the case's prep line ({o.prep_failed})"
    if o.timed_out:
        return "timed out"
    if o.oom_killed:
        return "ran out of memory"
    if o.overflowed:
        return "overflowed"
    if o.box_died:
        return "killed its own box"
    if o.disk_full:
        return "filled its disk"
    if o.exit_code is None:
        return "did not finish"
    return None


def _ladder(task: Task, ref: CaseRef, oracle: SideOutcome, delivery: SideOutcome) -> CaseResult:
    o, d = oracle.run, delivery.run

    def result(verdict: Verdict, reason: str, **fields: Any) -> CaseResult:
        return case_result(task, ref, verdict, reason, oracle=o, delivery=d, **fields)

    limit = ref.case.timeout_s or task.spec.cases.timeout_s
    if why := _oracle_failure(o):
        return result(Verdict.ORACLE_ERROR, f"the oracle {why}")
    if d.prep_failed:  # as CLI-Tool-Bench: a prep that fails fails the case
        return result(Verdict.RUNTIME_ERROR, f"the case's prep line failed ({d.prep_failed})")
    if breach := bound_broken(d, limit, task.spec.cases.disk_mb, oracle=o):
        return result(*breach)
    exec_ok = o.exit_code == d.exit_code
    sp = exec_ok and same_effects(o, d)
    policy = task.spec.cases.stderr
    merged = policy is StderrPolicy.MERGE  # stdout and stderr judged as one stream
    masked = oracle.compared is not None and delivery.compared is not None
    if masked:  # the task's sanitizer masked what varies (stdout, or both streams merged)
        em = exact_match(oracle.compared or "", delivery.compared or "")
    else:
        em = same_merged(oracle, delivery) if merged else _same_stdout(oracle, delivery)
    # FM is a score on the displayed text, never a verdict of its own.
    shown = (o.stdout + o.stderr, d.stdout + d.stderr) if merged else (o.stdout, d.stdout)
    if masked:
        shown = (o.sanitized or "", d.sanitized or "")
    fm_score = 1.0 if em else round(fuzzy_score(*shown), 4)
    fm = fm_score >= task.spec.cases.fm_threshold
    m = LadderMetric
    flags = dict(metrics={m.EXEC: float(exec_ok), m.SP: float(sp), m.EM: float(sp and em),
                          m.FM: float(sp and fm), m.FM_SCORE: fm_score})  # fmt: skip
    if not exec_ok:
        code = d.exit_code
        crashed = code is not None and (code >= 126 or code < 0)
        reason = f"exit code {code}, oracle {o.exit_code}"
        if d.stderr.strip():
            last = d.stderr.strip().split("\n")[-1]  # not splitlines(): U+2028 ends no line
            reason += f"; stderr: {last[:120]}"
        return result(Verdict.RUNTIME_ERROR if crashed else Verdict.WRONG_ANSWER, reason, **flags)
    if not sp:
        return result(Verdict.SIDE_EFFECTS, effects_reason(o, d), **flags)
    if not em:
        what = "stdout and stderr (merged) differ" if merged else "stdout differs"
        return result(Verdict.WRONG_ANSWER, f"{what} (similarity {fm_score:.2f})", **flags)
    judged = policy is StderrPolicy.COMPARE  # else ignored, or judged within `em`
    if judged and o.stderr_sha256 != d.stderr_sha256 and not exact_match(o.stderr, d.stderr):
        return result(Verdict.WRONG_ANSWER, "stderr differs", **flags)
    return result(Verdict.ACCEPTED, "identical", passed=True, **flags)
