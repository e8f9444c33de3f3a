"""What an agent works with, in the domain's own terms: its limits, what it needs of a run
(a model endpoint, an image with it installed, how to pause it, its box's bounds), the
result of one of its commands, and the reason it stopped early. No sandbox, model-client
or display types here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from icae_tui.domain.states import StopReason
from icae_tui.errors import IcaeError

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


class WireApi(StrEnum):
    """A model API on the wire: what an agent speaks to the gateway, or what the upstream
    speaks."""

    CHAT = "chat"  # OpenAI Chat Completions: POST {base}/chat/completions
    MESSAGES = "messages"  # Anthropic Messages: POST {base}/messages (Claude Code)
    RESPONSES = "responses"  # OpenAI Responses: POST {base}/responses (Codex CLI)


class PauseMethod(StrEnum):
    """How the operator's pause stops an agent."""

    BETWEEN_STEPS = "between_steps"  # driven from the host: it waits before its next step
    FREEZE_BOX = "freeze_box"  # runs inside its box: the box is frozen


@dataclass(frozen=True)
class ModelNeed:
    """The upstream an agent's model calls go to, through the run's gateway (which forces
    `model`, adds the key read from `api_key_env`, counts cost and enforces the limits)."""

    model: str
    base_url: str | None = None  # None: not configured (the agent is not ready)
    api_key_env: str | None = None
    wire_api: WireApi = WireApi.CHAT  # what the upstream speaks
    local_model: str | None = None  # `icae models`' model: the upstream `local`, not base_url
    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None


@dataclass(frozen=True)
class ImageNeed:
    """An agent installed into its image: lines run once where the package registries are
    reachable, the result kept per agent, version and base image."""

    version: str
    install: tuple[str, ...]


@dataclass(frozen=True)
class AgentNeeds:
    """What an agent asks of the run; the run asks this, never the agent's class."""

    model: ModelNeed | None = None  # a model gateway
    image: ImageNeed | None = None  # an image with the agent installed
    pause: PauseMethod = PauseMethod.BETWEEN_STEPS
    memory_mb: int | None = None  # its box's memory, when more than the default
    pids: int | None = None  # its box's process limit, when more than the default


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


class AgentStop(IcaeError):
    """The agent stopped before submitting; the run records why and judges what is there."""

    def __init__(self, reason: StopReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
