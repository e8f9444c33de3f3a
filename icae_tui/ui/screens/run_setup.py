"""Run setup: agent, level and responder for one task. Start returns a RunConfig.

The agents offered are the task's scripted ones (`scripted:<solution>`) and the configured
ones (`model:<name>`, `<kind>:<name>`: from the defaults, the user's agents.toml and the
`icae --agents` files), each with its state. An agent that is not ready is listed but cannot start: the note under
the choices says what to set. Broken entries of the agents files are listed, located.

The dialog opens on the choices of the task's last run started (remembered in settings.toml,
icae_tui/ui/settings.py), else on those of the last run of any task, else on `scripted:good`,
L1, the simulated user. A remembered agent that is gone or not ready now is not chosen (the
default is, and the note says why); a level or responder this version does not offer neither.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static

from icae_tui.agents.config import (
    AgentConfig,
    AgentEntry,
    AgentKind,
    endpoint_text,
    what_to_set,
)
from icae_tui.agents.registry import agent_kinds, available_agents, configured_agents
from icae_tui.display.wording import limits_line
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level, Task
from icae_tui.runs.config import RunConfig
from icae_tui.ui.keymap import keyed
from icae_tui.ui.settings import (
    SETTINGS_FILE,
    SetupChoice,
    config_dir,
    load_settings,
    save_setup,
)
from icae_tui.ui.text import clip, safe
from icae_tui.ui.widgets.footer import Footer
from icae_tui.util.safe_text import printable

RESPONDERS = (
    (ResponderMode.SIMULATED, "simulated user"),
    (ResponderMode.HUMAN, "human — you type the answers"),
    (ResponderMode.ASSISTED, "assisted — you send, edit or replace its draft"),
)
LEVEL_NOTES = {
    Level.L1: "L1 · vaguest PRD",
    Level.L2: "L2 · partial PRD",
    Level.L3: "L3 · detailed PRD",
    Level.GROUND: "ground · full specification",
}


ERRORS_SHOWN = 6  # of the agents files' problems, listed in the dialog
LABEL_WIDTH = 46  # characters of an agent's label in the chooser
SHORT_ROWS = 32  # from this many rows the setup dialog has its roomy layout


def default_agent(agents: list[str]) -> str | None:
    if "scripted:good" in agents:
        return "scripted:good"
    return agents[0] if agents else None


@dataclass(frozen=True)
class Initial:
    """What the dialog opens on, and why a remembered agent is not it ("" when it is, or
    when none is remembered)."""

    agent: str | None
    level: Level
    responder: ResponderMode
    passed_over: str = ""


def initial_choices(remembered: SetupChoice | None, choices: Mapping[str, AgentChoice]) -> Initial:
    """The remembered choices where they still hold, the defaults where not."""
    ready = [spec for spec, c in choices.items() if c.ready]
    agent = default_agent(ready)
    level, responder = Level.L1, ResponderMode.SIMULATED
    passed_over = ""
    if remembered is not None:
        last = remembered.agent
        if last is not None and last in ready:
            agent = last
        elif last is not None:
            why = f"not ready ({choices[last].state})" if last in choices else "gone"
            passed_over = f"{last}, chosen last time, is {why}"
        if remembered.level in {lv.value for lv in Level}:
            level = Level(remembered.level)
        if remembered.responder in {mode.value for mode, _ in RESPONDERS}:
            responder = ResponderMode(remembered.responder)
    return Initial(agent, level, responder, passed_over)


@dataclass(frozen=True)
class AgentChoice:
    """An agent the chooser offers: its spec, its state and, when not ready, what to set."""

    spec: str
    state: str = "ready"
    detail: str = ""  # model @ endpoint, limits, where it was declared
    fix: str = ""  # empty: it can start

    @property
    def ready(self) -> bool:
        return not self.fix

    def label(self) -> Text:
        text = clip(self.spec, LABEL_WIDTH - len(self.state) - 3)
        if not self.spec.startswith(AgentKind.SCRIPTED.prefix):
            text.append(f" — {self.state}", style="green" if self.ready else "yellow")
        return text


def configured_choice(entry: AgentEntry, environ: Mapping[str, str]) -> AgentChoice:
    """A configured agent, its state in `environ`, and what to set when it is not ready."""
    spec = f"{entry.kind}:{entry.name}"
    state = entry.state(environ)
    s = entry.settings
    model = getattr(s, "model", "")
    where = str(entry.source) if entry.line is None else f"{entry.source}:{entry.line}"
    detail = f"{model} @ {endpoint_text(s, environ)}" if model else str(entry.kind)
    detail += f" · limits {limits_line(s.limits)} · from {where}"
    fix = ""
    if entry.kind not in agent_kinds():
        fix = f"{entry.kind} agents cannot be run by this version"
    else:
        fix = what_to_set(entry, environ)  # the words `icae agents` says too
    return AgentChoice(spec, str(state), detail, fix)


def agent_choices(task: Task, config: AgentConfig) -> list[AgentChoice]:
    scripted = [AgentChoice(spec, detail="the task's solution") for spec in available_agents(task)]
    configured = [configured_choice(e, os.environ) for e in config.agents.values()]
    return scripted + sorted(configured, key=lambda c: not c.ready)  # the ready ones first


class RunSetupScreen(ModalScreen[RunConfig | None]):
    # -short: a terminal of fewer rows than the dialog's roomy layout needs (80×24 with an
    # agents file's errors): less padding (app.tcss), and past that the dialog scrolls
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_ROWS, "-tall")]
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "setup",
        [
            Binding("escape", "cancel", "Cancel"),
            Binding("ctrl+s", "start", "Start"),
        ],
    )

    def __init__(
        self,
        task: Task,
        pace_s: float | None = None,
        agent_files: Sequence[Path] = (),
        settings_file: Path | None = None,
    ) -> None:
        """`settings_file`: where the last choices are remembered (the console's
        settings.toml by default)."""
        super().__init__()
        self.target = task
        self.pace_s = pace_s
        self.agent_files = tuple(agent_files)
        self.agents_config = configured_agents(self.agent_files)  # small files: read at once
        self.choices = {c.spec: c for c in agent_choices(task, self.agents_config)}
        self.agents = list(self.choices)
        self.ready_agents = [c.spec for c in self.choices.values() if c.ready]
        self.has_scripted = any(a.startswith(AgentKind.SCRIPTED.prefix) for a in self.agents)
        self.settings_file = settings_file or config_dir() / SETTINGS_FILE
        settings, _problems = load_settings(self.settings_file)  # notified when the app began
        remembered = settings.setups.get(task.id) or settings.last_setup
        self.initial = initial_choices(remembered, self.choices)

    def compose(self) -> ComposeResult:
        task = self.target
        with Vertical(id="setup-dialog") as dialog:
            dialog.border_title = "New run"
            title = Text()
            title.append_text(safe(task.spec.title, "bold"))
            title.append("  ")
            title.append_text(safe(task.id, "dim"))
            yield Static(title, id="setup-title")
            with Grid(id="setup-grid"):
                yield Label("Agent")
                yield Select(
                    [(c.label(), c.spec) for c in self.choices.values()],
                    value=self.initial.agent or Select.NULL,
                    allow_blank=not self.ready_agents,
                    prompt="no agent ready for this task",
                    id="agent",
                )
                yield Label("Level")
                yield Select(
                    [(LEVEL_NOTES.get(lv, lv.value), lv.value) for lv in Level],
                    value=self.initial.level.value,
                    allow_blank=False,
                    id="level",
                )
                yield Label("Responder")
                yield Select(
                    [(label, value) for value, label in RESPONDERS],
                    value=self.initial.responder,
                    allow_blank=False,
                    id="responder",
                )
            yield Static(self.note(self.selected_default()), id="setup-note")
            errors = Static(self.errors_text(), id="setup-errors")
            errors.display = bool(self.agents_config.errors)
            errors.border_title = "agents files"
            yield errors
            with Horizontal(id="setup-buttons"):
                ready = self.selected_default() is not None
                yield Button("Start", variant="primary", id="start", disabled=not ready)
                yield Button("Cancel", id="cancel")
        yield Footer()

    def selected_default(self) -> AgentChoice | None:
        spec = self.initial.agent
        return self.choices.get(spec) if spec is not None else None

    def note(self, choice: AgentChoice | None) -> Text:
        """What the chosen agent is, or what to set before it can start."""
        task = self.target
        if not self.agents:
            return Text("This task has no solutions/ and no agent is configured.", "red")
        if choice is None:
            why = "This task has no solutions/ and no" if not self.has_scripted else "No"
            return Text(f"{why} configured agent is ready: choose one to see what to set.",
                        "yellow")  # fmt: skip
        if not choice.ready:
            text = Text()
            text.append_text(safe(choice.spec, "bold"))
            text.append(f" {choice.state}: ", style="yellow")
            text.append_text(safe(choice.fix, limit=400))
            return text
        text = Text(f"question budget {task.spec.budget} · {len(task.cases)} cases", "dim")
        if not choice.spec.startswith(AgentKind.SCRIPTED.prefix):
            text.append("\n")
            text.append_text(safe(choice.detail, "dim", limit=400))
        if self.initial.passed_over and choice.spec == self.initial.agent:
            text.append("\n")
            text.append_text(safe(self.initial.passed_over, "yellow", limit=200))
        return text

    def errors_text(self) -> Text:
        errors = self.agents_config.errors
        text = Text(f"{len(errors)} broken entr{'y' if len(errors) == 1 else 'ies'} "
                    "(the other agents are offered):", "bold")  # fmt: skip
        for err in errors[:ERRORS_SHOWN]:
            text.append("\n")
            text.append(printable(str(err), limit=300), style="red")
        if len(errors) > ERRORS_SHOWN:
            text.append(f"\n… {len(errors) - ERRORS_SHOWN} more (see `icae agents`)", "dim")
        return text

    def chosen(self) -> AgentChoice | None:
        agent = self.query_one("#agent", Select).value
        return self.choices.get(agent) if isinstance(agent, str) else None

    def on_mount(self) -> None:
        # the first choice, never Start: Enter from the task list must not start a run
        self.query_one("#agent", Select).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "agent":
            return
        choice = self.chosen()
        self.query_one("#setup-note", Static).update(self.note(choice))
        self.query_one("#start", Button).disabled = choice is None or not choice.ready

    def config(self) -> RunConfig | None:
        agent = self.query_one("#agent", Select).value
        if not isinstance(agent, str):
            return None
        level = self.query_one("#level", Select).value
        responder = self.query_one("#responder", Select).value
        return RunConfig(
            task=self.target,
            agent=agent,
            level=Level(str(level)),
            responder=ResponderMode(str(responder)),
            pace_s=self.pace_s,
            agent_files=self.agent_files,
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "start":
            self.action_start()
        else:
            self.action_cancel()

    def action_start(self) -> None:
        choice = self.chosen()
        if choice is not None and not choice.ready:
            self.notify(
                f"{printable(choice.spec)} cannot start ({choice.state}): {choice.fix}",
                title="Not ready",
                severity="error",
                markup=False,
            )
            return
        config = self.config()
        if config is None:
            self.notify("Choose an agent first.", severity="warning")
            return
        self.remember(config)
        self.dismiss(config)

    def remember(self, config: RunConfig) -> None:
        """The choices of the run started, for the next time (a problem is told, the run
        starts all the same)."""
        choice = SetupChoice(config.agent, config.level.value, config.responder.value)
        problem = save_setup(self.settings_file, self.target.id, choice)
        if problem is not None:
            self.notify(str(problem), title=problem.file.name, severity="warning", markup=False)

    def action_cancel(self) -> None:
        self.dismiss(None)
