"""Configured agents: `[agents.<name>]` entries in TOML files, validated with pydantic; and
the run's own model endpoints (the simulated user's, the SM judge's, the critic's):
`[models.<name>]` entries in the same files, named by `--judge-endpoint NAME` and friends.

Files, in order (a later file's entry replaces an earlier entry of the same name, whole):
the defaults shipped with the package (`defaults.toml` next to this module), the user's
file (`$XDG_CONFIG_HOME/icae-tui/agents.toml`, default `~/.config/icae-tui/agents.toml`),
then any `--agents FILE` given to `icae`. A broken entry is reported with its file, line and
field and the other entries still load; it also hides any earlier entry of the same name
(the user meant to replace it, so the old one is not used silently). A file that is not
valid TOML is one located error; the other files still load.

Scripted agents are not declared here: each task's solutions/ are offered as
`scripted:<solution>` by `icae_tui.agents.registry`, exactly as before.

Lines: tomllib gives no positions, so after a file parses, `key_lines` scans its text once
and records, for every table header (`[agents.x]`, `[agents.x.limits]`) and every `key =`
line, the line of the full dotted key path and of each of its prefixes (first occurrence
wins). Quoted keys and dotted keys are understood; lines inside multi-line strings are
skipped. An error's field path (e.g. `agents.x.limits.max_steps`) is then looked up, falling
back to its longest known prefix: a key inside an inline table or an array reports the line
of the key holding it, a missing key reports the entry's header line.

The models do no I/O; `load_agent_config` reads the files and `AgentEntry.state` takes the
environment as an argument.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from icae_tui.agents.constrain import ReplyConstraint
from icae_tui.domain.agent import Limits, ModelNeed, WireApi
from icae_tui.domain.states import UserMode
from icae_tui.util.documents import TooDeep, load_toml
from icae_tui.util.endpoint_urls import url_problem
from icae_tui.util.plugins import load_plugins

DEFAULTS_FILE = Path(__file__).with_name("defaults.toml")


class AgentKind(StrEnum):
    """The built-in kinds (agents/registry.py registers them; a plug-in may add others)."""

    SCRIPTED = "scripted"  # a task's solutions/ folder: `scripted:<solution>`, never in TOML
    MODEL = "model"  # the built-in model-driven agent
    COMMAND = "command"  # a CLI agent installed and run in the sandbox

    @property
    def prefix(self) -> str:
        """How an agent spec of this kind starts (`scripted:`): `kind:name`."""
        return f"{self.value}:"


class TraceParser(StrEnum):
    PLAIN = "plain"
    CLAUDE_STREAM_JSON = "claude-stream-json"
    CODEX_JSON = "codex-json"
    MINI_SWE_AGENT = "mini-swe-agent"
    AIDER = "aider"


class Section(StrEnum):
    """The tables an agents file may hold."""

    AGENTS = "agents"
    MODELS = "models"


class AgentState(StrEnum):
    READY = "ready"
    NEEDS_ENDPOINT = "needs an endpoint"
    MISSING_KEY = "missing key variable"
    NEEDS_LOCAL_MODEL = "local model not installed"


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

NonEmpty = Annotated[str, Field(strict=True, min_length=1)]
Price = Annotated[float, Field(strict=True, ge=0)]


def _env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise ValueError(
            "must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
            "never the key itself"
        )
    return value


EnvName = Annotated[str, Field(strict=True), AfterValidator(_env_name)]


def _endpoint_url(value: str) -> str:
    if (problem := url_problem(value)) is not None:  # the check the command line's URLs get
        raise ValueError(problem)
    return value


EndpointUrl = Annotated[str, Field(strict=True), AfterValidator(_endpoint_url)]


class ModelEndpoint(BaseModel):
    """A model behind an endpoint: what agents and `[models.<name>]` entries share."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: NonEmpty
    base_url: EndpointUrl | None = None
    api_key_env: EnvName | None = None
    # a model of `icae models` instead of base_url: the upstream named `local`, started on
    # loopback by the run (its key is the server's own; api_key_env is not read)
    local_model: NonEmpty | None = None

    @model_validator(mode="after")
    def _one_endpoint(self) -> ModelEndpoint:
        if self.local_model is None:
            return self
        from icae_tui.local_models.catalog import MODELS, known

        if self.local_model not in MODELS:
            raise ValueError(f"local_model {self.local_model!r} is not a model of `icae "
                             f"models` (known: {known()})")  # fmt: skip
        if self.base_url is not None:
            raise ValueError("local_model and base_url both give the endpoint: keep one")
        return self

    def endpoint_state(self, environ: Mapping[str, str]) -> AgentState:
        if self.local_model is not None:
            from icae_tui.local_models.server import not_ready, resolve

            if not_ready(resolve(self.local_model), environ):
                return AgentState.NEEDS_LOCAL_MODEL
            return AgentState.READY
        if self.base_url is None:
            return AgentState.NEEDS_ENDPOINT
        if self.api_key_env is not None and not environ.get(self.api_key_env):
            return AgentState.MISSING_KEY
        return AgentState.READY


class ModelEntrySettings(ModelEndpoint):
    """A `[models.<name>]` entry: an endpoint for the run's own model roles (user, judge,
    critic), which call it through the run's gateway, as agents do."""

    timeout_s: Annotated[float, Field(strict=True, gt=0)] = 60.0
    user_mode: UserMode = UserMode.CHOOSE  # as the simulated user's: how it uses the model


class EndpointConfig(ModelEndpoint):
    """The upstream model endpoint of an agent: every call goes through the run's gateway,
    which forces `model`, adds the key read from `api_key_env` and counts the cost."""

    wire_api: WireApi = WireApi.CHAT  # what the upstream speaks
    # prices in USD per million tokens: the cost of each call, and what max_cost_usd counts
    price_in_per_mtok: Price | None = None
    price_out_per_mtok: Price | None = None
    limits: Limits = Limits()

    @model_validator(mode="after")
    def _cost_limit_needs_prices(self) -> EndpointConfig:
        if self.limits.max_cost_usd is not None and (
            self.price_in_per_mtok is None or self.price_out_per_mtok is None
        ):
            raise ValueError(
                "limits.max_cost_usd needs price_in_per_mtok and price_out_per_mtok "
                "(USD per million tokens) to count the cost"
            )
        return self


def model_need(config: EndpointConfig) -> ModelNeed:
    """What an entry's agent needs of the run's gateway."""
    return ModelNeed(
        model=config.model, base_url=config.base_url, api_key_env=config.api_key_env,
        local_model=config.local_model,
        wire_api=config.wire_api, price_in_per_mtok=config.price_in_per_mtok,
        price_out_per_mtok=config.price_out_per_mtok,
    )  # fmt: skip


class ModelAgentConfig(EndpointConfig):
    """The built-in agent driven by a model behind an OpenAI-compatible endpoint."""

    kind: Literal[AgentKind.MODEL] = AgentKind.MODEL
    temperature: Annotated[float, Field(strict=True, ge=0, le=2)] | None = None
    # a folder with system.md, instance.md or reply-*.md (the reply format) to use instead
    prompts: NonEmpty | None = None
    stream: bool = True  # ask for streamed replies: tokens show in the trace as they come
    # opt-in: the server constrains each reply to one well-formed action (llama.cpp's GBNF
    # `grammar`, or a `response_format` JSON schema); dropped for the run on an HTTP 400
    constrain_reply: ReplyConstraint | None = None
    # replies in a row with no action taken (malformed) before the agent stops
    max_malformed_turns: Annotated[int, Field(strict=True, ge=1)] = 3
    # the most tokens one reply may hold (sent as `max_tokens`): a small model may otherwise
    # go on writing blank lines inside a heredoc until its call times out
    max_reply_tokens: Annotated[int, Field(strict=True, ge=16)] | None = None


class CommandAgentConfig(EndpointConfig):
    """A CLI agent run inside the agent's container.

    `install` lines run once, in a build container where the package registries are
    reachable, and the result is kept as an image per agent, version and base image; the
    run itself has no network. `run` is a command template (see `command_agent.PLACEHOLDERS`:
    {prompt_file}, {workspace}, {model}, {openai_base_url}, {anthropic_base_url}, {log_dir},
    {budget}, {version}); `resume` (optional) continues the agent after a clarification
    found in its reply, for agents that cannot run `icae-ask` themselves (Aider)."""

    kind: Literal[AgentKind.COMMAND] = AgentKind.COMMAND
    version: NonEmpty = "latest"  # {version} in the install lines; part of the image's tag
    install: list[NonEmpty] = []
    run: NonEmpty
    resume: NonEmpty | None = None
    env: list[EnvName] = []  # names of host variables passed through, never values
    vars: dict[str, Annotated[str, Field(strict=True)]] = {}  # fixed, non-secret settings
    files: dict[NonEmpty, Annotated[str, Field(strict=True)]] = {}  # path → template text
    parser: TraceParser = TraceParser.PLAIN
    prompt: NonEmpty | None = None  # a template file instead of prompts/command.md
    memory_mb: Annotated[int, Field(strict=True, ge=256)] | None = None  # the container's
    pids: Annotated[int, Field(strict=True, ge=64)] | None = None


# An `[agents.<name>]` entry's settings: those of its kind, an EndpointConfig with a `kind`
AgentSettings = EndpointConfig
# The kinds an agents file may declare, and their entries' settings: fed by the agent-kind
# registry (agents/registry.py: a kind registered with `settings`), the built-in two here
# already since their settings are declared above.
_DECLARED: dict[str, type[EndpointConfig]] = {
    AgentKind.MODEL: ModelAgentConfig,
    AgentKind.COMMAND: CommandAgentConfig,
}
AGENT_KIND_PLUGINS = "icae_tui.agent_kinds"  # entry points (util/plugins.py)


def declare_kind(kind: str, settings: type[EndpointConfig] | None) -> None:
    """Let agents files declare `kind` entries read as `settings` (None: no longer)."""
    if settings is None:
        _DECLARED.pop(kind, None)
    elif kind == AgentKind.SCRIPTED:
        raise ValueError("scripted agents are never declared in agents files")
    else:
        _DECLARED[kind] = settings


def declarable_kinds() -> tuple[str, ...]:
    """The kinds an agents file may declare (installed plug-ins' too)."""
    load_plugins(AGENT_KIND_PLUGINS)
    return tuple(_DECLARED)


Settings = TypeVar("Settings", bound=ModelEndpoint)


@dataclass(frozen=True)
class Declared(Generic[Settings]):
    """An entry of an agents file and where it was declared: what an agent's entry and a
    model entry share (its table, and whether it is ready: its endpoint's state)."""

    SECTION: ClassVar[Section]
    name: str
    settings: Settings
    source: Path
    line: int | None

    @property
    def where(self) -> str:
        """`file:line` of its declaration (the file alone when the line is unknown)."""
        return str(self.source) if self.line is None else f"{self.source}:{self.line}"

    @property
    def table(self) -> str:
        """Its header as the file writes it: `[agents.x]`, `[models."a.b"]`."""
        return f"[{_field_name((self.SECTION, self.name), ())}]"

    def state(self, environ: Mapping[str, str]) -> AgentState:
        return self.settings.endpoint_state(environ)


class AgentEntry(Declared[AgentSettings]):
    """One configured agent."""

    SECTION = Section.AGENTS

    @property
    def kind(self) -> str:
        """Its kind's name: an AgentKind for the built-in kinds."""
        kind = getattr(self.settings, "kind", "")
        return kind if isinstance(kind, str) else str(kind)

    @property
    def spec(self) -> str:
        """How `icae run --agent` and the console name it: `model:<name>`."""
        return f"{self.kind}:{self.name}"


class ModelEntry(Declared[ModelEntrySettings]):
    """One `[models.<name>]` entry: an endpoint for the run's own model roles."""

    SECTION = Section.MODELS


def endpoint_text(settings: ModelEndpoint, environ: Mapping[str, str]) -> str:
    """Where an entry's calls go, for listings: its base_url, or the local model's server
    (where it serves, or that a run starts it)."""
    if settings.local_model is None:
        return settings.base_url or "(no endpoint)"
    from icae_tui.local_models.server import not_ready, resolve, running

    model = resolve(settings.local_model)
    if (served := running(model, environ)) is not None:
        return f"local ({served.base_url}, pid {served.pid})"
    if not_ready(model, environ):
        return "local (not installed)"
    return "local (a run starts its server)"


EXAMPLE_BASE_URL = "http://localhost:8000/v1"  # vLLM's; what the advice shows


def what_to_set(entry: Declared[Any], environ: Mapping[str, str]) -> str:
    """What to set before `entry` (an agent or a model entry) can be used, '' when it is
    ready: which file and entry to edit, and the environment variable its key will be read
    from. `icae agents`, the console's run setup and the `--<role>-endpoint` errors say it
    after the state ("needs an endpoint: <this>"), so it never repeats the state."""
    state = entry.state(environ)
    s = entry.settings
    table = entry.table
    if state is AgentState.READY:
        return ""
    if state is AgentState.NEEDS_LOCAL_MODEL:
        from icae_tui.local_models.server import not_ready, resolve

        assert s.local_model is not None
        return not_ready(resolve(s.local_model), environ).split(": ", 1)[-1]
    if state is AgentState.MISSING_KEY:
        return (
            f"set the environment variable {s.api_key_env} (the api_key_env of {table} at "
            f"{entry.where}), then start icae again"
        )
    if s.api_key_env is not None:
        key = f"; its API key is read from the environment variable {s.api_key_env}"
    else:
        key = '; it sends no API key (add api_key_env = "<VARIABLE>" if the endpoint needs one)'
    if entry.source == DEFAULTS_FILE:  # the shipped file is not the operator's to edit
        return (
            f'declare {table} with its settings and a base_url (e.g. "{EXAMPLE_BASE_URL}") '
            f"in {user_config_file(environ)} or an icae --agents file (it replaces the shipped "
            f'entry; extends = "{entry.name}" keeps its settings){key}'
        )
    return f'set base_url (e.g. "{EXAMPLE_BASE_URL}") in {table} at {entry.where}{key}'


@dataclass(frozen=True)
class ConfigProblem:
    """One problem, located: `file:line: field: message` (line and field when known)."""

    path: Path
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


@dataclass
class AgentConfig:
    agents: dict[str, AgentEntry] = field(default_factory=dict)
    models: dict[str, ModelEntry] = field(default_factory=dict)  # `[models.<name>]`
    errors: list[ConfigProblem] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # the files that were read
    # valid entries' tables, for `extends` (an entry extends one of its own section)
    raw: dict[Section, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {section: {} for section in Section}
    )

    def problems_of(self, section: Section, name: str) -> list[ConfigProblem]:
        """The errors of the entry `[<section>.<name>]` (that hid it, when it is broken)."""
        entry = _field_name((section, name), ())
        return [e for e in self.errors if e.field is not None and
                (e.field == entry or e.field.startswith((f"{entry}.", f"{entry}[")))]  # fmt: skip


# --- where keys are in a file's text -------------------------------------------------------

_BARE = r"[A-Za-z0-9_-]+"
_BASIC = r'"(?:[^"\\]|\\.)*"'
_LITERAL = r"'[^']*'"
_KEY_PART = rf"\s*(?:{_BARE}|{_BASIC}|{_LITERAL})\s*"
_KEY_PATH = rf"{_KEY_PART}(?:\.{_KEY_PART})*"
_HEADER = re.compile(rf"^\s*\[\[?({_KEY_PATH})\]")  # [table] and [[array of tables]]
_ASSIGN = re.compile(rf"^({_KEY_PATH})=")
_PART = re.compile(rf"\s*({_BARE}|{_BASIC}|{_LITERAL})\s*")


def _split_key(path: str) -> tuple[str, ...]:
    parts = []
    for m in _PART.finditer(path):
        raw = m.group(1)
        if raw.startswith('"'):
            raw = tomllib.loads(f"k = {raw}")["k"]
        elif raw.startswith("'"):
            raw = raw[1:-1]
        parts.append(raw)
    return tuple(parts)


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Line (1-based) of every table header and `key =` in a valid TOML text, by full key
    path, plus each path's prefixes (first occurrence wins). See the module docstring."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_string: str | None = None  # the delimiter of the multi-line string we are inside
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        path: tuple[str, ...] | None = None
        if m := _HEADER.match(line):
            table = path = _split_key(m.group(1))
        elif m := _ASSIGN.match(line):
            path = table + _split_key(m.group(1))
            rest = line[m.end() :]
            for delim in ('"""', "'''"):
                if rest.count(delim) % 2 == 1:
                    in_string = delim
                    break
        if path is not None:
            for end in range(1, len(path) + 1):
                lines.setdefault(path[:end], number)
    return lines


def locate(lines: Mapping[tuple[str, ...], int], path: Sequence[str]) -> int | None:
    """The line of `path`, or of its longest prefix found in the text."""
    for end in range(len(path), 0, -1):
        if (found := lines.get(tuple(path[:end]))) is not None:
            return found
    return None


def _key(part: str) -> str:
    return part if re.fullmatch(_BARE, part) else f'"{part}"'


def _field_name(prefix: Sequence[str], loc: Iterable[int | str]) -> str:
    """`agents.x.limits.max_steps`, `agents.x.env[1]`, `agents."a.b".kind`."""
    out = ".".join(_key(p) for p in prefix)
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{_key(part)}"
    return out


def _message(msg: str) -> str:
    return msg.removeprefix("Value error, ")


# --- parsing entries (pure) ----------------------------------------------------------------

# A problem within an entry: where (pydantic's loc, relative to the entry) and what.
Problem = tuple[tuple[int | str, ...], str]


def _shape_problems(name: str, raw: Any, what: str) -> list[Problem]:
    """The problems every entry can have before its settings are read: its name, its type."""
    if not AGENT_NAME.fullmatch(name):
        return [((), f"{what} names use letters, digits, '.', '_' and '-' (no ':')")]
    if not isinstance(raw, dict):
        return [((), "must be a table of settings")]
    return []


def parse_entry(name: str, raw: Any) -> tuple[AgentSettings | None, list[Problem]]:
    """Validate one `[agents.<name>]` table: the settings, or (loc within the entry, message)
    problems. `loc` is relative to the entry: () for the entry itself."""
    if problems := _shape_problems(name, raw, "agent"):
        return None, problems
    kind = raw.get("kind")
    known = ", ".join(declarable_kinds())
    if kind is None:
        return None, [(("kind",), f"missing; one of {known}")]
    if kind == AgentKind.SCRIPTED:
        return None, [
            (
                ("kind",),
                "scripted agents are not declared in TOML: each task's solutions are "
                "offered as scripted:<solution>",
            )
        ]
    if not isinstance(kind, str) or kind not in _DECLARED:
        return None, [(("kind",), f"unknown kind {kind!r}; one of {known}")]
    try:
        settings = _DECLARED[kind].model_validate(raw)
    except ValidationError as err:
        return None, [(tuple(e["loc"]), _message(e["msg"])) for e in err.errors()]
    return settings, []


def parse_model_entry(name: str, raw: Any) -> tuple[ModelEntrySettings | None, list[Problem]]:
    """Validate one `[models.<name>]` table, as `parse_entry` does an agent's."""
    if problems := _shape_problems(name, raw, "model entry"):
        return None, problems
    try:
        return ModelEntrySettings.model_validate(raw), []
    except ValidationError as err:
        return None, [(tuple(e["loc"]), _message(e["msg"])) for e in err.errors()]


def parse_text(path: Path, text: str, into: AgentConfig) -> None:
    """Add one file's entries and errors to `into`; later calls override earlier names."""
    try:
        data = load_toml(text)
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        into.errors.append(_toml_error(path, err))
        return
    lines = key_lines(text)
    for key in data:
        if key not in tuple(Section):
            into.errors.append(
                ConfigProblem(
                    path,
                    locate(lines, [key]),
                    key,
                    "unknown table; agents go in "
                    "[agents.<name>], model endpoints in [models.<name>]",
                )  # fmt: skip
            )
    for section in Section:
        entries = data.get(section, {})
        if not isinstance(entries, dict):
            into.errors.append(ConfigProblem(path, locate(lines, [section]), section,
                                             f"must be a table of {section}"))  # fmt: skip
            continue
        for name, raw in entries.items():
            _add_entry(path, lines, section, name, raw, into)


def _add_entry(
    path: Path, lines: Mapping[tuple[str, ...], int], section: Section, name: str, raw: Any,
    into: AgentConfig,
) -> None:  # fmt: skip
    """One entry of `section` into `into`, or its located errors."""
    known = into.raw[section]
    raw, problems = _extended(raw, known)
    settings: AgentSettings | ModelEntrySettings | None = None
    if not problems:
        parse = parse_entry if section is Section.AGENTS else parse_model_entry
        settings, problems = parse(name, raw)
    entry_path = (section.value, name)
    for loc, message in problems:
        str_loc = [str(p) for p in loc]
        into.errors.append(
            ConfigProblem(
                path,
                locate(lines, [*entry_path, *str_loc]),
                _field_name(entry_path, loc),
                message,
            )
        )
    line = locate(lines, entry_path)
    if isinstance(settings, ModelEntrySettings):
        into.models[name] = ModelEntry(name, settings, path, line)
    elif settings is not None:
        into.agents[name] = AgentEntry(name, settings, path, line)
    else:  # a broken override hides the entry it replaced
        (into.agents if section is Section.AGENTS else into.models).pop(name, None)
        known.pop(name, None)
        return
    known[name] = raw


def _toml_error(path: Path, err: tomllib.TOMLDecodeError | TooDeep) -> ConfigProblem:
    """`file:line: invalid TOML: …`: tomllib puts the position in its message only."""
    m = re.search(r"\(at line (\d+), column \d+\)", str(err))
    return ConfigProblem(path, int(m.group(1)) if m else None, None, f"invalid TOML: {err}")


def _extended(raw: Any, known: Mapping[str, dict[str, Any]]) -> tuple[Any, list[Problem]]:
    """`extends = "<entry>"`: the named entry's settings (declared before this one: in the
    defaults, the user's file or an earlier file) with this entry's on top; tables such as
    `limits` and `vars` are merged key by key."""
    if not isinstance(raw, dict) or "extends" not in raw:
        return raw, []
    own = {k: v for k, v in raw.items() if k != "extends"}
    base_name = raw["extends"]
    if not isinstance(base_name, str) or base_name not in known:
        names = ", ".join(sorted(known)) or "none"
        return raw, [(("extends",), f"no earlier entry {base_name!r} to extend (known: {names})")]
    merged = dict(known[base_name])
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged, []


# --- reading the files ---------------------------------------------------------------------


def user_config_file(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/icae-tui/agents.toml`; a relative or empty XDG_CONFIG_HOME is
    ignored, as the XDG spec says, for `~/.config`."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "icae-tui" / "agents.toml"


def load_files(paths: Sequence[Path], *, optional: Sequence[Path] = ()) -> AgentConfig:
    """Read `paths` in order. A file in `optional` that does not exist is skipped quietly;
    any other unreadable file is one error."""
    config = AgentConfig()
    for path in paths:
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            if path not in optional:
                config.errors.append(ConfigProblem(path, None, None, "file not found"))
            continue
        except (OSError, UnicodeDecodeError) as err:
            config.errors.append(ConfigProblem(path, None, None, f"cannot read: {err}"))
            continue
        config.files.append(path)
        parse_text(path, text, config)
    return config


def file_error(path: Path) -> ConfigProblem | None:
    """Why `path` cannot be an agents file at all (missing, unreadable, not UTF-8, not TOML),
    or None. A file the operator named stops the command on this; broken entries in a valid
    file do not (`load_files` reports them and the other entries still load)."""
    try:
        load_toml(path.read_bytes().decode("utf-8"))
    except OSError as err:
        return ConfigProblem(path, None, None, f"cannot read: {err.strerror or err}")
    except UnicodeDecodeError as err:
        return ConfigProblem(path, None, None, f"cannot read: {err}")
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        return _toml_error(path, err)
    return None


def load_agent_config(
    extra_files: Sequence[Path] = (), *, environ: Mapping[str, str] | None = None
) -> AgentConfig:
    """Defaults, then the user's file (if any), then `extra_files` (`--agents`)."""
    user = user_config_file(os.environ if environ is None else environ)
    return load_files([DEFAULTS_FILE, user, *extra_files], optional=[user])
