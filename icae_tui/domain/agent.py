"""What an agent works with, in the domain's own terms: its limits, the result of one of its
commands, and the reason it stopped early. No sandbox, model-client or display types here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from icae_tui.domain.states import StopReason

PositiveInt = Annotated[int, Field(strict=True, gt=0)]
PositiveFloat = Annotated[float, Field(strict=True, gt=0)]


class Limits(BaseModel):
    """An agent's limits for one run; each is optional and, when given, positive. Steps and
    wall clock are enforced by the agent's context, model calls, tokens and cost by the run's
    model gateway."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_steps: PositiveInt | None = None
    max_seconds: PositiveFloat | None = None
    max_model_calls: PositiveInt | None = None
    max_tokens: PositiveInt | None = None  # prompt + completion tokens over the run
    max_cost_usd: PositiveFloat | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in self.model_dump().values())


@dataclass(frozen=True)
class CommandResult:
    """How one of the agent's commands ended; its output is the raw bytes (untrusted)."""

    exit_code: int | None  # None: it never finished (timed out, or the engine lost it)
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False
    flooded: bool = False  # stopped past the caller's output bound

    @property
    def output(self) -> str:
        """stdout then stderr, decoded leniently: what a model is shown."""
        return (self.stdout + self.stderr).decode("utf-8", errors="replace")


class AgentStop(Exception):
    """The agent stopped before submitting; the run records why and judges what is there."""

    def __init__(self, reason: StopReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
