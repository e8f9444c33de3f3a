"""Watching a batch headless: a line per run as it ends (its item, attempt, outcome, overall),
the batch's messages (images built, leftovers swept), and on a terminal a Rich progress bar
with the same counts the console's batch screen shows — done, failed by kind, running,
retried — its throughput and the time left. A pipe gets the lines only."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from icae_tui.batch.counts import BatchCounts
from icae_tui.batch.plan import ItemState
from icae_tui.batch.runner import BatchMessage, BatchRunner, BatchUpdate, ItemFinished, ItemStarted
from icae_tui.display.plain import PlainPrinter
from icae_tui.util.safe_text import printable


class BatchPrinter:
    def __init__(
        self, runner: BatchRunner, *, verbose: bool = False, out: TextIO | None = None
    ) -> None:
        self.runner = runner
        self.verbose = verbose
        self.out = out if out is not None else sys.stdout
        self.counts: BatchCounts | None = None
        self.console = Console(file=self.out)
        self.bar: Progress | None = None
        self._bar_task: TaskID | None = None

    def __enter__(self) -> BatchPrinter:
        if self.console.is_terminal:
            self.bar = Progress(
                TextColumn("batch"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.description}"), TimeElapsedColumn(), console=self.console,
            )  # fmt: skip
            self.bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        if self.bar is not None:
            self.bar.stop()

    def say(self, text: str) -> None:
        if self.bar is not None:
            self.bar.console.print(text, markup=False, highlight=False)
        else:
            self.out.write(text + "\n")
            self.out.flush()

    def __call__(self, update: BatchUpdate) -> None:
        if self.counts is None:
            self.counts = BatchCounts(self.runner.progress)
        counts = self.counts
        match update:
            case BatchMessage():
                self.say(f"batch: {printable(update.text, limit=300)}")
            case ItemStarted():
                counts.update(self.runner.progress)
                counts.started(update.attempt)
                if self.verbose:
                    update.run.subscribe(PlainPrinter(self.out))
                self.say(
                    f"▶ {printable(update.item.key)} (attempt {update.attempt}, run {update.run.run_id})"
                )
            case ItemFinished():
                counts.update(self.runner.progress)
                counts.finished()
                o = update.outcome
                overall = (
                    f" overall {100 * o.score.overall:.1f}%" if o.score and o.score.measured else ""
                )
                why = f": {printable(o.error, limit=200)}" if o.error else ""
                then = " (again later)" if update.progress.state is ItemState.PENDING else ""
                self.say(f"■ {printable(update.item.key)} {o.status}{overall}{why}{then}")
        if self.bar is not None:
            if self._bar_task is None:
                self._bar_task = self.bar.add_task(counts.line(), total=counts.total)
            self.bar.update(self._bar_task, completed=counts.done, description=counts.line())
