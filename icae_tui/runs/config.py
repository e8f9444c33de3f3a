"""A run's typed configuration: what a display (the console's run setup, `icae run`, a batch)
fills in and checks before it starts a run (`runs/run.py`, which takes it). Apart from the
orchestrator so that naming a run needs none of the machinery that runs it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icae_tui.domain.states import PackageMode, ResponderMode
from icae_tui.domain.task import Level, ReviewWeights, Split, Task
from icae_tui.sandbox.registry import DEFAULT_ENGINE
from icae_tui.users.icae_wire import QUERY_PORT
from icae_tui.users.model_user import ModelConfig


@dataclass
class RunConfig:
    task: Task
    agent: str = "scripted:good"
    level: Level = Level.L1
    responder: ResponderMode = ResponderMode.SIMULATED  # the desk's first mode
    user_model: ModelConfig | None = None  # the automatic user: a model instead of matching
    # the SM judge (evaluation/semantic.py): None, and SM is not measured
    judge_model: ModelConfig | None = None
    # diagnostics beyond tests (evaluation/diagnostics.py), after the cases: the delivery's
    # structure, the golden API signature, the task's rules and the review score
    diagnostics: bool = True
    # the model critic (evaluation/critic.py), through the gateway (role judge): None, none
    critic_model: ModelConfig | None = None
    # the review score's weights; None: the task's `[review] weights`, else 80 / 20
    review_weights: ReviewWeights | None = None
    # Host environment variables an agent's commands may see (e.g. its model key): passed
    # per exec, never set on the container, so `docker inspect` and the delivery don't hold them.
    secret_env: tuple[str, ...] = ()
    budget: int | None = None  # questions for this run; None: the task's for the level
    pace_s: float | None = None
    concurrency: int | None = None  # None: sized to the machine
    splits: tuple[Split, ...] = (Split.PUBLIC, Split.HIDDEN, Split.ENHANCED)
    agent_files: tuple[Path, ...] = ()  # agents.toml files given with --agents
    model_replay: str | None = None  # a run id: its recorded model calls answer this run's
    # ICAE-EVAL's agents, unchanged: their Clarification section in the PRD, their user-agent
    # wire on 127.0.0.1:icae_wire_port (init one below, stats one above) in the container.
    # Off by default: the section's append_id is per run, so a model replay would diverge.
    icae_wire: bool = False
    icae_wire_port: int = QUERY_PORT
    # Keep the frozen delivery after a completed run (the console: re-run a case, open a
    # shell in it); whoever keeps it removes it with `discard_delivery` (else the reaper
    # does, once this process is gone or its day has passed).
    keep_delivery: bool = False
    engine: str = DEFAULT_ENGINE  # a sandbox backend, or an entry of the engines file
    # The package gateway (packages/): live registries (kept in the host's cache), the cache
    # only (offline, the same bytes: with model_replay, those that run was served), or none.
    packages: PackageMode = PackageMode.LIVE
    packages_budget_mb: int | None = None  # None: the task's `[packages] budget_mb`
    # sweep what dead runs left on the engine before starting; a batch sweeps once, itself
    sweep: bool = True

    def __post_init__(self) -> None:
        """Options from any display are checked here, once, with the option's name."""
        if self.budget is not None and self.budget < 0:
            raise ValueError(f"budget must be 0 or more, not {self.budget}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.pace_s is not None and self.pace_s < 0:
            raise ValueError(f"pace must be 0 s or more, not {self.pace_s}")
        if self.packages_budget_mb is not None and self.packages_budget_mb < 0:
            raise ValueError(f"packages budget must be 0 MiB or more, not {self.packages_budget_mb}")
        try:
            self.packages = PackageMode(self.packages)
        except ValueError:
            modes = ", ".join(PackageMode)
            raise ValueError(f"packages must be one of {modes}: {self.packages!r}") from None
        if not 2 <= self.icae_wire_port <= 65534:  # its init and stats ports are beside it
            raise ValueError(f"icae_wire_port must be 2 to 65534, not {self.icae_wire_port}")
        try:
            self.responder = ResponderMode(self.responder)
        except ValueError:
            modes = ", ".join(ResponderMode)
            raise ValueError(f"responder must be one of {modes}: {self.responder!r}") from None
