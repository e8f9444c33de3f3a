"""The plain display: one line per event on a terminal or a CI log.

Agent output is printed with control characters made visible, so a hostile delivery cannot
move the cursor or change colours on the operator's terminal.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentSubmitted,
    AgentWrote,
    BuildChecked,
    CaseFinished,
    Event,
    EventsDropped,
    PhaseChanged,
    Progress,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    ResponderChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.run import Run, RunConfig, RunOutcome
from icae_tui.safe_text import printable
from icae_tui.store import RunStore
from icae_tui.users.metrics import interaction_metrics


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


class PlainPrinter:
    def __init__(self, out: TextIO = sys.stdout, *, verbose: bool = False) -> None:
        self.out = out
        self.verbose = verbose

    def line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, ev: Event) -> None:  # noqa: C901 - one branch per event kind
        match ev:
            case RunStarted():
                self.line(f"run {ev.run_id}: task {ev.task_id} · agent {ev.agent} · level {ev.level}"
                          f" · responder {ev.responder} · budget {ev.budget}")  # fmt: skip
            case PhaseChanged():
                self.line(f"== {ev.phase}" + (f": {printable(ev.detail)}" if ev.detail else ""))
            case Progress():
                self.line(f"   {printable(ev.message)}")
            case AgentSaid():
                self.line(f"agent: {printable(ev.text)}")
            case AgentWrote():
                self.line(f"agent wrote {printable(ev.path)} ({ev.size} bytes)")
            case AgentCommand():
                self.line(f"agent $ {printable(ev.command)}")
            case AgentOutput() if self.verbose:
                for part in ev.text.splitlines():
                    self.line(f"   | {printable(part)}")
            case AgentCommandDone():
                note = f" ({after})" if (after := ev.aftermath()) else ""
                self.line(f"   exit {ev.exit_code} in {ev.duration_s:.2f}s{note}")
            case QuestionAsked():
                via = "" if ev.via == "agent" else f" via {ev.via}"
                self.line(
                    f"Q{ev.question_id} ({ev.remaining_before} left{via}): {printable(ev.text)}"
                )
            case QuestionAnswered():
                typed = ev.responder == "human" or ev.edited
                fallback = "budget" if ev.over_budget else "typed" if typed else "fallback"
                source = ", ".join(ev.record_ids) or fallback
                who = ev.responder + (" (edited)" if ev.edited else "")
                self.line(f"A{ev.question_id} [{who} · {source}]: {printable(ev.text)}")
            case QuestionsRefused():
                self.line(f"   {ev.count} more question(s) past the budget (Q{ev.first_id}–Q{ev.last_id},"
                          f" {ev.chars} characters): refused, counted, not stored one by one")  # fmt: skip
            case EventsDropped():
                kinds = ", ".join(f"{k} {n}" for k, n in ev.by_kind.items())
                when = "in all" if ev.final else "store bound reached"
                self.line(f"!! {when}: {ev.count} low-value event(s) not stored ({kinds}); bound"
                          f" {ev.max_events} events / {ev.max_bytes >> 20} MiB")  # fmt: skip
            case ResponderChanged():
                self.line(f"responder → {ev.mode} (by {ev.by})")
            case AgentSubmitted():
                self.line(f"agent submitted: {printable(ev.message)}")
            case BuildChecked():
                self.line(f"build: {'ok' if ev.ok else 'FAILED'} — {printable(ev.reason)}")
            case CaseFinished():
                r = ev.result
                mark = "PASS" if r.passed else "FAIL"
                self.line(f"{mark} {r.case_id:<28} {r.verdict.value:<13} {printable(r.reason)}")
            case ScoreUpdated() if ev.score.done == ev.score.planned:
                s = ev.score
                self.line(f"score: overall {_pct(s.overall)} · macro {_pct(s.macro)} · "
                          f"exec {_pct(s.exec_rate)} · SP {_pct(s.sp_rate)} · EM {_pct(s.em_rate)} · "
                          f"FM {_pct(s.fm_rate)}")  # fmt: skip
            case RunFinished():
                tail = f" — {printable(ev.error)}" if ev.error else ""
                self.line(f"run {ev.status}{tail}")
                if ev.report_path:
                    self.line(f"report: {ev.report_path}")

    def summary(self, events: list[Event]) -> None:
        m = interaction_metrics(events)
        never = ", ".join(m.never_asked) or "none"
        over = f" (+{m.over_budget} over budget)" if m.over_budget else ""
        self.line(f"interaction: {m.turns}/{m.budget} questions{over} · fallback {_pct(m.fallback_rate)} · "
                  f"coverage {_pct(m.coverage)} ({len(m.covered)} records) · never asked: {never}")  # fmt: skip


class TerminalHuman:
    """Headless human and assisted modes: questions are answered from the terminal.

    Assisted: the draft is printed with its records; an empty line sends it as is.
    """

    def __init__(self, run: Run, printer: PlainPrinter) -> None:
        self.run = run
        self.printer = printer

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, QuestionAsked) and ev.mode in ("human", "assisted"):
            asyncio.get_running_loop().create_task(self._read(ev))

    async def _read(self, ev: QuestionAsked) -> None:
        if ev.mode == "assisted":
            source = ", ".join(ev.draft_records) or "fallback"
            self.printer.line(f"draft [{source}]: {printable(ev.draft)}")
            self.printer.line(f"your answer to Q{ev.question_id} (empty line sends the draft):")
        else:
            self.printer.line(f"your answer to Q{ev.question_id} (one line):")
        text = (await asyncio.to_thread(sys.stdin.readline)).rstrip("\n")
        if ev.mode == "assisted" and not text:
            text = ev.draft
        self.run.answer(ev.question_id, text or "(no answer)")


async def run_headless(config: RunConfig, store: RunStore, *, verbose: bool = False) -> RunOutcome:
    run = Run(config, store)
    printer = PlainPrinter(verbose=verbose)
    run.subscribe(printer)
    run.subscribe(TerminalHuman(run, printer))
    outcome = await run.execute()
    printer.summary(store.events(run.run_id))
    return outcome
