"""The plain display: the run's log on a terminal or a CI log.

The lines are the run view's (icae_tui/display), the same the console's trace shows; agent
output in them has its control characters made visible, so a hostile delivery cannot move
the cursor or change colours on the operator's terminal.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from icae_tui.display.replay import PacedReplay, Sleep
from icae_tui.display.view import RunView
from icae_tui.display.wording import OPERATOR_ANSWERS, draft_source, interaction_line, usage_lines
from icae_tui.domain.events import Event, QuestionAsked
from icae_tui.domain.states import AnsweredBy
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run, RunOutcome
from icae_tui.store.database import RunStore
from icae_tui.util.safe_text import printable


class PlainPrinter:
    """Prints the run's log as its `RunView` grows: every trace line (the diagnostics' too),
    output lines only when verbose (the view's lines are printable already)."""

    def __init__(self, out: TextIO | None = None, *, verbose: bool = False) -> None:
        self.out = out if out is not None else sys.stdout
        self.verbose = verbose
        self.view = RunView()
        self.closed = False  # the reader went away (`icae run … | head`): the run goes on
        self._cursor = 0

    def line(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(text + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.closed = True  # quietly; the command's end says so with its exit status

    def __call__(self, ev: Event) -> None:
        self.view.apply(ev)
        lines, self._cursor = self.view.trace_since(self._cursor)
        for line in lines:
            if line.kind != "output" or self.verbose:
                self.line(line.text)

    def summary(self, events: list[Event] | None = None) -> None:
        """The interaction metrics, then the agent's usage against its limits (model calls,
        tokens, cost; steps, wall clock): of the events printed, or of `events`."""
        view = self.view if events is None else RunView.from_events(events)
        self.line(interaction_line(view.metrics()))
        for line in usage_lines(view.usage()):
            self.line(line)


class TerminalHuman:
    """Headless human and assisted modes: questions are answered from the terminal.

    Assisted: the draft is printed with its records; an empty line sends it as is.
    """

    def __init__(self, run: Run, printer: PlainPrinter) -> None:
        self.run = run
        self.printer = printer

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, QuestionAsked) and ev.mode in OPERATOR_ANSWERS:
            asyncio.get_running_loop().create_task(self._read(ev))

    async def _read(self, ev: QuestionAsked) -> None:
        if ev.mode == AnsweredBy.ASSISTED:
            source = draft_source(ev.draft_records)
            self.printer.line(f"draft [{source}]: {printable(ev.draft)}")
            self.printer.line(f"your answer to Q{ev.question_id} (empty line sends the draft):")
        else:
            self.printer.line(f"your answer to Q{ev.question_id} (one line):")
        text = (await asyncio.to_thread(sys.stdin.readline)).rstrip("\n")
        if ev.mode == AnsweredBy.ASSISTED and not text:
            text = ev.draft
        self.run.answer(ev.question_id, text or "(no answer)")


async def run_headless(config: RunConfig, store: RunStore, *, verbose: bool = False) -> RunOutcome:
    run = Run(config, store)
    printer = PlainPrinter(verbose=verbose)
    run.subscribe(printer)
    run.subscribe(TerminalHuman(run, printer))
    outcome = await run.execute()
    printer.summary()  # the printer saw every stored event
    return outcome


async def replay_headless(
    events: Iterable[Event],
    *,
    speed: float = 1.0,
    verbose: bool = False,
    out: TextIO | None = None,
    sleep: Sleep = asyncio.sleep,
) -> PlainPrinter:
    """A stored run's log printed line by line at its own pace (`speed` times faster; idle
    gaps over 2 s shortened; 0: all at once), then its summary, as the run printed it."""
    printer = PlainPrinter(out, verbose=verbose)
    replay = PacedReplay(events, speed=speed, sleep=sleep)
    job = asyncio.ensure_future(replay.job())

    def deliver(ev: Event) -> None:
        printer(ev)
        if printer.closed:  # the reader went away (`icae replay … | head`): nobody watches
            job.cancel()

    replay.connect(deliver)
    try:
        await job
    except asyncio.CancelledError:
        if not printer.closed:
            raise
        return printer
    printer.summary()
    return printer


async def run_repeats(
    config: RunConfig,
    store: RunStore,
    repeats: int,
    *,
    verbose: bool = False,
    out: TextIO | None = None,
) -> tuple[list[RunOutcome], dict[str, Any]]:
    """The same pairing run `repeats` times, one after another: each a stored run of its own,
    tagged with a shared repeat group (RunStore.set_repeat), each printed as `run_headless`
    prints it. Then the figures' mean, spread and 95 % t-interval over the repeats, and each
    repeat's figures (icae_tui/results/repeats.py), printed and returned as the group's report."""
    from icae_tui.results.repeats import Repeat, summary, summary_lines
    from icae_tui.runs.run import new_run_id

    group = "repeats-" + new_run_id()
    printer = PlainPrinter(out)
    outcomes: list[RunOutcome] = []
    for index in range(1, repeats + 1):
        printer.line(f"━━ repeat {index} of {repeats} (group {group})")
        run = Run(config, store)
        run_printer = PlainPrinter(out, verbose=verbose)
        run.subscribe(run_printer)
        run.subscribe(TerminalHuman(run, run_printer))
        try:
            outcome = await run.execute()
        finally:  # a cancelled repeat is stored too: it is one of the group's
            if store.run(run.run_id) is not None:
                store.set_repeat(run.run_id, group, index)
        run_printer.summary()
        outcomes.append(outcome)
    report = summary(group, [Repeat(o.run_id, str(o.status), o.score) for o in outcomes])
    for text in summary_lines(report):
        printer.line(text)
    return outcomes, report
