"""The run console under a flooding agent, beside a naive `RichLog`, each in its own process.

    python benchmarks/console_stream.py [--seconds 10] [--checkpoints 3] [--rate 20000]
                                        [--quick] [--store] [--tracemalloc] [--census]
                                        [--only console|richlog]

A synthetic agent writes `--rate` output lines per second (AgentOutput events: chunks of 1-8 KiB
cut anywhere, so lines straddle chunks; lines of 0-300 characters, 0.5 % of 1,000-12,000; each
chunk new text, as an agent's is, so nothing that holds it is held for free) with a command
every 50 chunks (AgentCommand, AgentCommandDone) and cases finishing meanwhile (CaseFinished,
ScoreUpdated over 200 planned cases; `--case-rate`, 20 a second). The burst lasts N x T
(`--checkpoints` N, 3; `--seconds` T, 10): figures are taken at T, 2T, ... NT, so that memory
can be seen to stop growing once the bounded buffers are full (the view's 50,000 lines take
2.5 s at 20,000 lines/s). Two contenders, each in a fresh process (so one's heap does not weigh
on the other's RSS), run one after the other in a headless `App.run_test()` at 160x48:
  console  — the real path: `IcaeApp` (its CSS and theme; a blank screen instead of the task
             list under it) with a `RunScreen` on a `LiveSource`; the agent is the run's job
             (the screen's worker) and delivers each event to `handle_event` (with
             `--store`: through a real `RunLog` and SQLite `RunStore`, bound included), the
             `RunView` reduces it, and the screen's 80 ms timer flushes the `TraceLog`.
             Without `--store` the run keeps no record of its events (only the displays are
             measured); with it the RunLog keeps them, as a real run does, until the run's
             bound (icae_tui/store/bounds.py: 64 MiB of events, about 30 s of this flood);
  richlog  — the naive baseline: a minimal app (header, RichLog, footer), the same agent as its
             worker, one `RichLog.write()` per line (lines joined across chunks; commands and
             cases one line each). With `--store` its events go through a RunLog too.
Figures (all wall-clock, the agent and the screen sharing one event loop as in a live run):
  written/s   — lines handed to the widget per second (taken by TraceLog.flush from the view,
                whole, however it lays them out / RichLog.write calls);
  behind      — at each checkpoint: output lines the agent has not been able to emit yet (the
                loop was too busy: in a live run the agent's pipe backs up and the agent
                stalls) plus lines the view holds that the widget has not taken, in seconds at
                `--rate`; `drain` is how long after NT until the agent has emitted all it owed
                and the widget has taken all of it (given up after 10 s); `lost` counts lines
                never written (the view keeps only the last 50,000);
  key→screen  — `m` (console: cycle the responder; baseline: a binding that relabels its
                header) sent as the same Key event `pilot.press` sends, every 0.1-0.3 s; timed
                until the first frame whose text shows "responder <new mode>". Headless Textual
                builds each frame (`render_update`) but never turns it into terminal output;
                here `App._display` is wrapped to do what a terminal driver does
                (`render_segments`, written to /dev/null) and to look for the label in it.
                (`pilot.press` itself is not awaited: it then waits for the CPU to go idle,
                up to 2 s under load, which would throttle the sampling.) A press whose wait
                spans a checkpoint's collection (below) is not sampled;
  memory      — at each checkpoint, and its change since the one before: RSS growth over the
                process's RSS just before the burst (its peak too, sampled every 0.1 s), and the
                live Python allocations (`sys.getallocatedblocks()` after a full collection: the
                loop stands still for it, 0.1-0.3 s); the rows the widget (and the lines the
                view) hold. Live blocks flat while RSS creeps is the allocator keeping freed
                memory, not objects kept. `--tracemalloc` adds the traced heap's peak, but slows
                both contenders 10-30x: its rates, latencies and line counts are then those of
                a much smaller burst (use it to compare the heap per line). `--census` lists the
                kinds of object (those the garbage collector tracks) whose count changed most
                between the last two checkpoints: what still grows.
What still grows in the console once its buffers are full is bounded elsewhere: Textual's and
Rich's own caches filling up (`Strip.render_ansi`: the ANSI codes of 16,384 styles, which carry
each row's offset; `StylesCache.get_inner_outer`: 1,024, holding the styles of widgets gone;
Rich's cut segments, 16,384): 1-3 MiB each 10 s, until the live blocks stop growing after
about 80 s (`--seconds 20 --checkpoints 6`). It is not the allocator: pymalloc's arenas keep
1-3 MiB free, and `malloc_trim` gives back under 0.5 MiB.
`CPU` is the process's CPU time over the wall time (other processes on the machine take their
share: read `per CPU-second` beside it). Targets, reported not asserted: the full rate
sustained (nothing behind), key→screen p95 under 100 ms, memory flat between the later
checkpoints. Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = (160, 48)  # the terminal
CASES = 200
CHUNKS_PER_COMMAND = 50
POOL_LINES = 20_000  # distinct lines, cycled
TICK_S = 0.005  # the agent looks at its clock this often (when the loop lets it)
PRESS_GAP_S = (0.1, 0.3)
DRAIN_MAX_S = 10.0
CENSUS_TOP = 25  # kinds of object listed by --census
MODES = ["simulated", "human", "assisted"]

# --- the workload ------------------------------------------------------------------------------

WORDS = ["test", "build", "error", "warning", "ok", "FAILED", "passed", "src", "lib", "main",
         "util", "config", "parse", "token", "value", "index", "request", "response", "handler",
         "module", "package", "import", "return", "expected", "actual", "assert", "line",
         "column", "file", "path", "cache", "worker", "thread", "timeout", "retry", "buffer",
         "stream", "json", "field", "key"]  # fmt: skip


def make_line(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.05:
        return ""
    if r < 0.055:  # very long: minified JSON, a base64 blob, a stack of template arguments
        n = rng.randint(1_000, 12_000)
        return "".join(rng.choices('abcdefghijklmnopqrstuvwxyz0123456789{}[]":,./+=', k=n))
    n = rng.randint(120, 300) if r < 0.25 else rng.randint(20, 120)
    kind = rng.random()
    if kind < 0.3:
        head = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randint(1, 999)}: "
    elif kind < 0.6:
        head = f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{rng.randint(0, 99)} "
    else:
        head = ""
    words = [head]
    length = len(head)
    while length < n:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:n]


def make_chunks(seed: int = 7) -> list[tuple[str, int]]:
    """POOL_LINES lines cut into chunks of 1-8 KiB anywhere; each with its newline count."""
    rng = random.Random(seed)
    text = "\n".join(make_line(rng) for _ in range(POOL_LINES)) + "\n"
    chunks, i = [], 0
    while i < len(text):
        j = min(len(text), i + rng.randint(1024, 8192))
        chunks.append((text[i:j], text.count("\n", i, j)))
        i = j
    return chunks


@dataclass
class Tally:
    """What the agent emitted; `t0` is the burst's start (perf_counter)."""

    t0: float = 0.0
    output_lines: int = 0  # newlines emitted in AgentOutput
    events: int = 0
    commands: int = 0
    cases: int = 0
    score_lines: int = 0  # ScoreUpdated with done == planned (the view makes a line of it)
    running: bool = False


class Agent:
    """The synthetic agent: `produce(deliver)` paces itself on the wall clock."""

    def __init__(
        self, rate: float, duration: float, chunks: list[tuple[str, int]], case_rate: float
    ) -> None:
        from icae_tui.domain.results import CaseResult, LadderMetric, Score, SideRun, Verdict

        self.rate, self.duration, self.chunks = rate, duration, chunks
        self.case_every = 1 / case_rate if case_rate > 0 else float("inf")
        self.tally = Tally()
        self.start = asyncio.Event()
        self.case_ids = [f"hidden/p{i % 17}#{i}" for i in range(CASES)]
        verdicts = [Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.ACCEPTED, Verdict.TIME_LIMIT]
        side = SideRun(exit_code=0, stdout="ok\n", stderr="")
        self.results = [
            CaseResult(
                case_id=cid,
                split="hidden",
                pattern=f"p{i % 17}",
                command="tool",
                reason=(
                    "identical"
                    if verdicts[i % 4] is Verdict.ACCEPTED
                    else "stdout differs at line 3: expected 'ok', got 'error: bad input'"
                ),
                verdict=verdicts[i % 4],
                passed=verdicts[i % 4] is Verdict.ACCEPTED,
                metrics={LadderMetric.EXEC: 1.0},
                oracle=side,
                delivery=side,
            )
            for i, cid in enumerate(self.case_ids)
        ]
        self.Score = Score

    def prologue(self) -> list[Any]:
        from icae_tui.domain.events import CasesPlanned, PhaseChanged, RunStarted

        return [
            RunStarted(
                task_id="flood",
                task_title="A chatty agent",
                agent="scripted:flood",
                level="L1",
                responder="simulated",
                budget=3,
                prd="Build it.",
            ),
            PhaseChanged(phase="generate", detail="scripted:flood"),
            CasesPlanned(
                case_ids=self.case_ids,
                patterns=[r.pattern for r in self.results],
                splits=["hidden"] * CASES,
            ),
        ]

    async def produce(self, deliver: Callable[[Any], Any]) -> None:
        """`deliver(event)` may return an awaitable (a RunLog's emit)."""
        from icae_tui.domain.events import (
            AgentCommand,
            AgentCommandDone,
            AgentOutput,
            CaseFinished,
            ScoreUpdated,
        )

        t = self.tally

        async def send(ev: Any) -> None:
            out = deliver(ev)
            if out is not None:
                await out
            t.events += 1

        for ev in self.prologue():
            await send(ev)
        await self.start.wait()
        t.t0, t.running = time.perf_counter(), True
        await send(AgentCommand(command="make test VERBOSE=1"))
        k = 0  # chunks sent
        next_case = self.case_every
        while True:
            now = time.perf_counter() - t.t0
            while next_case <= min(now, self.duration):
                result = self.results[t.cases % CASES]
                done = t.cases % CASES + 1
                await send(CaseFinished(result=result))
                score = self.Score(done=done, planned=CASES, overall=done / CASES / 2)
                await send(ScoreUpdated(score=score))
                t.cases += 1
                t.score_lines += done == CASES
                next_case += self.case_every
            if t.output_lines < min(now, self.duration) * self.rate:  # owed: what the clock asks
                text, lines = self.chunks[k % len(self.chunks)]
                text = text[:-1] + text[-1]  # new text, as an agent's is: never held for free
                await send(AgentOutput(stream="stdout", text=text))
                t.output_lines += lines
                k += 1
                if k % CHUNKS_PER_COMMAND == 0:
                    await send(AgentCommandDone(command="make test", exit_code=0, duration_s=1.0))
                    await send(AgentCommand(command=f"pytest -x tests/ -k case_{k}"))
                    t.commands += 2
                await asyncio.sleep(0)  # one chunk per loop turn, as a stream read gives it
            elif now >= self.duration:
                break
            else:
                await asyncio.sleep(TICK_S)
        t.running = False


# --- measuring the screen ----------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()=>78]")


class ScreenWatch:
    """Does what a terminal driver does with each frame, and spots a wanted text in it."""

    def __init__(self, app: Any) -> None:
        from textual._compositor import CompositorUpdate

        self.frames = 0
        self.bytes = 0
        self.want: tuple[str, str] | None = None  # (a word that must be in the raw frame, text)
        self.seen_at = 0.0
        self.seen = asyncio.Event()
        self.sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)  # headless: builds nothing more
            if renderable is None or app._batch_count:
                return
            console = app.console
            if isinstance(renderable, CompositorUpdate):
                seq = renderable.render_segments(console)
            else:
                seq = console._render_buffer(console.render(renderable))
            self.sink.write(seq)
            self.frames += 1
            self.bytes += len(seq)
            if self.want is not None and self.want[0] in seq and self.want[1] in ANSI.sub("", seq):
                self.seen_at = time.perf_counter()
                self.want = None
                self.seen.set()

        app._display = display

    def expect(self, word: str, text: str) -> None:
        self.seen.clear()
        self.want = (word, text)


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Checkpoint:
    at_s: float
    due: int  # output lines the clock asked for
    emitted: int  # output lines the agent emitted
    written: int  # lines handed to the widget
    backlog: int  # lines the view holds that the widget has not taken
    held_widget: int
    held_view: int
    rss_growth: int
    rss_peak_growth: int
    traced_peak: int | None
    py_blocks: int  # sys.getallocatedblocks() after a full collection: live allocations
    frames: int
    cpu_s: float
    presses: int  # key presses sent so far
    gc_s: float  # the full collection taken for py_blocks


@dataclass
class Result:
    name: str
    rate: float
    seconds: float
    checkpoints: list[Checkpoint] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    unseen: int = 0  # presses still not on screen when the burst ended
    drain_s: float | None = None
    lost: int = 0
    dropped: int = 0
    frame_bytes: int = 0
    skipped: int = 0  # presses whose wait spanned a checkpoint's collection: not sampled
    census: list[tuple[str, int, int]] = field(default_factory=list)  # (type, growth, count)


class Probe:
    """What differs between the contenders: counts, the key and its visible effect."""

    written = 0

    def backlog(self) -> int:
        return 0

    def held(self) -> tuple[int, int]:
        return 0, 0

    def next_label(self) -> str:
        raise NotImplementedError

    def lost(self, tally: Tally) -> int:
        return 0

    def dropped(self) -> int:
        return 0


def census() -> collections.Counter[str]:
    """The objects the garbage collector tracks (containers, not strings), by type."""
    return collections.Counter(
        f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects()
    )


async def drive(app: Any, agent: Agent, probe: Probe, args: argparse.Namespace) -> Result:
    import tracemalloc

    from textual import events

    watch = ScreenWatch(app)
    res = Result(probe.__class__.__name__, args.rate, args.seconds)
    rss0 = rss()
    peak = [rss0]
    if args.tracemalloc:
        tracemalloc.start()
    traced0 = tracemalloc.get_traced_memory()[0] if args.tracemalloc else 0
    cpu0 = time.process_time()
    agent.start.set()
    while not agent.tally.running:
        await asyncio.sleep(0.001)
    t0 = agent.tally.t0
    end = t0 + args.checkpoints * args.seconds
    collections_at: list[tuple[float, float]] = []  # the checkpoints' collections: (from, to)
    counts: list[collections.Counter[str]] = []

    async def sample() -> None:
        while True:
            peak[0] = max(peak[0], rss())
            await asyncio.sleep(0.1)

    async def press() -> None:
        rng = random.Random(3)
        driver = app._driver
        while time.perf_counter() < end:
            await asyncio.sleep(rng.uniform(*PRESS_GAP_S))
            if time.perf_counter() >= end:
                return
            label = probe.next_label()
            watch.expect(label.split()[-1], label)
            key = events.Key("m", "m")
            key.set_sender(app)
            pressed = time.perf_counter()
            driver.send_message(key)  # what pilot.press does first
            res.unseen = 1
            await watch.seen.wait()
            res.unseen = 0
            if any(a < watch.seen_at and pressed < b for a, b in collections_at):
                res.skipped += 1  # the loop stood still for a checkpoint
            else:
                res.latencies_ms.append((watch.seen_at - pressed) * 1000)

    def checkpoint() -> Checkpoint:
        now = time.perf_counter()
        t = agent.tally
        widget, view = probe.held()
        current = rss()
        peak[0] = max(peak[0], current)
        traced = tracemalloc.get_traced_memory()[1] - traced0 if args.tracemalloc else None
        written, backlog, frames, cpu = (
            probe.written,
            probe.backlog(),
            watch.frames,
            time.process_time(),
        )
        gc.collect()  # what is left is live: garbage in cycles would blur the growth
        blocks = sys.getallocatedblocks()
        if args.census:
            counts.append(census())
        collections_at.append((now, time.perf_counter()))
        return Checkpoint(
            at_s=now - t0, due=int(min(now - t0, args.checkpoints * args.seconds) * args.rate),
            emitted=t.output_lines, written=written, backlog=backlog,
            held_widget=widget, held_view=view, rss_growth=current - rss0,
            rss_peak_growth=peak[0] - rss0, traced_peak=traced, py_blocks=blocks,
            frames=frames, cpu_s=cpu - cpu0, presses=len(res.latencies_ms) + res.skipped,
            gc_s=time.perf_counter() - now,
        )  # fmt: skip

    sampler = asyncio.create_task(sample())
    presser = asyncio.create_task(press())
    for k in range(1, args.checkpoints + 1):
        await asyncio.sleep(max(0.0, t0 + k * args.seconds - time.perf_counter()))
        res.checkpoints.append(checkpoint())
    presser.cancel()
    if len(counts) >= 2:
        grown = counts[-1].copy()
        grown.subtract(counts[-2])
        top = sorted(grown.items(), key=lambda kv: -abs(kv[1]))[:CENSUS_TOP]
        res.census = [(kind, n, counts[-1][kind]) for kind, n in top if n]
    while (agent.tally.running or probe.backlog()) and time.perf_counter() - end < DRAIN_MAX_S:
        await asyncio.sleep(0.01)
    if not (agent.tally.running or probe.backlog()):
        res.drain_s = time.perf_counter() - end
    await asyncio.sleep(0.3)  # the last flush and frame
    sampler.cancel()
    res.lost = probe.lost(agent.tally)
    res.dropped = probe.dropped()
    res.frame_bytes = watch.bytes
    if args.tracemalloc:
        tracemalloc.stop()
    return res


# --- the contenders ----------------------------------------------------------------------------


class Unrecorded:
    """The record of a run without a store (a `RunLog` without its store): nothing kept."""

    events: list[Any] = []


class FloodRun:
    """Enough of `icae_tui.runs.run.Run` for a LiveSource: the agent is its job. Its `log` is a
    real `RunLog` with `--store`; without, the events are kept nowhere (only the displays
    are measured), as the real run's log would keep them within the run's bound."""

    def __init__(self, agent: Agent, store_dir: Path | None) -> None:
        self.run_id = "bench-run"
        self.agent = agent
        self.displays: list[Callable[[Any], None]] = []
        self.log: Any = Unrecorded()
        self.runlog: Any = None
        if store_dir is not None:
            from icae_tui.runs.log import RunLog
            from icae_tui.store.database import RunStore

            self.log = self.runlog = RunLog(self.run_id, RunStore(store_dir / "runs.db"))
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(self, display: Callable[[Any], None]) -> None:
        if self.runlog is not None:
            self.runlog.subscribe(display)
        else:
            self.displays.append(display)

    def emit(self, ev: Any) -> Any:
        if self.runlog is not None:
            return self.runlog.emit(ev)
        for display in self.displays:
            display(ev)
        return None

    async def execute(self) -> None:
        await self.agent.produce(self.emit)

    def answer(self, question_id: int, text: str) -> bool:
        return False

    def set_responder(self, mode: str) -> bool:
        """As the real run does: the switch is recorded by an event emitted soon after."""
        from icae_tui.domain.events import ResponderChanged

        async def emit() -> None:
            out = self.emit(ResponderChanged(mode=mode))
            if out is not None:
                await out

        task = asyncio.get_running_loop().create_task(emit())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True


async def run_console(args: argparse.Namespace, agent: Agent, tmp: Path) -> Result:
    from textual.screen import Screen

    from icae_tui.catalog.loader import Catalog
    from icae_tui.display.sources import LiveSource
    from icae_tui.store.database import RunStore
    from icae_tui.ui.app import IcaeApp
    from icae_tui.ui.screens.run import RunScreen

    SHOWN_ELSEWHERE = {"case", "score"}  # the results table and the score line

    class BenchApp(IcaeApp):
        def get_default_screen(self) -> Screen[Any]:  # type: ignore[override]
            return Screen()  # the task list would sit hidden under the run screen anyway

    run = FloodRun(agent, tmp if args.store else None)
    app = BenchApp(catalog=Catalog(), store=RunStore(tmp / "app.db"))

    class Console(Probe):
        def __init__(self, screen: RunScreen) -> None:
            self.screen = screen
            view = screen.view
            self.before = screen.trace._cursor  # the prologue's lines, written at mount
            trace_since = view.trace_since

            def counted(cursor: int) -> Any:
                """The lines the trace takes to write, whole (however it lays them out)."""
                lines, new = trace_since(cursor)
                self.written += sum(line.kind not in SHOWN_ELSEWHERE for line in lines)
                return lines, new

            view.trace_since = counted  # type: ignore[method-assign]

        def backlog(self) -> int:
            return self.screen.trace.pending

        def held(self) -> tuple[int, int]:
            return len(self.screen.trace.rows), len(self.screen.view.trace)

        def next_label(self) -> str:
            return f"responder {self.screen.operator.next_mode()}"

        def lost(self, tally: Tally) -> int:
            shown_elsewhere = tally.cases + tally.score_lines  # case and score lines
            taken = self.screen.view.trace_total - self.before - shown_elsewhere
            return taken - self.written - self.backlog()

        def dropped(self) -> int:
            d = self.screen.view.dropped
            return d.count if d is not None else 0

    async with app.run_test(size=SIZE) as pilot:
        screen = RunScreen(LiveSource(run), artifacts=tmp)
        await app.push_screen(screen)
        await pilot.pause()
        while screen.view.started is None or not screen.running:
            await asyncio.sleep(0.01)
        await pilot.pause()
        return await drive(app, agent, Console(screen), args)


async def run_richlog(args: argparse.Namespace, agent: Agent, tmp: Path) -> Result:
    from textual.app import App, ComposeResult
    from textual.binding import Binding
    from textual.widgets import Footer, RichLog, Static

    from icae_tui.domain.events import (
        AgentCommand,
        AgentCommandDone,
        AgentOutput,
        CaseFinished,
        ResponderChanged,
    )

    run = FloodRun(agent, tmp if args.store else None)

    class Naive(App[None]):
        CSS = "#hdr { height: 1; } RichLog { height: 1fr; border: round $primary; }"
        BINDINGS = [Binding("m", "cycle", "Responder")]

        def __init__(self) -> None:
            super().__init__()
            self.mode = MODES[0]
            self.partial: dict[str, str] = {}
            self.written = 0

        def compose(self) -> ComposeResult:
            yield Static(f"flood   responder {self.mode}", id="hdr")
            yield RichLog(id="log")
            yield Footer()

        def on_mount(self) -> None:
            self.log_widget = self.query_one(RichLog)
            self.log_widget.focus()
            run.subscribe(self.deliver)
            self.run_worker(run.execute(), exit_on_error=False)

        def line(self, text: str) -> None:
            self.log_widget.write(text)
            self.written += 1

        def deliver(self, ev: Any) -> None:
            match ev:
                case AgentOutput():
                    *lines, rest = (self.partial.pop(ev.stream, "") + ev.text).split("\n")
                    for part in lines:
                        self.line("  out│ " + part)
                    if rest:
                        self.partial[ev.stream] = rest
                case AgentCommand():
                    self.line("$ " + ev.command)
                case AgentCommandDone():
                    self.line(f"  exit {ev.exit_code} in {ev.duration_s:.1f}s")
                case CaseFinished():
                    self.line(f"{ev.result.verdict.value} {ev.result.case_id}")
                case ResponderChanged():
                    self.line(f"responder → {ev.mode}")

        def next_mode(self) -> str:
            return MODES[(MODES.index(self.mode) + 1) % len(MODES)]

        def action_cycle(self) -> None:
            self.mode = self.next_mode()
            self.query_one("#hdr", Static).update(f"flood   responder {self.mode}")
            run.set_responder(self.mode)

    app = Naive()

    class Baseline(Probe):
        @property  # type: ignore[override]
        def written(self) -> int:
            return app.written

        def held(self) -> tuple[int, int]:
            return len(app.log_widget.lines), 0

        def next_label(self) -> str:
            return f"responder {app.next_mode()}"

        def lost(self, tally: Tally) -> int:
            return 0

    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        while agent.tally.events < 3:
            await asyncio.sleep(0.01)
        await pilot.pause()
        return await drive(app, agent, Baseline(), args)


def child(args: argparse.Namespace) -> None:
    os.environ.setdefault("COLORTERM", "truecolor")  # a modern terminal, not 16 colours
    chunks = make_chunks()
    agent = Agent(args.rate, args.checkpoints * args.seconds, chunks, args.case_rate)
    run = {"console": run_console, "richlog": run_richlog}[args.child]
    with tempfile.TemporaryDirectory(prefix="icae-bench-") as tmp:
        res = asyncio.run(run(args, agent, Path(tmp)))
    res.name = args.child
    print(json.dumps(asdict(res)))


# --- the report --------------------------------------------------------------------------------


def spawn(name: str, args: argparse.Namespace) -> Result | str:
    cmd = [sys.executable, __file__, "--child", name, "--seconds", str(args.seconds),
           "--rate", str(args.rate), "--case-rate", str(args.case_rate),
           "--checkpoints", str(args.checkpoints)]  # fmt: skip
    cmd += ["--store"] * args.store + ["--tracemalloc"] * args.tracemalloc
    cmd += ["--census"] * args.census
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0 or not proc.stdout.strip():
        return f"{name} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}"
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["checkpoints"] = [Checkpoint(**c) for c in data["checkpoints"]]
    data["census"] = [tuple(c) for c in data["census"]]
    return Result(**data)


def mib(n: int | None) -> str:
    return "—" if n is None else f"{n / 2**20:,.0f} MiB"


def at(k: int) -> str:
    """The `k`th checkpoint's name: T, 2T, 3T, ..."""
    return "T" if k == 1 else f"{k}T"


def per_checkpoint(values: list[str], unit: str = "") -> str:
    return " / ".join(values) + (f" {unit}" if unit else "")


def changes(values: list[int], show: Callable[[int], str]) -> str:
    """The change between consecutive checkpoints."""
    return " / ".join(show(b - a) for a, b in zip(values, values[1:], strict=False)) or "—"


def signed_mib(n: int) -> str:
    return f"{n / 2**20:+,.1f}"


def signed_k(n: int) -> str:
    return f"{n / 1e3:+,.1f}k"


def rows(r: Result) -> list[str]:
    cps = r.checkpoints
    a, z = cps[0], cps[-1]
    lat = sorted(r.latencies_ms)
    p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))] if lat else None

    def behind(c: Checkpoint) -> str:
        return f"{((c.due - c.emitted) + c.backlog) / r.rate:.1f}"

    def ms(x: float | None) -> str:
        return "—" if x is None else f"{x:,.0f} ms"

    rss = [c.rss_growth for c in cps]
    blocks = [c.py_blocks for c in cps]
    return [
        f"{a.emitted / a.at_s:,.0f} /s",
        f"{a.written / a.at_s:,.0f} /s",
        f"{z.written / z.at_s:,.0f} /s",
        f"{z.written / z.cpu_s:,.0f} /CPU-s",
        per_checkpoint([behind(c) for c in cps], "s"),
        f"> {DRAIN_MAX_S:.0f} s" if r.drain_s is None else f"{r.drain_s:.1f} s",
        f"{r.lost:,}" + (f" (+{r.dropped:,} ev dropped)" if r.dropped else ""),
        ms(statistics.median(lat) if lat else None),
        ms(p95),
        ms(lat[-1] if lat else None),
        f"{len(lat)}"
        + (f" (+{r.unseen} unseen)" if r.unseen else "")
        + (f" (+{r.skipped} at checkpoints)" if r.skipped else ""),
        per_checkpoint([f"{n / 2**20:,.0f}" for n in rss], "MiB"),
        changes(rss, signed_mib) + " MiB",
        mib(z.rss_peak_growth),
        per_checkpoint([f"{n / 1e6:.3f}M" for n in blocks]),
        changes(blocks, signed_k),
        per_checkpoint([f"{c.held_widget:,}" for c in cps]),
        per_checkpoint([f"{c.held_view:,}" for c in cps]),
        per_checkpoint([mib(c.traced_peak) for c in cps]),
        f"{z.frames / z.at_s:.0f}",
        f"{100 * z.cpu_s / z.at_s:.0f} %",
    ]


def report(results: list[Result], args: argparse.Namespace) -> None:
    n = args.checkpoints
    cps = " / ".join(at(k) for k in range(1, n + 1))
    steps = " / ".join(f"{at(k)}→{at(k + 1)}" for k in range(1, n)) or "—"
    last = at(n)
    labels = [
        "agent emitted (0-T)",
        "written to widget (0-T)",
        f"written to widget (0-{last})",
        f"  per CPU-second (0-{last})",
        f"behind at {cps}",
        f"drain after {last}",
        "lines lost",
        "key→screen median",
        "key→screen p95",
        "key→screen max",
        "key presses sampled",
        f"RSS growth at {cps}",
        f"  change {steps}",
        f"RSS peak growth (0-{last})",
        f"live Python blocks at {cps}",
        f"  change {steps}",
        f"rows in widget at {cps}",
        f"lines in view at {cps}",
        f"tracemalloc peak at {cps}",
        "frames/s",
        f"CPU (of one core, 0-{last})",
    ]
    targets = [f"{args.rate:,.0f} /s", f"{args.rate:,.0f} /s", f"{args.rate:,.0f} /s", "", "0",
               "", "0", "", "< 100 ms", "", "", "", "≈ 0 after T", "", "", "≈ 0 after T", "",
               "", "", "", ""]  # fmt: skip
    names = {"console": "console (RunScreen)", "richlog": "RichLog.write per line"}
    cols = [[names[r.name], *rows(r)] for r in results]
    left = ["", *labels]
    right = ["target", *targets]
    widths = [max(map(len, c)) for c in [left, *cols, right]]
    print(
        f"rate {args.rate:,.0f} lines/s, T = {args.seconds:g} s (burst {n * args.seconds:g} s), "
        f"{SIZE[0]}x{SIZE[1]}{', through RunLog + store' if args.store else ''}"
        f"{', tracemalloc on (slower)' if args.tracemalloc else ''}"
    )
    for i in range(len(left)):
        cells = [left[i], *(c[i] for c in cols), right[i]]
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w)
                        for j, (cell, w) in enumerate(zip(cells, widths, strict=True))))  # fmt: skip
    for r in results:
        if r.census:
            print(
                f"\n{names[r.name]}: objects by type, growth {at(n - 1)}→{last} (count at {last})"
            )
            for kind, grown, count in r.census:
                print(f"  {grown:+9,d} {count:10,d}  {kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="T: between checkpoints")
    parser.add_argument("--checkpoints", type=int, default=3, help="N: the burst lasts N x T")
    parser.add_argument("--rate", type=float, default=20_000.0, help="output lines per second")
    parser.add_argument("--case-rate", type=float, default=20.0, help="cases finished per second")
    parser.add_argument("--quick", action="store_true", help="a smoke check: T = 2 s")
    parser.add_argument("--store", action="store_true", help="events through RunLog + SQLite")
    parser.add_argument("--tracemalloc", action="store_true", help="trace the Python heap")
    parser.add_argument("--census", action="store_true", help="live objects by type (growth)")
    parser.add_argument("--only", choices=["console", "richlog"])
    parser.add_argument("--child", choices=["console", "richlog"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.checkpoints < 1:
        parser.error("--checkpoints: at least 1")
    if args.quick:
        args.seconds = 2.0
    if args.child:
        child(args)
        return
    results = []
    for name in [args.only] if args.only else ["console", "richlog"]:
        res = spawn(name, args)  # one after the other: never two at once
        if isinstance(res, str):
            print(res, file=sys.stderr)
        else:
            results.append(res)
    if results:
        report(results, args)


if __name__ == "__main__":
    main()
