"""Builders for synthetic events and results, a fake run for the run screen, the console under
test (keeping what it notified) and the waits a Pilot test needs."""

from __future__ import annotations

import asyncio
import json

from textual.command import CommandList, CommandPalette
from textual.widgets import Static

from icae_tui.catalog.loader import Catalog
from icae_tui.display.view import RunView
from icae_tui.display.wording import plain
from icae_tui.domain.agent import Limits
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentStopped,
    AgentSubmitted,
    AgentWrote,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    Event,
    EventsDropped,
    ModelCallMade,
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
from icae_tui.domain.results import (
    LADDER_METRICS,
    CaseResult,
    FileChange,
    Score,
    SideRun,
    Verdict,
)
from icae_tui.domain.states import StopReason
from icae_tui.domain.task import Level
from icae_tui.gateway import InfraFailure, ModelCall
from icae_tui.runs.run import RunOutcome
from icae_tui.store.database import RunStore
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.trace import SHOWN_ELSEWHERE
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.responders import Desk, SimulatedUser
from tests.polling import Sleeps

CASE_IDS = ["public/upper#0", "hidden/ops#0", "hidden/ops#1", "enhanced/edge#0"]


def side(exit_code: int | None = 0, stdout: str = "ok\n", stderr: str = "") -> SideRun:
    return SideRun(exit_code=exit_code, stdout=stdout, stderr=stderr, stdout_bytes=len(stdout))


def result(case_id: str, verdict: Verdict = Verdict.ACCEPTED, reason: str = "identical",
           delivery_exit: int | None = 0, delivery_stdout: str = "ok\n") -> CaseResult:  # fmt: skip
    passed = verdict is Verdict.ACCEPTED
    return CaseResult(
        case_id=case_id,
        split=case_id.split("/")[0],
        pattern=case_id.split("/")[1].split("#")[0],
        command="mini",
        verdict=verdict,
        reason=reason,
        metrics={"exec": 1.0, "sp": passed, "em": passed, "fm": passed},
        passed=passed,
        oracle=side(),
        delivery=side(delivery_exit, delivery_stdout),
    )


def started(responder: str = "simulated", **extra) -> RunStarted:
    fields = {
        "run_id": "test-run",
        "task_id": "mini",
        "task_title": "Mini [bold]tool[/]",
        "agent": "scripted:good",
        "level": "L1",
        "responder": responder,
        "budget": 3,
        "prd": "Build it.",
    }
    return RunStarted(**(fields | extra))


def score(done: int, planned: int, overall: float) -> Score:
    return Score(
        done=done, planned=planned, overall=overall, macro=overall,
        metrics=[m for m in LADDER_METRICS if m.kind.aggregated],
        rates={"exec": 1.0, "sp": overall, "em": overall, "fm": overall},
    )  # fmt: skip


HOSTILE_LINE = "A" * 100_000

HOSTILE_OUTPUT = (
    "\x1b[31mred\x1b[0m and [bold]markup[/] and [link=http://x]link[/link]\n"
    "nul\x00byte and bell\x07 and cr\rover\n" + HOSTILE_LINE + "\n" + "partial line without newline"
)


def stream() -> list:
    """A whole run's worth of events, hostile output included."""
    return [
        started(),
        PhaseChanged(phase="generate", detail="scripted:good"),
        AgentSaid(text="Let me [bold]ask[/] first."),
        QuestionAsked(question_id=1, text="How are [red]errors[/] reported?", remaining_before=3),
        QuestionAnswered(question_id=1, text="Print error=x.", record_ids=["C001"], remaining=2),
        QuestionAsked(question_id=2, text="Anything else?", remaining_before=2),
        QuestionAnswered(question_id=2, text="No idea.", fallback=True, remaining=1),
        QuestionAsked(question_id=3, text="And now?", remaining_before=0),
        QuestionAnswered(
            question_id=3, text="Budget spent.", over_budget=True, responder="budget", remaining=0
        ),  # fmt: skip
        AgentCommand(command="cat [bold]x[/]"),
        AgentOutput(stream="stdout", text=HOSTILE_OUTPUT[:50]),
        AgentOutput(stream="stdout", text=HOSTILE_OUTPUT[50:]),
        AgentOutput(stream="stderr", text="warn: \x1b[2Jcleared?\n"),
        AgentCommandDone(command="cat x", exit_code=0, duration_s=0.1),
        PhaseChanged(phase="evaluate", detail="4 cases"),
        CasesPlanned(case_ids=CASE_IDS),
    ]


# --- a recorded run: fixed ids and clock, as a store holds it ------------------------------

RECORDED_ID = "20240101-000000-c0ffee"
RECORDED_T0 = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC
PATTERNS = ["upper", "ops", "ops", "edge"]
SPLITS = ["public", "hidden", "hidden", "enhanced"]


def stamp(events: list[Event], run_id: str = RECORDED_ID, t0: float = RECORDED_T0) -> list:
    """Give events the run id, sequence numbers and timestamps (3 s apart) a store would."""
    for i, ev in enumerate(events):
        ev.run_id, ev.seq, ev.ts = run_id, i + 1, t0 + 3.0 * i
    return events


def recorded_run() -> list:
    """A whole run: questions answered by the simulated user, by the operator with an edited
    draft, and past the budget; a command with output; four cases; a final score."""
    cases = [
        result("public/upper#0"),
        result("hidden/ops#0", Verdict.WRONG_ANSWER, "stdout differs at line 1", 2, "error\n"),
        result("hidden/ops#1"),
        result("enhanced/edge#0", Verdict.TIME_LIMIT, "delivery timed out after 10s", None),
    ]
    events = [
        started(task_records=["C001", "C002", "C003"], generic_records=["ARCH001"]),
        PhaseChanged(phase="prepare", detail="images"),
        Progress(message="agent image icae-mini-agent ready"),
        PhaseChanged(phase="generate", detail="scripted:good"),
        AgentSaid(text="Let me [bold]ask[/] first."),
        QuestionAsked(
            question_id=1,
            text=Q_UNKNOWN,
            remaining_before=3,
            draft="Print error=unknown_op and exit 2.",
            draft_records=["C001"],
        ),
        QuestionAnswered(
            question_id=1,
            text="Print error=unknown_op and exit 2.",
            record_ids=["C001"],
            remaining=2,
            latency_s=0.012,
        ),
        ResponderChanged(mode="assisted"),
        QuestionAsked(
            question_id=2,
            text=Q_COUNT,
            remaining_before=2,
            mode="assisted",
            draft="Print words=<n>.",
            draft_records=["C002"],
        ),
        QuestionAnswered(
            question_id=2,
            text="Print words=<n>, then a newline.",
            responder="assisted",
            edited=True,
            remaining=1,
            latency_s=4.25,
        ),
        QuestionAsked(question_id=3, text=Q_OTHER, remaining_before=1),
        QuestionAnswered(
            question_id=3,
            text="That is not specified; use your judgement.",
            fallback=True,
            remaining=0,
            latency_s=0.008,
        ),
        QuestionAsked(question_id=4, text="And the logo font?", remaining_before=0, mode="budget"),
        QuestionAnswered(
            question_id=4,
            text="The question budget is spent.",
            over_budget=True,
            responder="budget",
        ),
        QuestionsRefused(count=2, chars=41, first_id=5, last_id=6, sample="[red]and the"),
        AgentWrote(path="mini.py", size=812),
        AgentCommand(command="python3 mini.py upper <<< 'hi'"),
        AgentOutput(stream="stdout", text="HI\nsecond li"),
        AgentOutput(stream="stdout", text="ne\n"),
        AgentOutput(stream="stderr", text="warn: \x1b[2Jcleared?\n"),
        AgentCommandDone(command="python3 mini.py", exit_code=0, duration_s=0.21, left_running=1),
        AgentSubmitted(message="Done: mini.py handles upper and count."),
        PhaseChanged(phase="freeze"),
        PhaseChanged(phase="build"),
        BuildChecked(ok=True, exit_code=0, reason="build command exited 0"),
        PhaseChanged(phase="evaluate", detail="4 cases"),
        CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
    ]
    for i, r in enumerate(cases, 1):
        passed = sum(c.passed for c in cases[:i])
        events += [CaseFinished(result=r), ScoreUpdated(score=score(i, 4, passed / 4))]
    events += [
        PhaseChanged(phase="score"),
        EventsDropped(
            count=3,
            payload_bytes=420,
            by_kind={"agent_output": 3},
            max_events=200_000,
            max_bytes=64 << 20,
            final=True,
        ),
        RunFinished(
            status="completed",
            score=score(4, 4, 0.5),
            report_path=f"/runs/{RECORDED_ID}/report.json",
        ),
    ]
    return stamp(events)


# --- a fake Run ------------------------------------------------------------------------


class FakeRun:
    """Enough of `icae_tui.runs.run.Run` for a live source (no config: displays learn everything
    from the events), with the real desk and clarification channel over the mini task's L1
    records; execute() is scripted per test."""

    def __init__(self, task, responder: str = "simulated", script=None, auto=None) -> None:
        self.run_id = "fake-run"
        self.subscribers = []
        self.script = script
        auto = auto or SimulatedUser(task.user_agent[Level.L1].oracle_data)
        self.desk = Desk(auto, responder)
        self.channel = ClarificationChannel(self.desk, task.spec.budget, self._emit)
        self.switches: list[str] = []  # set_responder calls, in order
        self.sent: list[tuple[int, str]] = []  # answer calls, in order
        self.leftovers_removed: list[str] = []  # what the final sweep removed (Run's field)

    def subscribe(self, callback) -> None:
        self.subscribers.append(callback)

    def emit(self, ev) -> None:
        for callback in self.subscribers:
            callback(ev)

    async def _emit(self, ev) -> None:
        self.emit(ev)

    async def execute(self) -> RunOutcome:
        return await self.script(self)

    def answer(self, question_id: int, text: str) -> bool:
        self.sent.append((question_id, text))
        return self.desk.answer(question_id, text)

    def set_responder(self, mode: str) -> None:
        self.switches.append(mode)
        if mode != self.desk.mode:
            self.desk.set_mode(mode)
            self.emit(ResponderChanged(mode=mode))


def finish(run: FakeRun) -> RunOutcome:
    run.emit(CasesPlanned(case_ids=["public/upper#0"]))
    run.emit(CaseFinished(result=result("public/upper#0")))
    run.emit(RunFinished(status="completed", score=score(1, 1, 1.0)))
    return RunOutcome(run.run_id, "completed", score(1, 1, 1.0))


Q_UNKNOWN = "How should unknown operations be reported?"  # matches C001 of the mini task
Q_COUNT = "How is the word count formatted?"  # matches C002
Q_OTHER = "What colour is the logo?"  # matches nothing: fallback


async def until(pilot, condition, timeout: float = 10.0) -> None:
    """Let the app run until `condition()` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out waiting for the screen"
        await pilot.pause(0.02)
    await pilot.pause()  # let focus and layout settle


def quiet(app) -> bool:
    """Nothing left for the shown screen to do: every node's messages and callbacks handled,
    no layout, repaint or after-refresh callback pending, no worker thread at work."""
    screen = app.screen
    for node in (app, *screen.walk_children(with_self=True)):
        if node.message_queue_size or node._next_callbacks or node._pending_message:
            return False
    if screen._layout_required or screen._repaint_required or screen._dirty_widgets:
        return False
    if screen._callbacks:
        return False
    return not any(
        w.is_running and getattr(w, "_thread_worker", False) for w in app.workers
    )


async def settled(pilot, timeout: float = 30.0) -> None:
    """Wait until the screen is drawn as its state says: the run screen's view flushed (its
    timer would draw it at the next tick), then `quiet` twice in a row with every message
    queued in between handled. A condition on the app's own state, never on time or CPU."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    calm = 0
    while calm < 2:
        assert loop.time() < deadline, "the screen never settled"
        screen = pilot.app.screen
        if isinstance(screen, RunScreen) and screen.is_attached:
            screen.flush()
        await pilot._wait_for_screen()
        screen = pilot.app.screen
        screen._on_timer_update()  # apply a pending layout now, as its idle timer would
        calm = calm + 1 if quiet(pilot.app) else 0
        await asyncio.sleep(0)  # let other tasks (workers on the loop) take their turn


async def press_settled(pilot, *keys: str) -> None:
    """Each key once the screen has settled after the one before: a key that opens a screen
    (Enter on a past run) is followed by keys meant for that screen, which a loaded machine
    could deliver before it was up (seen: `end` lost, the replay pictured mid-run)."""
    for key in keys:
        await pilot.press(key)
        await settled(pilot)


async def replayed_to_end(pilot) -> None:
    """The latest past run opened from the history and shown at its end (End): waited for
    until the replay has delivered its last event and the view holds the run's finish — End
    seeks in the replay's worker, after the key is handled (seen: a picture taken mid-run)."""
    from icae_tui.ui.screens.replay import ReplayScreen

    await press_settled(pilot, "h", "enter", "end")

    def at_end() -> bool:
        screen = pilot.app.screen
        return (
            isinstance(screen, ReplayScreen)
            and screen.replay.finished
            and screen.view.finished is not None
        )

    await until(pilot, at_end, timeout=120.0)
    await settled(pilot)


# --- a recorded run of a model agent: its limits, its calls, their recording -----------------

MODEL_RUN_ID = "20240101-010000-m0de15"
MODEL_LIMITS = Limits(
    max_steps=10, max_seconds=600, max_model_calls=4, max_tokens=2000, max_cost_usd=0.05
)
HOSTILE_REPLY = "All [bold]done[/bold] \x1b[31mred\x1b[0m and [link=http://x]link[/link]"


def model_run() -> list:
    """A model agent's run: three calls (the second retried twice upstream, the third refused
    at the cost limit), the agent stopped at it; steps 3/10, calls 3/4, tokens 1.8k/2k (warn),
    cost $0.051/$0.05 (error)."""
    events = [
        started(agent="model:local", limits=MODEL_LIMITS, run_id=MODEL_RUN_ID),
        PhaseChanged(phase="prepare", detail="images"),
        PhaseChanged(phase="generate", detail="model:local"),
        ModelCallMade(
            index=1, call_kind="ok", model="qwen-[bold]coder[/]", status=200, attempts=1,
            tokens_in=900, tokens_out=100, cost=0.03, latency_s=1.25,
            finish_reason="tool_calls", tool_calls=["bash"],
        ),
        AgentCommand(command="ls"),
        AgentOutput(stream="stdout", text="mini.py\n"),
        AgentCommandDone(command="ls", exit_code=0, duration_s=0.05),
        ModelCallMade(
            index=2, call_kind="ok", model="qwen-[bold]coder[/]", status=200, attempts=3,
            infra_failures=2, tokens_in=700, tokens_out=80, cost=0.021, latency_s=3.5,
            finish_reason="stop",
        ),
        AgentSaid(text=HOSTILE_REPLY),
        ModelCallMade(
            index=3, call_kind="limit", model="qwen-[bold]coder[/]", status=429,
            error="the run's cost limit of $0.05 is reached", stop_reason="max_cost_usd",
        ),
        AgentStopped(reason=StopReason.MODEL_LIMIT, detail="cost limit reached", steps=3),
        PhaseChanged(phase="freeze"),
        PhaseChanged(phase="build"),
        BuildChecked(ok=True, exit_code=0, reason="build command exited 0"),
        PhaseChanged(phase="evaluate", detail="1 case"),
        CasesPlanned(case_ids=["public/upper#0"], patterns=["upper"], splits=["public"]),
        CaseFinished(result=result("public/upper#0")),
        ScoreUpdated(score=score(1, 1, 1.0)),
        RunFinished(status="completed", score=score(1, 1, 1.0)),
    ]  # fmt: skip
    return stamp(events, MODEL_RUN_ID, RECORDED_T0 + 3600)


SYSTEM = {"role": "system", "content": "You are a coding agent. " + "Rules. " * 40}
PRD_MESSAGE = {"role": "user", "content": "Build mini: upper and count."}
LS_CALL = {"id": "call_1", "type": "function",
           "function": {"name": "bash", "arguments": '{"command": "ls"}'}}  # fmt: skip


def model_recording() -> list[ModelCall]:
    """model_calls.jsonl of `model_run`, but for its third call (not recorded)."""
    first = {"model": "qwen", "messages": [SYSTEM, PRD_MESSAGE], "tools": [{"type": "function"}]}
    second = {
        "model": "qwen",
        "messages": [
            SYSTEM,
            PRD_MESSAGE,
            {"role": "assistant", "content": None, "tool_calls": [LS_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "mini.py\n"},
        ],
    }
    reply_1 = {"choices": [{"message": {"role": "assistant", "content": None,
                                        "tool_calls": [LS_CALL]},
                            "finish_reason": "tool_calls"}]}  # fmt: skip
    reply_2 = {"choices": [{"message": {"role": "assistant", "content": HOSTILE_REPLY},
                            "finish_reason": "stop"}]}  # fmt: skip
    t0 = RECORDED_T0 + 3600
    return [
        ModelCall(
            index=1, kind="ok", started_at=t0 + 7, latency_s=1.25, model="qwen",
            upstream_model="qwen-[bold]coder[/]", message_count=2, tools_count=1, status=200,
            upstream_status=200, attempts=1, finish_reason="tool_calls", tool_calls=["bash"],
            tokens_in=900, tokens_out=100, cost=0.03, request_body=json.dumps(first),
            response_body=json.dumps(reply_1),
        ),
        ModelCall(
            index=2, kind="ok", started_at=t0 + 19, latency_s=3.5, model="qwen",
            upstream_model="qwen-[bold]coder[/]", message_count=4, status=200,
            upstream_status=200, attempts=3, finish_reason="stop", tokens_in=700,
            tokens_out=80, cost=0.021, request_body=json.dumps(second),
            response_body=json.dumps(reply_2),
            infra_failures=[
                InfraFailure(attempt=1, status=503, error="Service Unavailable", waited_s=0.5),
                InfraFailure(attempt=2, error="connection reset", waited_s=1.0),
            ],
        ),
    ]  # fmt: skip


# --- the case detail's failing case -------------------------------------------------------------

DETAIL_CASE = "hidden/ops#0"
HOSTILE_MARKUP = "\x1b[31mred\x1b[0m [bold]markup[/] [link=http://x]l[/link]"


def side_run(stdout: str, exit_code: int | None = 0, stderr: str = "", **extra) -> SideRun:
    """One side's run of a case, its byte counts those of its text."""
    return SideRun(
        exit_code=exit_code, stdout=stdout, stderr=stderr,
        stdout_bytes=len(stdout.encode()), stderr_bytes=len(stderr.encode()), **extra,
    )  # fmt: skip


def wrong(**extra) -> CaseResult:
    """The delivery printed `3` where the oracle printed `words=3`, then hostile text on
    both sides, and a line only it has; its note went to another file."""
    oracle = side_run(
        f"words=3\n{HOSTILE_MARKUP}\n", changes=[FileChange(path="n.txt", change="added")]
    )
    delivery = side_run(
        f"3\n{HOSTILE_MARKUP}\nextra [i]line[/i]\n",
        stderr="warn: \x1b[2Jcleared?\n",
        changes=[FileChange(path="n.txt.bak", change="added")],
    )
    fields = dict(
        case_id=DETAIL_CASE, split="hidden", pattern="ops", command="mini",
        verdict=Verdict.SIDE_EFFECTS, reason="n.txt added only by the oracle",
        metrics={"exec": 1.0}, oracle=oracle, delivery=delivery,
    )  # fmt: skip
    return CaseResult(**(fields | extra))


# --- a run evaluating, as the progress line and the results table see it ------------------------


def evaluating(done: int) -> list:
    """A run evaluating 4 cases, planned at +12 s, `done` of them finished 4 s apart."""
    events = [
        started(),
        PhaseChanged(phase="generate"),
        PhaseChanged(phase="evaluate", detail="4 cases"),
        CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
    ]
    events = stamp(events)  # 3 s apart: planned at +9 s
    verdicts = [Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.ACCEPTED, Verdict.TIME_LIMIT]
    for i in range(done):
        ev = CaseFinished(result=result(CASE_IDS[i], verdicts[i], "differs" if i % 2 else ""))
        ev.run_id, ev.seq, ev.ts = RECORDED_ID, len(events) + 1, events[-1].ts + 4.0
        events.append(ev)
    return events


# --- the console under test ---------------------------------------------------------------------

SIZES = {"80x24": (80, 24), "200x60": (200, 60)}  # the snapshots' terminals (the `size` fixture)


HELD_S = 86_400.0  # a held notification's timeout: it stays for the whole test


class Console(IcaeApp):
    """The console, keeping what it notified for the test: `notified` holds (title, message,
    severity), `told` the messages alone. With `animations=False` nothing is animated; with
    `hold_notifications` a notification stays until dismissed (its wall-clock timeout would
    take it away sooner on a loaded machine, so a snapshot would show it or not by chance)."""

    def __init__(
        self, *, animations: bool = True, hold_notifications: bool = False, **kwargs
    ) -> None:
        self.notified: list[tuple[str, str, str]] = []
        self.hold_notifications = hold_notifications
        super().__init__(**kwargs)
        if not animations:
            self.animation_level = "none"

    def notify(self, message: str, *, title: str = "", severity="information", **kwargs) -> None:
        self.notified.append((title, str(message), severity))
        if self.hold_notifications:
            kwargs["timeout"] = HELD_S
        super().notify(message, title=title, severity=severity, **kwargs)

    @property
    def told(self) -> list[str]:
        return [message for _, message, _ in self.notified]


def still_console(catalog: Catalog, store: RunStore, **kwargs) -> Console:
    """The console with nothing animated and its notifications held, as the snapshots take
    it."""
    return Console(
        catalog=catalog, store=store, animations=False, hold_notifications=True, **kwargs
    )


class Gate(Sleeps):
    """The replay's injected sleep: records each wait (seconds) and returns when opened, or at
    once when `instant`."""

    def __init__(self, *, instant: bool = False) -> None:
        super().__init__(digits=3, gated=not instant)


def text_of(screen, selector: str) -> str:
    """What a Static of the screen shows."""
    return str(screen.query_one(selector, Static).render())


def assert_drawn(screen: RunScreen, view: RunView) -> None:
    """The run screen's widgets show `view`: every trace line (cases and score have their own
    widgets), every turn, every case, the status."""
    screen.flush()
    assert list(screen.trace.lines) == [
        line.text for line in view.trace if line.kind not in SHOWN_ELSEWHERE
    ]
    assert [kind for kind, _ in screen.clarify.turns] == [t.kind for t in view.turns]
    assert screen.results.planned == list(view.cases)
    assert screen.results.verdicts() == [row.verdict or "…" for row in view.cases.values()]
    assert screen.status_message == plain(view.status)


async def open_palette(pilot, query: str) -> CommandList:
    """Open the palette, type `query`, wait until its first hit is the one wanted."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await until(
        pilot, lambda: CommandPalette.is_open(app) and isinstance(app.screen, CommandPalette)
    )
    await pilot.press(*("space" if c == " " else c for c in query))
    hits = app.screen.query_one(CommandList)

    def first_hit() -> str:
        return str(hits.get_option_at_index(0).prompt) if hits.option_count else ""

    await until(pilot, lambda: query.lower() in first_hit().lower())
    return hits


async def open_screen(app: IcaeApp, pilot, screen):
    """Push `screen` and wait until it is the one shown, mounted."""
    await app.push_screen(screen)
    await until(pilot, lambda: app.screen is screen and screen.is_mounted)
    return screen


def key_description(screen, key: str) -> str | None:
    """What the footer says `key` does on `screen`, None when it is not offered."""
    active = screen.active_bindings.get(key)
    return active.binding.description if active is not None and active.enabled else None
