"""Run setup: agent, level and responder for one task. Start returns a RunConfig."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Select, Static

from icae_tui.agents.registry import available_agents
from icae_tui.domain.task import Level, Task
from icae_tui.run import RunConfig
from icae_tui.ui.text import safe

RESPONDERS = (
    ("simulated", "simulated user"),
    ("human", "human — you type the answers"),
    ("assisted", "assisted — you send, edit or replace its draft"),
)
LEVEL_NOTES = {
    Level.L1: "L1 · vaguest PRD",
    Level.L2: "L2 · partial PRD",
    Level.L3: "L3 · detailed PRD",
    Level.GROUND: "ground · full specification",
}


def default_agent(agents: list[str]) -> str | None:
    if "scripted:good" in agents:
        return "scripted:good"
    return agents[0] if agents else None


class RunSetupScreen(ModalScreen[RunConfig | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "start", "Start"),
    ]

    def __init__(self, task: Task, pace_s: float | None = None) -> None:
        super().__init__()
        self.target = task
        self.pace_s = pace_s
        self.agents = available_agents(task)

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
                    [(safe(a), a) for a in self.agents],
                    value=default_agent(self.agents) or Select.NULL,
                    allow_blank=not self.agents,
                    prompt="no agents for this task",
                    id="agent",
                )
                yield Label("Level")
                yield Select(
                    [(LEVEL_NOTES.get(lv, lv.value), lv.value) for lv in Level],
                    value=Level.L1.value,
                    allow_blank=False,
                    id="level",
                )
                yield Label("Responder")
                yield Select(
                    [(label, value) for value, label in RESPONDERS],
                    value="simulated",
                    allow_blank=False,
                    id="responder",
                )
            note = Text(
                f"question budget {task.spec.budget} · {len(task.cases)} cases",
                style="dim",
            )
            if not self.agents:
                note = Text("This task has no solutions/ — there is no agent to run.", "red")
            yield Static(note, id="setup-note")
            with Horizontal(id="setup-buttons"):
                yield Button("Start", variant="primary", id="start", disabled=not self.agents)
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#start" if self.agents else "#cancel", Button).focus()

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
            responder=str(responder),
            pace_s=self.pace_s,
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "start":
            self.action_start()
        else:
            self.action_cancel()

    def action_start(self) -> None:
        config = self.config()
        if config is None:
            self.notify("Choose an agent first.", severity="warning")
            return
        self.dismiss(config)

    def action_cancel(self) -> None:
        self.dismiss(None)
