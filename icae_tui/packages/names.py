"""Package names as registries compare them, artifact file names, and a task's policy.

Pure: no I/O. PyPI compares names by PEP 503's normal form (case, `-`, `_` and `.` alike);
npm names are lower case already (scopes `@scope/name`). A task's `[packages]` allow and
deny lists are shell-style patterns, optionally limited to one ecosystem (`pypi:`, `npm:`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from icae_tui.domain.task import Ecosystem, PackagesSpec

_PEP503 = re.compile(r"[-_.]+")
_SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar")


def normal_name(ecosystem: Ecosystem, name: str) -> str:
    if ecosystem is Ecosystem.PYPI:
        return _PEP503.sub("-", name).lower()
    return name.lower()


def pypi_file_release(filename: str) -> tuple[str, str] | None:
    """(name, version) of a PyPI file (a wheel, an sdist, an egg), or None when the name does
    not say. Wheels and eggs split at `-`; an sdist's version is what follows the last `-`
    that a digit follows (sdist names may hold `-`)."""
    if filename.endswith((".whl", ".egg")):
        parts = filename.rsplit(".", 1)[0].split("-")
        return (parts[0], parts[1]) if len(parts) >= 2 else None
    for suffix in _SDIST_SUFFIXES:
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
            m = re.match(r"^(.+?)-(\d[^-]*)$", stem)
            return (m.group(1), m.group(2)) if m else None
    return None


def npm_tarball_version(package: str, filename: str) -> str | None:
    """The version in an npm tarball's name: `minimist-1.2.8.tgz` of `minimist`, and
    `node-22.0.0.tgz` of `@types/node` (the scope is not in the file name)."""
    base = package.rsplit("/", 1)[-1]
    if filename.startswith(base + "-") and filename.endswith(".tgz"):
        return filename[len(base) + 1 : -len(".tgz")] or None
    return None


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Policy:
    """What a task lets a run's agent install (`[packages]`), and the run's byte budget."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    budget_bytes: int | None = None  # None: no budget
    task_id: str = ""

    @classmethod
    def of(cls, spec: PackagesSpec, task_id: str, budget_bytes: int | None = None) -> Policy:
        if budget_bytes is None:
            budget_bytes = spec.budget_mb * 1024 * 1024
        return cls(tuple(spec.allow), tuple(spec.deny), budget_bytes, task_id)

    def judge(self, ecosystem: Ecosystem, name: str) -> Verdict:
        where = f"task {self.task_id}'s [packages]" if self.task_id else "the task's [packages]"
        if any(_matches(p, ecosystem, name) for p in self.deny):
            return Verdict(False, f"{ecosystem}:{name} is denied by {where} deny list")
        if self.allow and not any(_matches(p, ecosystem, name) for p in self.allow):
            return Verdict(False, f"{ecosystem}:{name} is not in {where} allow list")
        return Verdict(True)


def _matches(pattern: str, ecosystem: Ecosystem, name: str) -> bool:
    scope, sep, bare = pattern.partition(":")
    if sep:
        if scope != ecosystem.value:
            return False
        pattern = bare
    return fnmatch.fnmatchcase(normal_name(ecosystem, name), normal_name(ecosystem, pattern))
