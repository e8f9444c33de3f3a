"""Language runtimes: which Debian packages give a task's images its language (pure, no I/O).

A task on the offline Debian base (`icae-base:bookworm`, which carries only python3) gets its
runtime from a recipe chosen by its `language` (or by an explicit `[image] runtime`): the
recipe's Debian packages, plus the task's own `[image] packages`, are installed once at
image-build time into a runtime image that the task's images are built from
(`sandbox/docker/runtime_images.py`). A task that names another base image brings its runtime
in that image, unless it sets `[image] runtime` too.

A language with no recipe cannot be provided here: `runtime_problem` says so, and the catalog
reports it as the task file's error, before anything is built or run.
"""

from __future__ import annotations

from dataclasses import dataclass

from icae_tui.domain.task import TaskSpec

DEBIAN_BASE = "icae-base:bookworm"
NO_RUNTIME = "none"  # `[image] runtime = "none"`: no runtime layer, whatever the language
# A language nobody stated (an import with no record of it) asks for nothing: the base as it is.
UNSTATED = frozenset({"", "unknown", NO_RUNTIME})


@dataclass(frozen=True)
class Runtime:
    name: str  # the recipe's name, e.g. "javascript"
    packages: tuple[str, ...]  # Debian (bookworm) packages, installed with no recommends
    probe: str  # a shell line that exits 0 when the runtime works in an image

    @property
    def empty(self) -> bool:
        return not self.packages


# The recipes, by canonical name; ALIASES maps other spellings of a language to one.
RECIPES: dict[str, Runtime] = {
    r.name: r
    for r in (
        Runtime("python", (), "python3 --version"),  # the base's own python3
        Runtime("shell", (), "sh -c true"),
        Runtime("javascript", ("nodejs",), "node --version"),
        Runtime("typescript", ("nodejs", "node-typescript"), "tsc --version"),
        Runtime("go", ("golang-go",), "go version"),
        Runtime("rust", ("rustc", "cargo"), "rustc --version && cargo --version"),
        Runtime("java", ("default-jdk-headless",), "javac -version && java -version"),
        Runtime("ruby", ("ruby",), "ruby --version"),
        Runtime("php", ("php-cli",), "php --version"),
        Runtime("c", ("gcc", "libc6-dev", "make"), "gcc --version && make --version"),
        Runtime("cpp", ("g++", "make"), "g++ --version && make --version"),
    )
}
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
}


def canonical(language: str) -> str:
    key = language.strip().lower()
    return ALIASES.get(key, key)


def known_languages() -> list[str]:
    return sorted(RECIPES)


def recipe_for(language: str) -> Runtime | None:
    """The recipe for a language (any spelling in ALIASES), or None when there is none."""
    return RECIPES.get(canonical(language))


def _selected(spec: TaskSpec) -> tuple[str, str] | None:
    """(field, value) that chooses the task's runtime, or None when its base brings its own."""
    if spec.image.runtime is not None:
        return "image.runtime", spec.image.runtime
    if spec.image.base == DEBIAN_BASE:
        return "language", spec.language
    return None


def runtime_problem(spec: TaskSpec) -> tuple[str, str] | None:
    """(field, message) when the task's runtime cannot be provided here, else None."""
    chosen = _selected(spec)
    if chosen is None or canonical(chosen[1]) in UNSTATED:
        return None
    where, value = chosen
    if recipe_for(value) is not None:
        return None
    why = f"no runtime recipe for language {value!r}: this machine cannot provide it"
    if where == "language":
        why += f" on {DEBIAN_BASE} (name a base image that has it, or set [image] runtime)"
    return where, f"{why}; known: {', '.join(known_languages())}"


def runtime_of(spec: TaskSpec) -> Runtime | None:
    """The runtime layer a task's images are built from, or None when they need none (the
    base brings it, or the recipe is empty and the task adds no packages). Raises ValueError
    for a language with no recipe (the catalog reports that before anything is built)."""
    if (problem := runtime_problem(spec)) is not None:
        raise ValueError(f"field '{problem[0]}': {problem[1]}")
    chosen = _selected(spec)
    base = None if chosen is None or canonical(chosen[1]) in UNSTATED else recipe_for(chosen[1])
    extra = tuple(spec.image.packages)
    if base is None:
        return Runtime("packages", extra, "true") if extra else None
    if not extra:
        return None if base.empty else base
    merged = tuple(dict.fromkeys(base.packages + extra))
    return Runtime(base.name, merged, base.probe)
