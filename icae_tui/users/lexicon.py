"""A small software-vocabulary synonym lexicon for matching clarification questions.

Agents ask about the same thing in other words than a record's trigger phrases ("remove"
for "delete", "folder" for "directory", "exit status" for "exit code"). Each group below is
a set of words a developer uses interchangeably when asking about a tool's behaviour; the
matcher lets a question's word meet a record's word of the same group at a lower similarity
than an exact or misspelt form. Groups are narrow on purpose: a word that means different
things in different tools (`case`, `key`, `run`) is left out, so a synonym never makes two
unrelated records look alike. Words are stemmed with the matcher's own stemmer when loaded.
"""

from __future__ import annotations

from collections.abc import Callable

GROUPS: tuple[tuple[str, ...], ...] = (
    ("comment", "comments", "remark", "remarks", "annotation"),
    ("complain", "reject", "rejected", "refuse", "refused", "raise", "throw", "throws"),
    ("terminate", "quit", "exit", "exits"),
    ("due", "deadline", "overdue", "expiry", "expire", "expired"),
    ("render", "rendered", "shown", "displayed", "printed", "formatted"),
    ("mark", "marked", "flag", "flagged", "tag", "tagged"),
    ("null", "nil", "none", "na", "n/a", "missing"),
    ("json", "machine-readable"),
    ("translation", "translations", "locale", "locales", "language", "languages", "i18n"),
    ("bool", "boolean", "yes/no", "true/false"),
    ("increment", "incrementing", "bump", "bumping"),
    ("finished", "completed", "done", "complete"),
    ("task", "tasks", "item", "items", "todo", "todos"),
    ("wipe", "reset", "clear", "cleared"),
    ("health", "healthcheck", "liveness", "readiness", "probe"),
    ("quoting", "quote", "quotes", "quoted"),
    ("memory", "ram", "big", "large", "huge", "size"),
    ("walk", "traverse", "traversal", "scan", "crawl"),
    ("repo", "repository"),
    ("multiline", "multi-line", "continuation", "spans", "wrap", "wrapped"),
    ("environment", "runtime", "interpreter"),
    (
        "error",
        "errors",
        "fail",
        "fails",
        "failure",
        "failing",
        "invalid",
        "malformed",
        "bad",
        "broken",
        "wrong",
        "exception",
        "crash",
    ),
    ("output", "print", "prints", "display", "show", "shows", "emit", "echo", "stdout", "outputs"),
    ("remove", "delete", "erase", "purge", "discard", "drop"),
    ("folder", "directory", "dir", "folders", "directories"),
    ("subfolder", "subdirectory", "subdir", "nested"),
    (
        "library",
        "libraries",
        "package",
        "packages",
        "dependency",
        "dependencies",
        "module",
        "modules",
        "third-party",
        "external",
        "pip",
        "npm",
        "crate",
        "crates",
    ),
    ("config", "configuration", "settings", "setting", "configure"),
    (
        "option",
        "options",
        "flag",
        "flags",
        "argument",
        "arguments",
        "parameter",
        "parameters",
        "param",
        "params",
        "switch",
        "switches",
    ),
    (
        "duplicate",
        "duplicates",
        "dupe",
        "dupes",
        "identical",
        "copies",
        "dedupe",
        "deduplicate",
        "deduplication",
    ),
    ("sort", "sorted", "sorting", "order", "ordering", "ordered", "arrange"),
    ("empty", "blank", "zero-length", "zero-byte"),
    ("log", "logs", "logging", "logfile", "journal"),
    ("count", "counts", "number", "total", "tally", "how many"),
    ("default", "defaults", "preset"),
    ("compare", "comparison", "comparing", "precedence", "newer", "older"),
    ("parse", "parsing", "read", "decode", "interpret", "load"),
    ("format", "formatting", "layout", "shape", "structure"),
    ("missing", "absent", "nonexistent", "non-existent", "unavailable", "doesnt"),
    ("overwrite", "overwritten", "clobber", "replace", "replaced"),
    ("skip", "skipped", "ignore", "ignored", "exclude", "excluded", "omit"),
    ("lowercase", "lower-case", "downcase"),
    ("uppercase", "upper-case", "capital", "capitals", "capitalize"),
    ("limit", "limits", "quota", "cap", "maximum", "max", "ceiling"),
    ("throttle", "throttling", "rate-limit", "ratelimit"),
    ("header", "headers", "heading"),
    ("delimiter", "separator", "delimiters", "separators"),
    ("encoding", "charset", "utf-8", "utf8", "unicode"),
    (
        "test",
        "tests",
        "testcase",
        "testcases",
        "example",
        "examples",
        "sample",
        "samples",
        "fixture",
        "fixtures",
    ),
    ("invoke", "call", "execute", "launch", "invocation"),
    ("stdin", "standard input"),
    ("timeout", "time-out", "deadline"),
    ("store", "storage", "save", "persist", "persistence", "database", "disk", "stored", "saved"),
    ("priority", "priorities", "importance", "urgency", "urgent"),
    ("link", "links", "url", "urls", "href", "hyperlink"),
    ("anchor", "anchors", "fragment", "fragments"),
    ("image", "images", "picture", "img"),
    ("round", "rounding", "rounded", "precision", "decimals", "decimal"),
    ("negative", "minus", "below zero"),
    ("exit", "exits", "return code", "exit status", "status code"),
    ("collision", "collisions", "clash", "conflict", "conflicts", "collide"),
    ("extension", "extensions", "suffix", "filetype", "file type"),
    ("hidden", "dotfile", "dotfiles"),
    ("summary", "overview", "report", "stats", "statistics"),
    ("whitespace", "spaces", "blank space"),
    ("recursive", "recursively", "subtree", "tree"),
    ("preview", "dry-run", "dryrun", "simulate"),
    ("prefix", "leading"),
    ("version", "versions", "release"),
    ("allowed", "permitted", "accepted", "valid", "supported"),
)


def build(stem: Callable[[str], str]) -> dict[str, frozenset[str]]:
    """form -> the other stemmed forms of its groups (single words only: a multi-word entry
    is matched by its parts elsewhere)."""
    out: dict[str, set[str]] = {}
    for group in GROUPS:
        forms = {stem(w.replace("-", "")) for w in group if " " not in w}
        for form in forms:
            out.setdefault(form, set()).update(forms - {form})
    return {k: frozenset(v) for k, v in out.items()}
