"""One exception hierarchy for the package, so that three different things stay apart:

- `InfraError`: the infrastructure failed — the engine, a box the engine could not run or
  inspect, an image build, a model endpoint. Not the agent's doing, not ours: a case whose
  side the engine could not run is retried, a lost engine fails the run with its cause.
- `ConfigError`: what an operator or a task author wrote is wrong (a task file, an agents
  file, an option). A clear message naming what and where.
- Our own bugs: anything else. Never caught as engine trouble, never turned into a verdict
  against a delivery: a bug in case handling fails the run, loudly, with its cause.

The delivery's failures are not exceptions at all: they are verdicts (domain/results.py).
"""

from __future__ import annotations


class IcaeError(Exception):
    """Everything this package raises on purpose."""


class InfraError(IcaeError):
    """The infrastructure failed: not the agent's fault, not a bug of ours."""


class SandboxError(InfraError):
    """A sandbox backend (an engine) could not do what was asked."""


class EngineUnavailable(SandboxError):
    """The engine cannot be reached (not installed, not started, or gone mid-run)."""


class EngineLost(SandboxError):
    """The engine itself is gone (not one case's trouble): the run cannot go on."""


class BoxError(SandboxError):
    """The engine refused or failed an operation on one box (a call refused, a box gone,
    a freeze that did not take, its files unreadable from the host)."""


class ImageBuildError(SandboxError):
    """An image could not be built (a setup step failed, the base cannot be made)."""


class ConfigError(IcaeError):
    """Bad input: a task, an agents file, an engine entry or an option."""
