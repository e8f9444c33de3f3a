"""What displays say about a run: every string, once.

Lines and segments are plain text with a *style hint* beside it (a word such as "muted",
"warn" or "mode:human", never a terminal style): the console maps hints to styles
(icae_tui/ui/text.py), the headless printer ignores them. Untrusted parts (agent output,
task data, model names) are made printable here, so no display sees a control character.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from icae_tui.display import metric_text
from icae_tui.domain.agent import Limits
from icae_tui.domain.events import (
    AgentCommandDone,
    AgentPaused,
    AgentResumed,
    AgentStopped,
    AgentToolUsed,
    AgentWrote,
    BuildChecked,
    CasesPlanned,
    EventsDropped,
    ModelCallMade,
    PackageRefused,
    PackageServed,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    ResponderChanged,
    RunFinished,
    RunStarted,
)
from icae_tui.domain.results import (
    SCORED_SPLITS,
    CaseResult,
    LadderMetric,
    MetricSpec,
    Score,
    Verdict,
)
from icae_tui.domain.states import AnsweredBy, ModelRole, Phase, ResponderMode, RunStatus, Stream
from icae_tui.domain.task import Split
from icae_tui.users.metrics import InteractionMetrics
from icae_tui.util.safe_text import printable

Seg = tuple[str, str]  # (text, style hint)

PHASES = tuple(Phase)
# the modes in which a question waits for the operator, and the answers given in them
OPERATOR_MODES = (ResponderMode.HUMAN, ResponderMode.ASSISTED)
OPERATOR_ANSWERS = (AnsweredBy.HUMAN, AnsweredBy.ASSISTED)
LINE_LIMIT = 4000  # characters of one trace line; the rest becomes a visible "[+N chars]"
TEXT_LIMIT = 4000  # of a question, an answer or a sample in the clarifications
DRAFT_LIMIT = 1500  # of the simulated user's draft in the clarifications
STATUS_LIMIT = 300  # of a progress message in the status line
ERROR_LIMIT = 500  # of a run's error in the status line

# --- trace prefixes (a multi-line text gets its prefix on every line) ---------------------

OUTPUT_PREFIX = {Stream.STDOUT: "  out│ ", Stream.STDERR: "  err│ "}
PROGRESS_PREFIX = "   · "
SAID_PREFIX = "agent › "
THOUGHT_PREFIX = "agent ∴ "
COMMAND_PREFIX = "$ "
SUBMITTED_PREFIX = "agent submitted › "

WAITING_TO_START = "waiting for the run to start…"
NO_RUN = "no run"
NO_QUESTIONS = "No questions yet."
PENDING = "…"
UNKNOWN = "—"  # a figure with nothing measured yet: unknown is not zero
PAUSED = "paused — f to follow"  # the trace, while it does not follow new lines


def not_held_line(count: int) -> str:
    """The trace's first row once its oldest lines are no longer held (its bounds)."""
    lines = "line" if count == 1 else "lines"
    return f"… {count:,} earlier {lines} not held here — e exports the whole trace"


# --- small formats ----------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f}s"


def clock(elapsed_s: float) -> str:
    elapsed = max(0, int(elapsed_s))
    return f"{elapsed // 60:02d}:{elapsed % 60:02d}"


def phase_step(phase: Phase | RunStatus | None) -> str:
    """The step of a phase, as " 2/6"; "" for anything else (an end status, no phase)."""
    return f" {PHASES.index(phase) + 1}/{len(PHASES)}" if phase in PHASES else ""


def count(n: int) -> str:
    """A count in a few characters: 950, 1.2k, 12k, 200k, 1.5M."""
    if n < 1000:
        return str(n)
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            value = n / size
            text = f"{value:.1f}" if value < 10 else f"{value:.0f}"
            if unit == "k" and text == "1000":  # 999_999 rounds up to the next unit
                return "1M"
            return text.removesuffix(".0") + unit
    return str(n)  # unreachable


def money(usd: float) -> str:
    """Dollars: cents from $1 up, else two significant digits ($0.012, $0.00042, $0.05)."""
    if usd >= 1 or usd <= 0:
        return f"${max(usd, 0.0):.2f}"
    digits = max(2, 1 - math.floor(math.log10(usd)))
    text = f"{usd:.{digits}f}"
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.rstrip('0').ljust(2, '0')}"


# --- who answered, from what --------------------------------------------------------------


def answer_source(ev: QuestionAnswered) -> str:
    """Which records the answer came from, or why it came from none."""
    if ev.over_budget:
        return "budget"
    if ev.record_ids:
        return printable(", ".join(ev.record_ids))
    if ev.fallback:
        return "fallback"
    return "typed" if ev.responder in OPERATOR_ANSWERS else "—"


def answered_by(ev: QuestionAnswered) -> str:
    """Who answered: simulated, model (name), human, assisted (edited), budget."""
    if ev.responder == AnsweredBy.MODEL and ev.model:
        return printable(f"model {ev.model}")
    if ev.responder == AnsweredBy.ASSISTED and ev.edited:
        return "assisted (edited)"
    return printable(ev.responder)


def draft_source(records: list[str]) -> str:
    return printable(", ".join(records)) if records else "fallback"


def source_hint(source: str) -> str:
    return "warn" if source in ("fallback", "budget") else "record"


# --- the trace ----------------------------------------------------------------------------


def run_line(ev: RunStarted) -> str:
    return (
        f"run {ev.run_id} · task {ev.task_id} · agent {ev.agent} · level {ev.level}"
        f" · responder {ev.responder} · budget {ev.budget}"
    )


def phase_line(ev: PhaseChanged) -> str:
    return heading(ev.phase, ev.detail)


def heading(phase: str, detail: str = "") -> str:
    """A phase's heading in the trace: `━━ evaluate · 70 cases`."""
    return f"━━ {phase}" + (f" · {detail}" if detail else "")


def wrote_line(ev: AgentWrote) -> str:
    return f"agent wrote {ev.path} ({ev.size} bytes)"


def done_line(ev: AgentCommandDone) -> str:
    note = f" ({after})" if (after := ev.aftermath()) else ""
    return f"   exit {ev.exit_code} in {ev.duration_s:.2f}s{note}"


def tool_line(ev: AgentToolUsed) -> str:
    """`   tool Read README.md` (`✗` when the agent's tool call failed)."""
    mark = " ✗" if ev.ok is False else ""
    detail = f" {ev.detail}" if ev.detail else ""
    return printable(f"   tool {ev.tool}{mark}{detail}", limit=LINE_LIMIT)


def model_call_line(ev: ModelCallMade) -> str:
    """One line per model call; its bodies are in the run's model_calls.jsonl."""
    tokens = f"{ev.tokens_in}→{ev.tokens_out} tokens"
    cost = f" · {money(ev.cost)}" if ev.cost is not None else ""
    tools = f" · calls {', '.join(ev.tool_calls)}" if ev.tool_calls else ""
    retries = f" · {ev.infra_failures} upstream failure(s) retried" if ev.infra_failures else ""
    who = "" if ev.role is ModelRole.AGENT else f"{ev.role} "  # the user's calls say so
    head = f"   {who}model #{ev.index} {ev.model} · {ev.call_kind} {ev.status} · {tokens}{cost}"
    tail = f" · {ev.latency_s:.2f}s{tools}{retries}"
    problem = f" — {ev.stop_reason or ev.error}" if (ev.stop_reason or ev.error) else ""
    return head + tail + problem


def package_line(ev: PackageServed) -> str:
    """`   package pypi six 1.16.0 · 10.8 KiB · sha256 8abb2f1d86890a2d · upstream`."""
    version = f" {ev.version}" if ev.version else ""
    return printable(
        f"   package {ev.ecosystem} {ev.name}{version} · {_size(ev.size)} · sha256 "
        f"{ev.sha256[:16]} · {ev.source} · {_size(ev.total_bytes)} in all",
        limit=LINE_LIMIT,
    )


def package_refused_line(ev: PackageRefused) -> str:
    """`   package refused (403): npm:left-pad is denied by task …'s [packages] deny list`."""
    return printable(f"   package refused ({ev.status}): {ev.reason}", limit=LINE_LIMIT)


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


# --- usage against the agent's limits (the header's second line, the headless summary) ------

WARN_AT = 0.8  # of a limit: a figure from here on is highlighted "warn", "error" once reached


@dataclass(frozen=True)
class Usage:
    """The agent's figures and its limits, as a display shows them. `steps` is None while
    not known (see `RunView.usage`); `agent_s` is the agent's wall clock (None: not yet)."""

    limits: Limits = Limits()
    steps: int | None = None
    agent_s: float | None = None
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    infra_failures: int = 0

    @property
    def model_limited(self) -> bool:
        lim = self.limits
        return any(v is not None for v in (lim.max_model_calls, lim.max_tokens, lim.max_cost_usd))

    @property
    def shown(self) -> bool:
        """Anything to show: limits, or model calls."""
        return self.limits.any or self.calls > 0


def limits_line(limits: Limits) -> str:
    """`50 steps · 30:00 · 100 calls · 200k tokens · $2.00`, or "no limits"."""
    parts = []
    if limits.max_steps is not None:
        parts.append(f"{limits.max_steps} steps")
    if limits.max_seconds is not None:
        parts.append(clock(limits.max_seconds))
    if limits.max_model_calls is not None:
        parts.append(f"{limits.max_model_calls} calls")
    if limits.max_tokens is not None:
        parts.append(f"{count(limits.max_tokens)} tokens")
    if limits.max_cost_usd is not None:
        parts.append(money(limits.max_cost_usd))
    return " · ".join(parts) or "no limits"


def limit_hint(used: float, limit: float | None) -> str:
    """The style hint of a figure against its limit: "warn" from WARN_AT, "error" at it."""
    if limit is None or limit <= 0:
        return "strong"
    if used >= limit:
        return "error"
    return "warn" if used >= WARN_AT * limit else "strong"


def _joined(parts: list[list[Seg]]) -> list[Seg]:
    segs: list[Seg] = []
    for part in parts:
        if segs:
            segs.append((" · ", "muted"))
        segs += part
    return segs


def agent_segments(u: Usage) -> list[Seg]:
    """`steps 12/50 · time 05:00/30:00`: the steps once known, the agent's wall clock
    against its limit (no limit: the run's clock says enough)."""
    lim = u.limits
    parts: list[list[Seg]] = []
    if u.steps is not None:
        of = f"/{lim.max_steps}" if lim.max_steps is not None else ""
        parts.append([("steps ", "muted"), (f"{u.steps}{of}", limit_hint(u.steps, lim.max_steps))])
    if lim.max_seconds is not None:
        used = u.agent_s or 0.0
        figure = f"{clock(used)}/{clock(lim.max_seconds)}"
        parts.append([("time ", "muted"), (figure, limit_hint(used, lim.max_seconds))])
    return _joined(parts)


def model_segments(u: Usage) -> list[Seg]:
    """`3/100 calls · 1.2k/200k tokens (1k→200) · $0.012/$2.00 · 1 upstream failure(s)
    retried`; without limits `3 call(s) · 1k→200 tokens · $0.012`."""
    lim = u.limits
    parts: list[list[Seg]] = []
    if lim.max_model_calls is not None:
        figure = f"{u.calls}/{lim.max_model_calls}"
        parts.append([(figure, limit_hint(u.calls, lim.max_model_calls)), (" calls", "muted")])
    else:
        parts.append([(f"{u.calls} call(s)", "strong")])
    split = f"{count(u.tokens_in)}→{count(u.tokens_out)}"
    if lim.max_tokens is not None:
        total = u.tokens_in + u.tokens_out
        figure = f"{count(total)}/{count(lim.max_tokens)}"
        hint = limit_hint(total, lim.max_tokens)
        parts.append([(figure, hint), (" tokens", "muted"), (f" ({split})", "muted")])
    else:
        parts.append([(split, "strong"), (" tokens", "muted")])
    if lim.max_cost_usd is not None:
        spent = u.cost or 0.0
        figure = f"{money(spent)}/{money(lim.max_cost_usd)}"
        parts.append([(figure, limit_hint(spent, lim.max_cost_usd))])
    elif u.cost is not None:
        parts.append([(money(u.cost), "strong")])
    if u.infra_failures:
        parts.append([(f"{u.infra_failures} upstream failure(s) retried", "warn")])
    return _joined(parts)


def usage_segments(u: Usage) -> list[Seg]:
    """The header's second line: `agent steps 3/50 · time 00:30/30:00   model 3/100 calls
    · …`; empty when there is nothing to show (no limits, no model calls)."""
    if not u.shown:
        return []
    segs: list[Seg] = []
    if agent := agent_segments(u):
        segs += [("agent ", "muted"), *agent]
    if u.calls or u.model_limited:
        segs += [("   " if segs else "", ""), ("model ", "muted"), *model_segments(u)]
    return [seg for seg in segs if seg[0]]


def usage_lines(u: Usage) -> list[str]:
    """The headless summary's lines: `model: …` (when the agent used or may use a model)
    and `agent: …` (steps and wall clock, when known or limited)."""
    if not u.shown:
        return []
    lines = []
    if u.calls or u.model_limited:
        lines.append("model: " + plain(model_segments(u)))
    if agent := agent_segments(u):
        lines.append("agent: " + plain(agent))
    return lines


def paused_line(ev: AgentPaused) -> str:
    return printable(f"⏸ agent paused by {ev.by}")


def resumed_line(ev: AgentResumed) -> str:
    return f"▶ agent resumed after {seconds(ev.paused_s)} (not counted against its time limit)"


def paused_status(ev: AgentPaused) -> list[Seg]:
    return [("agent paused", "warn-strong"), (printable(f" by {ev.by}"), "muted")]


def resumed_status(ev: AgentResumed) -> list[Seg]:
    return [(f"agent resumed after {seconds(ev.paused_s)}", "muted")]


def pause_refused(pause: bool, *, live: bool = True) -> str:
    """Why a pause (or a resume) was refused."""
    if not live:
        return "A stored run cannot be paused: its agent is not running."
    if pause:
        return "The agent can be paused while it builds (the generate phase)."
    return "The agent is not paused."


def stopped_line(ev: AgentStopped) -> str:
    detail = f": {ev.detail}" if ev.detail else ""
    return f"agent stopped ({ev.reason.value}, {ev.steps} step(s)){detail}"


def question_prefix(ev: QuestionAsked) -> str:
    via = "" if ev.via == "agent" else f" via {ev.via}"
    return f"? Q{ev.question_id} ({ev.remaining_before} left{via}): "


def answer_prefix(ev: QuestionAnswered) -> str:
    return f"  A{ev.question_id} [{answered_by(ev)} · {answer_source(ev)}]: "


def refused_line(ev: QuestionsRefused) -> str:
    return (
        f"   {ev.count} more question(s) past the budget (Q{ev.first_id}–Q{ev.last_id},"
        f" {ev.chars} characters): refused, counted, not stored one by one"
    )


def dropped_line(ev: EventsDropped) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in ev.by_kind.items())
    when = "in all" if ev.final else "store bound reached"
    return (
        f"!! {when}: {ev.count} low-value event(s) not stored ({kinds}); bound"
        f" {ev.max_events} events / {ev.max_bytes >> 20} MiB"
    )


def switch_line(ev: ResponderChanged) -> str:
    by = f" (by {ev.by})" if ev.by and ev.by != "operator" else ""
    return f"⇄ responder → {ev.mode}{by}"


def build_line(ev: BuildChecked) -> str:
    """`build passed`, `build FAILED (exit 2): <its last line>`, else `build ok — <reason>` /
    `build FAILED — <reason>`: the gate's own reasons say the outcome already, so the line
    says it once."""
    if ev.ok:
        return "build passed" if ev.reason in ("", "build passed") else f"build ok — {ev.reason}"
    if ev.reason.startswith("build failed"):  # the gate's `build failed (exit N): …`
        return "build FAILED" + ev.reason.removeprefix("build failed")
    return f"build FAILED — {ev.reason}"


def planned_line(ev: CasesPlanned) -> str:
    return f"   {len(ev.case_ids)} cases planned"


def case_line(r: CaseResult) -> str:
    mark = "PASS" if r.passed else "FAIL"
    # one line whatever the reason quotes: a delivery's text must not start a forged one
    return f"{mark} {r.case_id:<28} {r.verdict.value:<13} {printable(r.reason)}"


def finished_line(ev: RunFinished) -> str:
    return f"━━ run {ev.status}" + (f" — {ev.error}" if ev.error else "")


def report_line(path: str) -> str:
    return f"report: {path}"


# --- the score ----------------------------------------------------------------------------


def score_segments(score: Score | None, *, partial: bool = False, claims: int = 0) -> list[Seg]:
    """The score line. Overall, macro and the rates read "—" until a hidden or enhanced case
    has counted (`Score.measured`): unknown is not zero. `partial`: the run ended without a
    score (cancelled, failed); what was measured is shown as partial, beside the "—".
    `claims`: how many of the agent's completion claims the results contradict
    (results/claims.py), said right after macro — and the review score's combined figure, once the
    diagnostics made it — so a narrow screen keeps it."""
    if score is None:
        return [("score: " + UNKNOWN, "muted")]
    measured = score.measured and not partial

    def figure(value: float) -> str:
        return pct(value) if measured else UNKNOWN

    top = measured and score.overall >= 0.999
    segs: list[Seg] = [
        ("overall ", "muted"),
        (figure(score.overall), "good-strong" if top else "strong"),
    ]
    if partial and score.measured:
        of = f" of {score.scored} scored" if score.scored else ""
        segs.append((f" (partial {pct(score.overall)}{of})", "muted"))
    segs += [("  macro ", "muted"), (figure(score.macro), "strong")]
    if Split.PUBLIC in score.by_split and not any(s in score.by_split for s in SCORED_SPLITS):
        segs.append(("  public cases only", "warn"))  # no hidden or enhanced case: no overall
    if (review := score.review) is not None:  # execution and review (evaluation/review.py)
        combined = UNKNOWN if review.combined is None or partial else pct(review.combined)
        segs += [("  combined ", "muted"), (combined, "strong")]
    if claims:
        segs.append((f"  ✘ {claims} claim{'s' if claims > 1 else ''} contradicted", "error-strong"))
    segs.append(("  │  ", "muted"))
    for spec in score.metrics:  # the ladder's rates, then every other scorer's
        if spec.name in score.rates:
            value = figure(score.rates[spec.name])
            segs += [(f"{metric_text.label(spec)} ", "muted"), (value + "  ", "")]
    segs += [("│  ", "muted"), (f"{score.done}/{score.planned}", "strong")]
    segs.append((" cases done", "muted"))
    if score.public_minus_hidden is not None:
        segs.append(("  │  public−hidden ", "muted"))
        segs.append((f"{100 * score.public_minus_hidden:+.1f} pts", ""))
    if not score.build_ok:
        segs += [("  │  ", "muted"), ("build failed", "error-strong")]
    return segs


def score_line(score: Score, *, claims: int = 0) -> str:
    return "score: " + plain(score_segments(score, claims=claims))


def plain(segs: list[Seg] | tuple[Seg, ...]) -> str:
    return "".join(text for text, _ in segs)


# --- a case's rungs (icae_tui/evaluation/verdict.py) ------------------------------------------

# Verdicts given before the exec rung: the delivery's exit code was never compared.
BEFORE_EXEC = frozenset(
    {
        Verdict.BUILD_ERROR,
        Verdict.ORACLE_ERROR,
        Verdict.ORACLE_NONDETERMINISTIC,
        Verdict.TIME_LIMIT,
        Verdict.MEMORY_LIMIT,
        Verdict.OUTPUT_LIMIT,
        Verdict.DISK_LIMIT,
    }
)


def exec_reached(r: CaseResult) -> bool:
    """Whether the ladder got to comparing exit codes. A `runtime_error` is the exec rung's
    only when both sides ran, the exit codes differ, nothing was left running, no fork
    failed at the pids limit and the box survived (else the engine, the processes or the
    box gave it, before)."""
    o, d = r.oracle, r.delivery
    if r.verdict in BEFORE_EXEC or o is None or d is None:
        return False
    if r.verdict is Verdict.RUNTIME_ERROR and not r.holds(LadderMetric.EXEC):
        earlier = (
            (d.left_running and not o.left_running)
            or (d.pids_capped and not o.pids_capped)
            or d.box_died
        )
        return d.exit_code != o.exit_code and not earlier
    return True


def ladder_segments(r: CaseResult, specs: Sequence[MetricSpec] = ()) -> list[Seg]:
    """`exec ✔  SP ✔  EM ✘  FM ✔ (FM score 0.93)`: the rungs the case reached, passed or
    failed, then the ones it never reached (`exec ✘  ·  SP, EM, FM not reached`): the first
    failing rung gives the verdict and nothing after it runs. FM is reported beside EM.
    Then the metrics of the other scorers (`specs`: the run's; without them, by name)."""
    m = LadderMetric
    reached_exec = exec_reached(r)
    reached_sp = reached_exec and r.holds(m.EXEC)
    reached_em = reached_sp and r.holds(m.SP)
    rungs = (
        ("exec", reached_exec, r.holds(m.EXEC)),
        ("SP", reached_sp, r.holds(m.SP)),
        ("EM", reached_em, r.holds(m.EM)),
        ("FM", reached_em, r.holds(m.FM)),
    )
    segs: list[Seg] = []
    for label, reached, ok in rungs:
        if reached:
            segs += [("  " if segs else "", ""), (f"{label} ", "muted")]
            segs.append(("✔", "good") if ok else ("✘", "error"))
    if reached_em:
        segs.append((f" (FM score {r.metrics.get(m.FM_SCORE, 0.0):.2f})", "muted"))
    missed = [label for label, reached, _ in rungs if not reached]
    if missed:
        segs += [("  ·  " if segs else "", "muted"), (", ".join(missed) + " not reached", "muted")]
    if extras := metric_text.extras_segments(r, specs):
        segs += [("  ·  " if segs else "", "muted"), *extras]
    return [seg for seg in segs if seg[0]]


# --- interaction ------------------------------------------------------------------------


def metrics_line(m: InteractionMetrics, *, has_records: bool = True) -> str:
    """The one-line summary for titles: turns/budget, coverage, fallback (whole percents)."""
    parts = [f"{m.turns}/{m.budget} turns"]
    if has_records:
        parts.append(f"coverage {100 * m.coverage:.0f}%")
    parts.append(f"fallback {100 * m.fallback_rate:.0f}%")
    return " · ".join(parts)


def interaction_line(m: InteractionMetrics) -> str:
    """The headless run's closing line."""
    never = ", ".join(m.never_asked) or "none"
    over = f" (+{m.over_budget} over budget)" if m.over_budget else ""
    return (
        f"interaction: {m.turns}/{m.budget} questions{over} · fallback {pct(m.fallback_rate)} · "
        f"coverage {pct(m.coverage)} ({len(m.covered)} records) · never asked: {never}"
    )


def metrics_segments(m: InteractionMetrics, *, has_records: bool = True) -> list[Seg]:
    """The interaction metrics as the clarifications' last entry (several lines)."""
    segs: list[Seg] = [("interaction", "strong"), (f"  {m.turns}/{m.budget} turns", "")]
    if m.over_budget:
        segs.append((f" (+{m.over_budget} over budget)", "warn"))
    segs.append((f" · fallback {pct(m.fallback_rate)}", ""))
    if m.turns:
        segs.append((f" · mean latency {seconds(m.mean_latency_s)}", "muted"))
    if has_records:
        segs.append((f"\ncoverage {pct(m.coverage)}", "strong"))
        if m.covered:
            segs.append((printable(" · covered " + ", ".join(m.covered)), "good"))
        if m.never_asked:
            segs.append((printable(" · never asked " + ", ".join(m.never_asked)), "warn"))
    if m.generic_revealed:
        segs.append(("\n", ""))
        segs.append((printable("generic revealed " + ", ".join(m.generic_revealed)), "muted"))
    if m.by_responder:
        by = ", ".join(f"{k} {v}" for k, v in sorted(m.by_responder.items()))
        segs.append(("\n", ""))
        segs.append((printable(f"by responder: {by}"), "muted"))
    return segs


# --- clarification turns (a head of segments; the body is the untrusted text) --------------


def question_head(ev: QuestionAsked, mode: ResponderMode | None = None) -> list[Seg]:
    """`Q1  agent · 3 left · for human`; `mode`: who it waits for now, when the responder
    was switched while it waited (it names the responder it went to)."""
    now = ev.mode if mode is None else AnsweredBy(mode)
    segs: list[Seg] = [
        (f"Q{ev.question_id}", "question"),
        (printable(f"  {ev.via} · {ev.remaining_before} left"), "muted"),
    ]
    if now in OPERATOR_ANSWERS or now != ev.mode:
        segs += [(" · for ", "muted"), (printable(now), f"mode:{now}")]
    return segs


def draft_head(ev: QuestionAsked) -> list[Seg]:
    source = draft_source(ev.draft_records)
    return [
        (f"draft Q{ev.question_id}", "draft"),
        ("  simulated · ", "muted"),
        (source, source_hint(source)),
    ]


def answer_head(ev: QuestionAnswered) -> list[Seg]:
    source = answer_source(ev)
    segs: list[Seg] = [
        (f"A{ev.question_id}", "strong"),
        ("  ", ""),
        (answered_by(ev), f"who:{ev.responder}"),
        (" · ", "muted"),
        (source, source_hint(source)),
    ]
    if not ev.over_budget:
        segs.append((f" · {seconds(ev.latency_s)}", "muted"))
    return segs


def refused_head(ev: QuestionsRefused) -> list[Seg]:
    return [
        (f"+{ev.count} more past the budget", "warn"),
        (
            f"  Q{ev.first_id}–Q{ev.last_id} · {ev.chars} characters · refused,"
            " counted, not listed",
            "muted",
        ),
    ]


def switch_head(ev: ResponderChanged) -> list[Seg]:
    segs: list[Seg] = [("⇄ responder → ", "muted"), (printable(ev.mode), f"mode:{ev.mode}")]
    if ev.by and ev.by != "operator":
        segs.append((printable(f" (by {ev.by})"), "muted"))
    return segs


def clarifications_title(
    asked: int, budget: int | None, mode: ResponderMode | None, summary: str = ""
) -> str:
    if summary:
        return f"Clarifications · {summary}"
    of = f"/{budget}" if budget is not None else ""
    for_mode = f" · responder {mode}" if mode else ""
    return f"Clarifications · {asked}{of} asked{for_mode}"


def responders_label(first: str, switched_to: list[str]) -> str:
    """The responders a run used, in order: `simulated→human→assisted`; past four,
    `simulated→human→…→assisted (7 switches)`."""
    used = [first, *switched_to]
    if len(used) > 4:
        return printable(f"{used[0]}→{used[1]}→…→{used[-1]} ({len(switched_to)} switches)")
    return printable("→".join(used))


# --- status -----------------------------------------------------------------------------

CANCEL_TARGETS = {
    Phase.PREPARE: "image builds",
    Phase.GENERATE: "agent",
    Phase.FREEZE: "freeze",
    Phase.BUILD: "build gate",
    Phase.EVALUATE: "cases",
    Phase.SCORE: "scoring",
}


def phase_status(ev: PhaseChanged) -> list[Seg]:
    return [(printable(f"{ev.phase}…" + (f" {ev.detail}" if ev.detail else "")), "")]


def finished_status(ev: RunFinished, summary: str = "") -> list[Seg]:
    """`run failed — <error>  ·  <summary>   report <path>`: the error first, so a narrow
    status line shows what went wrong before anything else."""
    segs: list[Seg] = [(f"run {ev.status}", f"status:{ev.status}")]
    if ev.error:
        segs += [(" — ", ""), (printable(ev.error, limit=ERROR_LIMIT), "error")]
    if summary:
        segs.append(("  ·  " + summary, "muted"))
    if ev.report_path:
        segs += [("   report ", "muted"), (printable(ev.report_path), "")]
    return segs


NOTICE_LIMIT = 4000  # of a run's error in the notification of its end


def ended_notice(ev: RunFinished, score: Score | None = None) -> tuple[str, str]:
    """The title and the message of the notification a run's end gets: the score of a
    completed run, the whole error of a failed one, what was done before a cancel. `score`:
    the latest measured, when the run ended without one."""
    score = ev.score if ev.score is not None else score
    parts: list[str] = []
    if ev.status == RunStatus.COMPLETED and score is not None:
        overall = pct(score.overall) if score.measured else UNKNOWN
        parts.append(f"overall {overall}")
    elif ev.error:
        parts.append(printable(ev.error, limit=NOTICE_LIMIT))
    if score is not None:
        parts.append(f"{score.done}/{score.planned} cases done")
        if not score.build_ok:
            parts.append("build failed")
    return f"Run {ev.status}", " · ".join(parts) or f"run {ev.status}"


def cancelling_status(phase: Phase | None, *, stopped: bool = False) -> list[Seg]:
    """While a cancel is under way: what is being stopped, then the cleanup."""
    if stopped:
        return [("cancelling: run stopped, removing containers…", "warn-strong")]
    target = CANCEL_TARGETS.get(phase, "run") if phase is not None else "run"
    return [(f"cancelling: stopping the {target}, removing containers…", "warn-strong")]


def cancelled_status(
    removed: int | None, ev: RunFinished | None = None, summary: str = ""
) -> list[Seg]:
    """Once a cancelled run's work is over: its containers are removed (`removed`: how many
    the run's final sweep still found; None: not known, nothing is claimed)."""
    segs: list[Seg] = [("run cancelled", "status:cancelled")]
    if removed == 0:
        segs.append((": containers removed (none left over)", ""))
    elif removed is not None:
        segs.append((f": containers removed ({removed} left over, removed by the final sweep)",
                     "warn"))  # fmt: skip
    if summary:
        segs.append(("  ·  " + summary, "muted"))
    if ev is not None and ev.report_path:
        segs += [("   report ", "muted"), (printable(ev.report_path), "")]
    return segs


# --- results ------------------------------------------------------------------------------


NOT_RUN = "not run"  # a case the run ended without judging (cancelled, failed)


def results_summary(verdicts: list[str], *, over: bool = False) -> str:
    """e.g. "12 accepted · 3 wrong_answer · 55 pending", from each row's verdict ("" pending;
    once the run is `over`, "not run")."""
    counts: dict[str, int] = {}
    for verdict in verdicts:
        if verdict:
            counts[verdict] = counts.get(verdict, 0) + 1
    parts = [f"{n} {verdict}" for verdict, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    pending = sum(1 for v in verdicts if not v)
    if pending:
        parts.append(f"{pending} {NOT_RUN if over else 'pending'}")
    return " · ".join(parts)
