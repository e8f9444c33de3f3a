"""Three icae-tui plug-ins, each an entry point's callable that registers (see
pyproject.toml): the backend `demo-processes` (the processes backend under another name),
the agent kind `echo` (declared in agents files as `kind = "echo"`) and the case scorer
`plugged` (async, from its case context)."""

from __future__ import annotations

from typing import Any, Literal

from icae_tui.domain.results import MetricKind, MetricSpec

PLUGGED = MetricSpec(name="plugged", label="PLUG", kind=MetricKind.PASS,
                     description="the delivery ran and exited as the oracle did")  # fmt: skip


def register_backend_plugin() -> None:
    from icae_tui.sandbox.base import Sandbox
    from icae_tui.sandbox.processes import open_processes
    from icae_tui.sandbox.registry import register_backend

    async def open_demo(options: dict[str, Any]) -> Sandbox:
        return await open_processes(options)

    register_backend("demo-processes", open_demo, unsafe=True,
                     summary="the processes backend, from a plug-in")  # fmt: skip


def register_agent_kind_plugin() -> None:
    from icae_tui.agents.base import AgentContext, AgentNeeds, Limits
    from icae_tui.agents.config import EndpointConfig
    from icae_tui.agents.registry import configured_kind, register_agent_kind

    class EchoConfig(EndpointConfig):
        kind: Literal["echo"] = "echo"
        words: str = "hello"

    class Echo:
        def __init__(self, spec: str, settings: EchoConfig) -> None:
            self.name, self.limits, self.needs = spec, Limits(), AgentNeeds()
            self.settings = settings

        async def build(self, prd: str, ctx: AgentContext) -> str:
            return self.settings.words

    register_agent_kind(configured_kind("echo", EchoConfig, Echo, summary="says its words"))


def register_scorer_plugin() -> None:
    from icae_tui.domain.outcome import SideOutcome
    from icae_tui.evaluation.scorers import CaseContext, case_scorer, register_case_scorer

    @case_scorer(PLUGGED)
    async def plugged(case: CaseContext) -> dict[str, float]:
        d, oracles = case.delivery, case.oracles
        if not isinstance(d, SideOutcome):
            return {}
        codes = {o.run.exit_code for o in oracles if isinstance(o, SideOutcome)}
        return {PLUGGED.name: not codes or d.run.exit_code in codes}

    register_case_scorer(plugged)
