"""Language runtimes: which Debian release and packages give a task's images its language
(pure, no I/O).

A task on the default Debian base (`[image] base = "icae-base:bookworm"`, the format's
default) gets its runtime from a recipe chosen by its `language` (or by an explicit
`[image] runtime`). Each recipe states its Debian release: the runtime image is built from
that release's offline base (`icae-base:trixie` for every recipe here, so the languages are
at or above the versions the benchmarks run), with the recipe's packages and the task's own
`[image] packages` installed once at image-build time (`sandbox/docker/images.py`). A task
that names another base image brings its runtime in that image, unless it sets
`[image] runtime` too.

A language is one of three things here:
- a recipe (`RECIPES`): Debian packages of a release, and a probe that prints the version;
- a refusal (`REFUSALS`): a language a benchmark uses that no registry this machine reaches
  provides at the benchmark's version. The task loads, `icae tasks check` fails it and an
  image build stops with the refusal's message, which names what to supply (an image with
  the language, `docker load`ed and named in `[image] base`);
- unknown: `runtime_problem` says so and the catalog reports it as the task file's error,
  before anything is built or run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum

from icae_tui.domain.task import TaskSpec


class Release(StrEnum):
    """Debian releases the offline bases are built from (debootstrap, no registry)."""

    BOOKWORM = "bookworm"
    TRIXIE = "trixie"

    @property
    def base(self) -> str:
        return f"icae-base:{self.value}"


# The format's default `[image] base` (domain/task.py): "the Debian base", on which a recipe
# chooses the release. Naming another release's base builds the recipe on that one.
DEBIAN_BASE = Release.BOOKWORM.base
DEBIAN_BASES = {release.base: release for release in Release}
NO_RUNTIME = "none"  # `[image] runtime = "none"`: no runtime layer, whatever the language
# A language nobody stated (an import with no record of it) asks for nothing: the base as it is.
UNSTATED = frozenset({"", "unknown", NO_RUNTIME})
_VERSION = re.compile(r"\d+(?:\.\d+)+|\d+")


@dataclass(frozen=True)
class Runtime:
    name: str  # the recipe's name, e.g. "javascript"
    packages: tuple[str, ...]  # Debian packages of `release`, installed with no recommends
    probe: str  # a shell line that exits 0 when the runtime works; prints its version first
    release: Release = Release.TRIXIE
    version: str = ""  # the release's version of the language, as stated (the probe's is kept)
    benchmark: str = ""  # the version ICAE-EVAL runs it at; "" where ICAE-EVAL has none

    @property
    def empty(self) -> bool:
        return not self.packages


@dataclass(frozen=True)
class Refusal:
    """A language no registry here provides at the benchmark's version, and what to supply."""

    name: str
    benchmark: str  # ICAE-EVAL's version
    image: str  # the image ICAE-EVAL runs it on
    why: str  # what the registries here have instead

    def message(self) -> str:
        return (
            f"language {self.name} ({self.benchmark} in ICAE-EVAL) is not provided here: "
            f"{self.why}. Supply an image that has it: `docker load -i FILE.tar` an image such "
            f"as {self.image} into the engine (or `docker pull {self.image}` where a registry "
            "is reachable) and name it in task.toml's [image] base"
        )


# The recipes, by canonical name; ALIASES maps other spellings of a language to one.
# Versions as trixie has them (apt-cache policy, and each probe at image build).
RECIPES: dict[str, Runtime] = {
    r.name: r
    for r in (
        # pip and venv: agents install packages the normal way (through the package gateway).
        # Bookworm's 3.11 is ICAE-EVAL's python:3.11, and Aider (aider-chat, numpy 1.26)
        # installs only below 3.13; CLI-Tool-Bench's python:latest tools are imported onto
        # trixie's 3.13 (their [image] base names it: importers/cli_tool_bench.py).
        Runtime("python", ("python3", "python3-pip", "python3-venv"), "python3 --version",
                release=Release.BOOKWORM, version="3.11", benchmark="3.11"),  # fmt: skip
        Runtime("shell", (), "sh -c true"),
        Runtime("javascript", ("nodejs", "npm"), "node --version && npm --version",
                version="20.19", benchmark="20"),  # fmt: skip
        # ICAE-EVAL's typescript runs on node:20 too: the node version is the one compared
        Runtime("typescript", ("nodejs", "npm", "node-typescript"),
                "node --version && tsc --version", version="20.19", benchmark="20"),  # fmt: skip
        Runtime("go", ("golang-go",), "go version", version="1.24", benchmark="1.22"),
        Runtime("rust", ("rustc", "cargo"), "rustc --version && cargo --version",
                version="1.85", benchmark="1.81"),  # fmt: skip
        # `java -version` prints on stderr: the probe's stdout and stderr are both read
        Runtime("java", ("default-jdk-headless",), "javac -version && java -version",
                version="21", benchmark="17"),  # fmt: skip
        Runtime("ruby", ("ruby",), "ruby --version", version="3.3", benchmark="3.2"),
        Runtime("php", ("php-cli",), "php --version", version="8.4", benchmark="8.2"),
        Runtime("c", ("gcc", "libc6-dev", "make"), "gcc -dumpfullversion && make --version",
                version="14.2"),  # fmt: skip
        Runtime("cpp", ("g++", "make"), "g++ -dumpfullversion && make --version",
                version="14.2", benchmark="12"),  # fmt: skip
    )
}
REFUSALS: dict[str, Refusal] = {
    r.name: r
    for r in (
        Refusal("dart", "3.5", "dart:3.5",
                "Debian has no Dart SDK, and pub.dev and Docker Hub are not reachable"),
        Refusal("kotlin", "1.9.25", "kotlin:1.9.25",
                "Debian trixie's kotlin is 1.3.31, and Maven Central and Docker Hub are not "
                "reachable"),
        Refusal("csharp", "8.0", "mcr.microsoft.com/dotnet/sdk:8.0",
                "Debian has no .NET SDK (mono is not .NET 8), and NuGet and Microsoft's "
                "registry are not reachable"),
    )
}  # fmt: skip
# ICAE-EVAL's twelve languages (importers/icae_layout.py LANGUAGE_IMAGES), each a recipe or a
# refusal here.
ICAE_LANGUAGES = ("python", "java", "go", "rust", "ruby", "php", "dart", "kotlin", "javascript",
                  "typescript", "cpp", "csharp")  # fmt: skip
ALIASES = {
    "python3": "python",
    "bash": "shell",
    "sh": "shell",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "ts": "typescript",
    "golang": "go",
    "c++": "cpp",
    "cxx": "cpp",
    "c#": "csharp",
    "cs": "csharp",
    "kt": "kotlin",
}


def canonical(language: str) -> str:
    key = language.strip().lower()
    return ALIASES.get(key, key)


def known_languages() -> list[str]:
    return sorted(RECIPES)


def recipe_for(language: str) -> Runtime | None:
    """The recipe for a language (any spelling in ALIASES), or None when there is none."""
    return RECIPES.get(canonical(language))


def refusal_for(language: str) -> Refusal | None:
    return REFUSALS.get(canonical(language))


def is_debian_base(image: str) -> bool:
    return image in DEBIAN_BASES


def _selected(spec: TaskSpec) -> tuple[str, str] | None:
    """(field, value) that chooses the task's runtime, or None when its base brings its own."""
    if spec.image.runtime is not None:
        return "image.runtime", spec.image.runtime
    if is_debian_base(spec.image.base):
        return "language", spec.language
    return None


def runtime_problem(spec: TaskSpec) -> tuple[str, str] | None:
    """(field, message) when the task's language is unknown here (the task file's error),
    else None. A refused language is not one: see `runtime_refusal`."""
    chosen = _selected(spec)
    if chosen is None or canonical(chosen[1]) in UNSTATED:
        return None
    where, value = chosen
    if recipe_for(value) is not None or refusal_for(value) is not None:
        return None
    why = f"no runtime recipe for language {value!r}: this machine cannot provide it"
    if where == "language":
        why += f" on {DEBIAN_BASE} (name a base image that has it, or set [image] runtime)"
    return where, f"{why}; known: {', '.join(known_languages())}"


def runtime_refusal(spec: TaskSpec) -> tuple[str, str] | None:
    """(field, message) when the task's runtime is a language no registry here provides:
    its image cannot be had until the user supplies one."""
    chosen = _selected(spec)
    if chosen is None or (refusal := refusal_for(chosen[1])) is None:
        return None
    return chosen[0], refusal.message()


@dataclass(frozen=True)
class ImagePlan:
    """What a task's images are built on: `base`, then the `runtime` layer (None: none)."""

    base: str
    runtime: Runtime | None

    @property
    def key(self) -> str:
        """The runtime image's key ("" when there is none): its label, and a card's."""
        return "" if self.runtime is None else image_key(self.base, self.runtime)


def image_key(base: str, runtime: Runtime) -> str:
    """What a runtime image holds: `icae-base:trixie + nodejs npm`."""
    return f"{base} + {' '.join(sorted(set(runtime.packages)))}"


def image_plan(spec: TaskSpec) -> ImagePlan:
    """The base and runtime layer of a task's images. A recipe on the default Debian base is
    built on its own release's base. Raises ValueError for an unknown or refused language
    (the catalog and `icae tasks check` report those before anything is built)."""
    for problem in (runtime_problem(spec), runtime_refusal(spec)):
        if problem is not None:
            raise ValueError(f"field '{problem[0]}': {problem[1]}")
    chosen = _selected(spec)
    recipe = None if chosen is None or canonical(chosen[1]) in UNSTATED else recipe_for(chosen[1])
    extra = tuple(spec.image.packages)
    base = spec.image.base
    if recipe is None:
        release = DEBIAN_BASES.get(base, Release.TRIXIE)
        return ImagePlan(base, Runtime("packages", extra, "true", release) if extra else None)
    if base == DEBIAN_BASE:
        base = recipe.release.base
    if not extra:
        return ImagePlan(base, None if recipe.empty else recipe)
    return ImagePlan(base, replace(recipe, packages=tuple(dict.fromkeys(recipe.packages + extra))))


def runtime_of(spec: TaskSpec) -> Runtime | None:
    """The runtime layer a task's images are built from (`image_plan`'s)."""
    return image_plan(spec).runtime


REFUSED_KEY = "refused"


def runtime_key(spec: TaskSpec) -> str:
    """The key of the runtime image a task's images are built from ("" when none, e.g. its
    base brings its runtime; REFUSED_KEY for a refused or unknown language)."""
    try:
        return image_plan(spec).key
    except ValueError:
        return REFUSED_KEY


def parse_version(output: str) -> str:
    """The first version number in a probe's output (`v20.19.2` → `20.19.2`, `go1.24.4` →
    `1.24.4`); "" when there is none."""
    found = _VERSION.search(output)
    return found.group(0) if found else ""


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in parse_version(version).split(".") if part)


def meets(found: str, wanted: str) -> bool:
    """Whether version `found` is at or above `wanted` (`3.3.8` meets `3.2`)."""
    have, need = version_tuple(found), version_tuple(wanted)
    return bool(have) and have[: len(need)] >= need


# How an image build says which runtime version a task runs on (a progress line, so a run's
# trace and its report keep it): `runtime version: ruby 3.3.8 (icae-base:trixie + ruby)`.
VERSION_LINE = re.compile(r"^runtime version: (?P<name>\S+) (?P<version>\S+)")


def version_line(base: str, runtime: Runtime, version: str) -> str:
    return (f"runtime version: {runtime.name} {version or 'unknown'} "
            f"({image_key(base, runtime)})")  # fmt: skip


def parse_version_line(message: str) -> tuple[str, str] | None:
    """(runtime, version) of a `version_line`, else None."""
    found = VERSION_LINE.match(message)
    return (found["name"], found["version"]) if found else None


def version_text(key: str, built: dict[str, str] | None) -> str:
    """A task's language version as a listing states it, from the runtime images the engine
    has (`built`: key → version; None when the engine could not be asked)."""
    if key == REFUSED_KEY:
        return "not provided here"
    if not key:
        return "as its base image has it"
    if built is None:
        return "unknown (no engine)"
    return built.get(key) or "not built yet"
