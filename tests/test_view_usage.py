"""The agent's usage against its limits: the figures (RunView), their words and style hints
(wording), and the headless summary that prints them (pure, no Textual)."""

from __future__ import annotations

import io

import pytest

from icae_tui.display import wording as w
from icae_tui.display.plain import PlainPrinter
from icae_tui.display.view import RunView
from icae_tui.domain.agent import Limits
from icae_tui.domain.events import AgentStopped, ModelCallMade, PhaseChanged, RunFinished
from icae_tui.domain.states import StopReason
from tests.ui.helpers import MODEL_LIMITS, model_run, stamp, started

ALL = Limits(max_steps=50, max_seconds=1800, max_model_calls=100, max_tokens=200_000,
             max_cost_usd=2.0)  # fmt: skip


def hints(segs: list[w.Seg]) -> dict[str, str]:
    return {text: hint for text, hint in segs}


@pytest.mark.parametrize(
    ("n", "shown"),
    [(0, "0"), (999, "999"), (1000, "1k"), (1234, "1.2k"), (12_345, "12k"), (200_000, "200k"),
     (999_999, "1M"), (1_500_000, "1.5M")],
)  # fmt: skip
def test_counts_are_short(n, shown):
    assert w.count(n) == shown


@pytest.mark.parametrize(
    ("usd", "shown"),
    [(0, "$0.00"), (0.012, "$0.012"), (0.05, "$0.05"), (0.5, "$0.50"), (0.00042, "$0.00042"),
     (2, "$2.00"), (12.345, "$12.35")],
)  # fmt: skip
def test_money_keeps_two_significant_digits_below_a_dollar(usd, shown):
    assert w.money(usd) == shown


@pytest.mark.parametrize(
    ("used", "limit", "hint"),
    [(79, 100, "strong"), (80, 100, "warn"), (99, 100, "warn"), (100, 100, "error"),
     (120, 100, "error"), (5, None, "strong")],
)  # fmt: skip
def test_a_figure_warns_from_80_percent_and_errs_at_its_limit(used, limit, hint):
    assert w.limit_hint(used, limit) == hint


def test_the_figures_against_every_limit():
    u = w.Usage(ALL, steps=3, agent_s=30, calls=3, tokens_in=1000, tokens_out=200, cost=0.012,
                infra_failures=1)  # fmt: skip
    assert w.plain(w.usage_segments(u)) == (
        "agent steps 3/50 · time 00:30/30:00   model 3/100 calls · 1.2k/200k tokens (1k→200)"
        " · $0.012/$2.00 · 1 upstream failure(s) retried"
    )
    assert w.usage_lines(u) == [
        "model: 3/100 calls · 1.2k/200k tokens (1k→200) · $0.012/$2.00 · 1 upstream failure(s)"
        " retried",
        "agent: steps 3/50 · time 00:30/30:00",
    ]
    assert w.limits_line(ALL) == "50 steps · 30:00 · 100 calls · 200k tokens · $2.00"
    assert w.limits_line(Limits()) == "no limits"


def test_the_hints_follow_each_figure():
    u = w.Usage(ALL, steps=50, agent_s=1500, calls=79, tokens_in=160_000, tokens_out=0,
                cost=2.5)  # fmt: skip
    h = hints(w.usage_segments(u))
    assert h["50/50"] == "error"  # steps: reached
    assert h["25:00/30:00"] == "warn"  # 83 %
    assert h["79/100"] == "strong"
    assert h["160k/200k"] == "warn"
    assert h["$2.50/$2.00"] == "error"


def test_without_limits_the_model_figures_are_the_old_ones():
    u = w.Usage(calls=5, tokens_in=500, tokens_out=100, infra_failures=2)
    assert w.usage_lines(u) == ["model: 5 call(s) · 500→100 tokens · 2 upstream failure(s) retried"]
    priced = w.Usage(calls=5, tokens_in=600, tokens_out=100, cost=0.012)
    assert w.plain(w.model_segments(priced)) == "5 call(s) · 600→100 tokens · $0.012"
    assert w.usage_segments(w.Usage()) == [] and w.usage_lines(w.Usage()) == []


def test_the_view_counts_a_model_agents_steps_by_its_calls_until_it_stops():
    events = model_run()
    view = RunView()
    for ev in events:
        view.apply(ev)
        if isinstance(ev, AgentStopped):
            break
        if isinstance(ev, ModelCallMade):
            assert view.usage().steps == ev.index
    assert view.usage().steps == 3 and view.calls == [
        e for e in events if isinstance(e, ModelCallMade)
    ]
    u = RunView.from_events(events).usage()
    assert (u.limits, u.steps, u.calls, u.tokens_in, u.tokens_out) == (
        MODEL_LIMITS,
        3,
        3,
        1600,
        180,
    )
    assert u.cost == pytest.approx(0.051) and u.infra_failures == 2
    assert u.agent_s == 24.0  # generate (event 2) to the stop (event 10), 3 s apart


def test_a_scripted_agents_steps_are_known_when_it_stops():
    events = stamp([started(), PhaseChanged(phase="generate"),
                    AgentStopped(reason=StopReason.SUBMITTED, steps=7),
                    RunFinished(status="completed")])  # fmt: skip
    view = RunView()
    view.apply(events[0])
    assert view.usage().steps is None and not view.usage().shown  # nothing to show
    for ev in events[1:]:
        view.apply(ev)
    assert view.usage().steps == 7 and view.usage().agent_s == 3.0


def test_the_agents_clock_runs_to_now_until_the_generate_phase_ends():
    events = stamp([started(limits=Limits(max_seconds=60)), PhaseChanged(phase="generate")])
    view = RunView.from_events(events)
    t0 = events[1].ts
    assert view.usage(now=t0 + 50).agent_s == 50
    assert w.limit_hint(50, 60) == "warn"
    assert hints(w.agent_segments(view.usage(now=t0 + 50)))["00:50/01:00"] == "warn"
    view.apply(stamp([PhaseChanged(phase="freeze")], t0=t0 + 70)[0])
    assert view.usage(now=t0 + 500).agent_s == 70  # stopped with the phase


def test_the_headless_summary_prints_the_figures_with_their_limits():
    out = io.StringIO()
    PlainPrinter(out).summary(model_run())
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("interaction: ")
    assert lines[1:] == [
        "model: 3/4 calls · 1.8k/2k tokens (1.6k→180) · $0.051/$0.05 · 2 upstream failure(s)"
        " retried",
        "agent: steps 3/10 · time 00:24/10:00",
    ]


def test_the_headless_printer_summarises_what_it_printed():
    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in model_run():
        printer(ev)
    printer.summary()
    text = out.getvalue()
    assert "   model #3 qwen-[bold]coder[/] · limit 429" in text
    assert text.endswith("agent: steps 3/10 · time 00:24/10:00\n")
