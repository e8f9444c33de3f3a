"""`icae run --user-endpoint / --judge-endpoint / --critic-endpoint NAME` and `icae runs
rescore --judge-endpoint NAME`: a `[models.<name>]` entry of the agents files
(icae_tui/agents/config.py) as the role's `ModelConfig`, the same one its
`--<role>-model` / `--<role>-base-url` / `--<role>-api-key-env` flags build; or one line
saying why not, for the command to print before any run is stored."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

from icae_tui.agents.config import AgentConfig, Section, what_to_set

if TYPE_CHECKING:
    from icae_tui.users.model_user import ModelConfig


class EndpointRole(StrEnum):
    """The run's own model roles that an endpoint entry can serve (their flags' prefix)."""

    USER = "user"  # the simulated user in model mode
    JUDGE = "judge"  # the SM judge
    CRITIC = "critic"  # the diagnostics critic


def both_named(role: EndpointRole, flags: list[str]) -> str:
    """Why `--<role>-endpoint` with `--<role>-model` (or `-base-url`) is refused: say what
    to drop, since each gives the role its whole endpoint."""
    given = " and ".join(flags)
    return (
        f"--{role}-endpoint and {given} both give the {role}'s endpoint: drop {given} to use "
        f"the [models.<name>] entry, or --{role}-endpoint to use the flags"
    )


def endpoint_config(
    role: EndpointRole, name: str, config: AgentConfig, environ: Mapping[str, str]
) -> ModelConfig | str:
    """The endpoint `[models.<name>]` declares, or why it cannot be used: no such entry
    (the known ones and where they are declared), or not ready (what to set, and where)."""
    from icae_tui.users.model_user import ModelConfig

    flag = f"--{role}-endpoint {name!r}"
    entry = config.models.get(name)
    if entry is None:
        broken = "; ".join(str(e) for e in config.problems_of(Section.MODELS, name))
        why = f" ({broken})" if broken else ""
        known = ", ".join(f"{n} ({e.where})" for n, e in config.models.items()) or "none"
        return f"{flag}: no model entry {name!r} in the agents files{why} (known: {known})"
    if fix := what_to_set(entry, environ):
        return f"{flag}: {entry.table} {entry.state(environ)}: {fix}"
    s = entry.settings
    assert s.base_url is not None or s.local_model is not None  # a ready entry's endpoint
    return ModelConfig(
        model=s.model, base_url=s.base_url or "", api_key_env=s.api_key_env,
        timeout_s=s.timeout_s, local_model=s.local_model, mode=s.user_mode,
    )  # fmt: skip
