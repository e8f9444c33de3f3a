"""The report's formats by name: each module of this package that renders one registers it
(`register_format`), and everything that offers or picks a format reads this registry —
`icae runs export --format`'s choices, a report file's format from its suffix
(`results/report.py`'s `write_report`, the console's export through it), `icae run --report`.

*Add a format*: one module in icae_tui/results/formats/ with a function from build_report's
dict to text (str) or bytes, and at its end
`register_format(ReportFormat("ext", "what it is for", render_ext))`. The package's modules
are imported on the first look-up, so nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Render = Callable[[dict[str, Any]], "str | bytes"]

DEFAULT = "json"  # a file whose suffix names no format: the only format before there were more


@dataclass(frozen=True)
class ReportFormat:
    """A format a report is rendered in."""

    suffix: str  # its name in the code and its file's suffix: "json", "md", "xml", "html"
    description: str
    render: Render  # build_report's dict → the file's text (str) or bytes
    names: tuple[str, ...] = ()  # what --format takes, in order (default: the suffix)
    suffixes: tuple[str, ...] = ()  # other file suffixes that name it (".markdown", ".htm")
    order: int = 100  # where it comes in lists (--format's choices)

    @property
    def format_names(self) -> tuple[str, ...]:
        return self.names or (self.suffix,)


_FORMATS: dict[str, ReportFormat] = {}
_loaded = False


def register_format(fmt: ReportFormat) -> ReportFormat:
    """Add `fmt` (a later registration of the same suffix replaces the earlier)."""
    _FORMATS[fmt.suffix] = fmt
    return fmt


def _load() -> None:
    """Import every module of this package once: each format's registers it."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = __name__.rpartition(".")[0]
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{package}.{module.name}")


def report_formats() -> list[ReportFormat]:
    """Every registered format, in their order."""
    _load()
    return sorted(_FORMATS.values(), key=lambda f: (f.order, f.suffix))


def format_names() -> list[str]:
    """What `--format` takes: each format's names, in order."""
    return [name for fmt in report_formats() for name in fmt.format_names]


def report_format(name: str | ReportFormat) -> ReportFormat:
    """The format `name` (its suffix, or one of its --format names) names; ValueError if none."""
    if isinstance(name, ReportFormat):
        return name
    for fmt in report_formats():
        if name == fmt.suffix or name in fmt.format_names:
            return fmt
    raise ValueError(f"{name!r} is not a report format")


def format_for_path(path: Path) -> ReportFormat:
    """The format a file's suffix names (any letter case); the default (JSON) when it names
    none, or has none."""
    suffix = path.suffix.lower().lstrip(".")
    for fmt in report_formats():
        if suffix == fmt.suffix or suffix in fmt.suffixes:
            return fmt
    return report_format(DEFAULT)
