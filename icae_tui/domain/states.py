"""The named states of a run, one definition each. StrEnums: they are stored and shown as
their values, and compare equal to those strings (stored runs and tests keep working)."""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    """A run's phases, in order."""

    PREPARE = "prepare"
    GENERATE = "generate"
    FREEZE = "freeze"
    BUILD = "build"
    EVALUATE = "evaluate"
    SCORE = "score"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # its owner process died; closed by the next start or reap


class FailureKind(StrEnum):
    """Why a run failed, so a batch knows what to retry: infrastructure is retried, the
    others are results (the agent's, the operator's input, or a bug of ours, said loudly)."""

    INFRASTRUCTURE = "infrastructure"  # the engine, a box, an image build, a model endpoint
    AGENT = "agent"  # the agent could not be made (its entry, its readiness)
    CONFIG = "config"  # a task, an option or a file the operator gave is wrong
    INTERNAL = "internal"  # a bug of ours


class ResponderMode(StrEnum):
    """Who answers the agent's questions right now; the operator switches at any moment."""

    SIMULATED = "simulated"
    HUMAN = "human"
    ASSISTED = "assisted"


class AnsweredBy(StrEnum):
    """Who gave one answer: a mode's responder, the model user, or the budget's refusal."""

    SIMULATED = "simulated"
    MODEL = "model"
    HUMAN = "human"
    ASSISTED = "assisted"
    BUDGET = "budget"


class UserMode(StrEnum):
    """How the model-mode user uses its model (users/model_user.py)."""

    CHOOSE = "choose"  # one call: it picks among the matcher's candidates
    VERIFY = "verify"  # the candidates checked one at a time with a constrained yes/no
    HYBRID = "hybrid"  # the matcher's answer, vetoed by the model; its fallbacks verified


class Stream(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"


class ModelRole(StrEnum):
    """Who a model call of a run was for: every role goes through the run's gateway."""

    AGENT = "agent"  # the agent under test
    USER = "user"  # the simulated user in model mode
    JUDGE = "judge"  # a scorer that asks a model


class StopReason(StrEnum):
    """Why an agent stopped building."""

    SUBMITTED = "submitted"
    STEP_LIMIT = "step_limit"
    TIME_LIMIT = "time_limit"
    MODEL_LIMIT = "model_limit"  # calls, tokens or cost: the gateway refused
    AGENT_ERROR = "agent_error"  # the model or the agent's output could not go on
    INFRA_ERROR = "infra_error"  # the endpoint failed after retries: not the agent's fault
    BOX_DIED = "box_died"  # every process of its box ended (`kill -9 -1`): its own doing
    DISK_LIMIT = "disk_limit"  # its box's writable layer is full


class PackageMode(StrEnum):
    """Where a run's package gateway (packages/) answers from."""

    LIVE = "live"  # the registries (each body kept in the host's cache); the cache if they fail
    CACHE = "cache"  # only the cache: offline, the same bytes as before
    OFF = "off"  # no gateway: nothing can be installed


class PackageSource(StrEnum):
    UPSTREAM = "upstream"  # fetched from the registry for this request (and cached)
    CACHE = "cache"  # the host's package cache answered
