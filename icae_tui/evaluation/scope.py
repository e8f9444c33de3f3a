"""What of a case's run is judged: the side effects within the task's compared roots, less
the oracle's own install; stdout and stderr under the task's stderr policy. Pure.

Side effects are scoped twice, to the same set: when a box's changes are collected (as
ignore globs, `collection_globs`: the count and the digest past the kept entries then cover
only what is judged) and again before comparison (`scoped_run`: a run recorded without the
globs, or stored before them, is judged the same way).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import replace

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import SideRun
from icae_tui.domain.task import StderrPolicy, TaskSpec
from icae_tui.evaluation.compare import exact_match
from icae_tui.sandbox.effects import changes_digest

# Where a pinned registry package is installed (images.package_install_line: pip into the
# system's Python, npm --global): the oracle's install, which its own runs may touch (a
# launcher that makes its bundled binary executable on every run).
_PIP_SITES = ("/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages")
_NPM_GLOBAL = ("/usr/local/lib/node_modules",)


def _under(folder: str) -> tuple[str, str]:
    return folder, f"{folder}/*"


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def oracle_install_globs(spec: TaskSpec) -> tuple[str, ...]:
    """The oracle's own install: its folder, its entry when that is one path (a launcher
    moved off PATH), its pinned package's install tree. Never judged, on either side: no
    delivery can match what the oracle does to itself. A folder that holds (or is in) the
    work directory or the delivery's workspace is not one."""
    if spec.oracle is None:
        return ()
    own = [spec.oracle.path.rstrip("/")]
    if re.fullmatch(r"/\S+", entry := spec.oracle.entry.strip()):
        own.append(entry)
    shared = [p.rstrip("/") for p in (spec.cases.workdir, spec.delivery.workspace)]
    folders = [_glob_escape(f) for f in own if f and not any(_overlaps(f, p) for p in shared)]
    if spec.oracle.package is not None:  # the sites are globs already, and system folders
        folders += _PIP_SITES if spec.oracle.package.startswith("pip:") else _NPM_GLOBAL
    return tuple(g for f in folders for g in _under(f))


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def outside_globs(roots: Iterable[str]) -> tuple[str, ...]:
    """Globs that match exactly the absolute paths outside every root (a root itself and
    what is under it stay unmatched). fnmatch has no negation: this walks the roots' common
    prefixes as a trie, and at each prefix matches every next character no root continues
    with; a path that ends on a proper prefix of a root is matched by name."""
    wanted = {r.rstrip("/") + "/" for r in roots}
    if not wanted:
        return ("*",)
    globs: list[str] = []
    prefixes = {w[:i] for w in wanted for i in range(1, len(w))} - {""}
    for p in sorted(prefixes | {"/"}):
        if any(p.startswith(w) for w in wanted):
            continue  # inside a root
        if p + "/" not in wanted:  # the prefix itself as a path, unless it is a root
            globs.append(_glob_escape(p))
        nexts = sorted({w[len(p)] for w in wanted if w.startswith(p) and len(w) > len(p)})
        # '-' last (else a range); '!' and ']' never appear in a root (CaseDefaults)
        chars = "".join(c for c in nexts if c != "-") + ("-" if "-" in nexts else "")
        globs.append(f"{_glob_escape(p)}[!{chars}]*")
    return tuple(globs)


def collection_globs(spec: TaskSpec) -> tuple[str, ...]:
    """Ignore globs for a box's change collection: the oracle's install, and, with compared
    roots, everything outside them (without them, the whole box as before)."""
    roots = spec.cases.compare_roots
    return oracle_install_globs(spec) + (outside_globs(roots) if roots is not None else ())


def in_scope(spec: TaskSpec, path: str) -> bool:
    """Whether a recorded change's path is judged (a work-directory path is relative)."""
    absolute = path if path.startswith("/") else f"{spec.cases.workdir.rstrip('/')}/{path}"
    if any(fnmatch.fnmatchcase(absolute, g) for g in oracle_install_globs(spec)):
        return False
    roots = spec.cases.compare_roots
    return roots is None or any(absolute == r or absolute.startswith(r + "/") for r in roots)


def scoped_run(spec: TaskSpec, run: SideRun) -> SideRun:
    """`run` with only the changes judged, their count and digest. Collected under
    `collection_globs`, nothing kept is out of scope and the run is as recorded. A run past
    the kept cap with changes out of scope (recorded without the globs) cannot be recounted:
    its digest, over the whole box, stays, and it is judged as it was recorded."""
    kept = [c for c in run.changes if in_scope(spec, c.path)]
    if len(kept) == len(run.changes):
        return run
    if run.changes_total > len(run.changes):
        return run.model_copy(update={"changes": kept})
    return run.model_copy(update={"changes": kept, "changes_total": len(kept),
                                  "changes_sha256": changes_digest(kept)})  # fmt: skip


def scoped(spec: TaskSpec, outcome: SideOutcome) -> SideOutcome:
    run = scoped_run(spec, outcome.run)
    return outcome if run is outcome.run else replace(outcome, run=run)


def _merged(side: SideOutcome) -> str:
    return side.stdout_full.decode(errors="replace") + side.run.stderr


def same_merged(oracle: SideOutcome, delivery: SideOutcome) -> bool:
    """stdout then stderr as one stream, equal byte for byte or after whitespace
    normalisation (StderrPolicy.MERGE); what was cut of either stream is not compared but
    by its digest."""
    o, d = oracle.run, delivery.run
    if (o.stdout_sha256, o.stderr_sha256) == (d.stdout_sha256, d.stderr_sha256):
        return True
    for stream, cut in (
        ("stdout", any(s.run.stdout_bytes > len(s.stdout_full) for s in (oracle, delivery))),
        ("stderr", any(r.stderr_bytes > len(r.stderr.encode()) for r in (o, d))),
    ):
        if cut and getattr(o, f"{stream}_sha256") != getattr(d, f"{stream}_sha256"):
            return False  # cannot normalise what was not kept; different bytes stay different
    return exact_match(_merged(oracle), _merged(delivery))


def stderr_judged(spec: TaskSpec) -> bool:
    """Whether two oracle runs must agree on stderr: unless it is not judged at all."""
    return spec.cases.stderr is not StderrPolicy.IGNORE
