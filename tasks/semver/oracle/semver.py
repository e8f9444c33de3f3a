#!/usr/bin/env python3
"""semver: a Semantic Versioning calculator (golden implementation).

Reads ONE JSON object on stdin and prints the result of its `op`:

    parse           {"version"}                 five key=value lines
    compare         {"a", "b"}                  -1, 0 or 1
    bump            {"version", "part", "preid"?}   the next version
    satisfies       {"version", "range"}        true or false
    sort            {"versions"}                one version per line, ascending
    max_satisfying  {"versions", "range"}       the highest match, or none

Any error prints exactly `error=<category>` on stdout, nothing on stderr, and exits 2.
Python 3.11 standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass

EXIT_OK = 0
EXIT_ERROR = 2

OPS = ("parse", "compare", "bump", "satisfies", "sort", "max_satisfying")
PARTS = ("major", "minor", "patch", "prerelease")
DEFAULT_PREID = "rc"

_NUMBER = re.compile(r"0|[1-9][0-9]*")
_DIGITS = re.compile(r"[0-9]+")
_IDENT = re.compile(r"[0-9A-Za-z-]+")
_X = frozenset({"x", "X", "*"})
# Range operators, longest first so that `<=` is not read as `<`.
_RANGE_OPS = ("<=", ">=", "~>", "<", ">", "=", "^", "~")
_OP_CHARS = frozenset("<>=^~")


class Failure(Exception):
    """A reportable error; `category` is printed as `error=<category>`."""

    def __init__(self, category: str) -> None:
        super().__init__(category)
        self.category = category


# --- versions ---------------------------------------------------------------------------

Ident = int | str


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[Ident, ...] = ()
    build: tuple[str, ...] = ()

    def key(self) -> tuple:
        """Sort key implementing SemVer 2.0.0 precedence (build metadata ignored)."""
        if not self.pre:
            return (self.major, self.minor, self.patch, 1, ())
        ids = tuple((0, i, "") if isinstance(i, int) else (1, 0, i) for i in self.pre)
        return (self.major, self.minor, self.patch, 0, ids)

    @property
    def triple(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(i) for i in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def compare(a: Version, b: Version) -> int:
    ka, kb = a.key(), b.key()
    return (ka > kb) - (ka < kb)


def _number(text: str) -> int | None:
    return int(text) if _NUMBER.fullmatch(text) else None


def parse_pre_ident(text: str) -> Ident | None:
    """One pre-release identifier: a number without leading zeros, or alphanumerics."""
    if _DIGITS.fullmatch(text):
        return _number(text)
    return text if _IDENT.fullmatch(text) else None


def _pre_idents(text: str) -> tuple[Ident, ...] | None:
    out: list[Ident] = []
    for part in text.split("."):
        ident = parse_pre_ident(part)
        if ident is None:
            return None
        out.append(ident)
    return tuple(out)


def _build_idents(text: str) -> tuple[str, ...] | None:
    parts = text.split(".")
    return tuple(parts) if all(_IDENT.fullmatch(p) for p in parts) else None


def _split_version(text: str) -> tuple[str, str | None, str | None]:
    """`v?CORE[-PRE][+BUILD]` -> (CORE, PRE or None, BUILD or None), `v` dropped."""
    if text.startswith("v"):
        text = text[1:]
    rest, plus, build = text.partition("+")
    core, dash, pre = rest.partition("-")
    return core, (pre if dash else None), (build if plus else None)


def parse_version(text: str) -> Version:
    core, pre_text, build_text = _split_version(text)
    nums = [_number(p) for p in core.split(".")]
    if len(nums) != 3 or any(n is None for n in nums):
        raise Failure("invalid_version")
    pre: tuple[Ident, ...] | None = ()
    build: tuple[str, ...] | None = ()
    if pre_text is not None:
        pre = _pre_idents(pre_text)
    if build_text is not None:
        build = _build_idents(build_text)
    if pre is None or build is None:
        raise Failure("invalid_version")
    major, minor, patch = nums
    assert major is not None and minor is not None and patch is not None
    return Version(major, minor, patch, pre, build)


# --- bump -------------------------------------------------------------------------------


def bump(v: Version, part: str, preid: Ident | None) -> Version:
    major, minor, patch, pre = v.major, v.minor, v.patch, v.pre
    if part == "major":
        # A pre-release of X.0.0 is released as X.0.0; anything else moves to X+1.
        if not (pre and minor == 0 and patch == 0):
            major += 1
        return Version(major, 0, 0)
    if part == "minor":
        if not (pre and patch == 0):
            minor += 1
        return Version(major, minor, 0)
    if part == "patch":
        if not pre:
            patch += 1
        return Version(major, minor, patch)
    # part == "prerelease"
    if not pre:
        return Version(major, minor, patch + 1, (DEFAULT_PREID if preid is None else preid, 0))
    if preid is not None and pre[0] != preid:
        return Version(major, minor, patch, (preid, 0))
    ids = list(pre)
    for i in range(len(ids) - 1, -1, -1):
        ident = ids[i]
        if isinstance(ident, int):
            ids[i] = ident + 1
            break
    else:
        ids.append(0)
    return Version(major, minor, patch, tuple(ids))


# --- ranges -----------------------------------------------------------------------------
#
# A range is a list of alternatives (split on `||`); an alternative is a list of primitive
# comparators (op, version) that must all hold. Sugar is expanded exactly like node-semver:
# an upper bound that excludes a whole release line is written `<X.Y.Z-0`.

Comparator = tuple[str, Version]
ZERO = (0,)


@dataclass(frozen=True)
class Partial:
    major: int | None
    minor: int | None
    patch: int | None
    pre: tuple[Ident, ...]


def parse_partial(text: str) -> Partial:
    core, pre_text, build_text = _split_version(text)
    parts = core.split(".")
    if len(parts) > 3:
        raise Failure("invalid_range")
    nums: list[int | None] = []
    wild = False
    for part in parts:
        if part in _X:
            wild = True
            nums.append(None)
            continue
        n = _number(part)
        if n is None or wild:  # a number after a wildcard (1.x.3) is not allowed
            raise Failure("invalid_range")
        nums.append(n)
    if (pre_text is not None or build_text is not None) and (len(parts) < 3 or wild):
        raise Failure("invalid_range")
    pre: tuple[Ident, ...] | None = ()
    if pre_text is not None:
        pre = _pre_idents(pre_text)
    if build_text is not None and _build_idents(build_text) is None:
        raise Failure("invalid_range")
    if pre is None:
        raise Failure("invalid_range")
    nums += [None] * (3 - len(nums))
    return Partial(nums[0], nums[1], nums[2], pre)


def _caret(p: Partial) -> list[Comparator]:
    M, m, n = p.major, p.minor, p.patch
    if M is None:
        return []
    if m is None:
        return [(">=", Version(M, 0, 0)), ("<", Version(M + 1, 0, 0, ZERO))]
    if n is None:
        if M == 0:
            return [(">=", Version(0, m, 0)), ("<", Version(0, m + 1, 0, ZERO))]
        return [(">=", Version(M, m, 0)), ("<", Version(M + 1, 0, 0, ZERO))]
    if M == 0 and m == 0:
        upper = Version(0, 0, n + 1, ZERO)
    elif M == 0:
        upper = Version(0, m + 1, 0, ZERO)
    else:
        upper = Version(M + 1, 0, 0, ZERO)
    return [(">=", Version(M, m, n, p.pre)), ("<", upper)]


def _tilde(p: Partial) -> list[Comparator]:
    M, m, n = p.major, p.minor, p.patch
    if M is None:
        return []
    if m is None:
        return [(">=", Version(M, 0, 0)), ("<", Version(M + 1, 0, 0, ZERO))]
    if n is None:
        return [(">=", Version(M, m, 0)), ("<", Version(M, m + 1, 0, ZERO))]
    return [(">=", Version(M, m, n, p.pre)), ("<", Version(M, m + 1, 0, ZERO))]


def _primitive(op: str, p: Partial) -> list[Comparator]:
    M, m, n = p.major, p.minor, p.patch
    if M is None:
        # `<*` and `>*` match nothing; every other `*` matches anything.
        return [("<", Version(0, 0, 0, ZERO))] if op in ("<", ">") else []
    if n is not None:
        assert m is not None
        return [("=" if op == "" else op, Version(M, m, n, p.pre))]
    if op in ("", "="):
        if m is None:
            return [(">=", Version(M, 0, 0)), ("<", Version(M + 1, 0, 0, ZERO))]
        return [(">=", Version(M, m, 0)), ("<", Version(M, m + 1, 0, ZERO))]
    if op == ">":
        return [(">=", Version(M + 1, 0, 0) if m is None else Version(M, m + 1, 0))]
    if op == "<=":
        return [("<", Version(M + 1, 0, 0, ZERO) if m is None else Version(M, m + 1, 0, ZERO))]
    if op == "<":
        return [("<", Version(M, m or 0, 0, ZERO))]
    return [(">=", Version(M, m or 0, 0))]  # op == ">="


def parse_comparator(token: str) -> list[Comparator]:
    op = next((o for o in _RANGE_OPS if token.startswith(o)), "")
    partial = parse_partial(token[len(op) :])
    if op == "^":
        return _caret(partial)
    if op in ("~", "~>"):
        return _tilde(partial)
    return _primitive(op, partial)


def _hyphen(low: Partial, high: Partial) -> list[Comparator]:
    out: list[Comparator] = []
    if low.major is not None:
        out.append((">=", Version(low.major, low.minor or 0, low.patch or 0, low.pre)))
    if high.major is None:
        return out
    if high.minor is None:
        out.append(("<", Version(high.major + 1, 0, 0, ZERO)))
    elif high.patch is None:
        out.append(("<", Version(high.major, high.minor + 1, 0, ZERO)))
    else:
        out.append(("<=", Version(high.major, high.minor, high.patch, high.pre)))
    return out


def parse_alternative(text: str) -> list[Comparator]:
    tokens = text.split()
    if len(tokens) == 3 and tokens[1] == "-":
        if any(tokens[i][:1] in _OP_CHARS for i in (0, 2)):
            raise Failure("invalid_range")
        return _hyphen(parse_partial(tokens[0]), parse_partial(tokens[2]))
    out: list[Comparator] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token in _RANGE_OPS:  # an operator separated from its version: `>= 1.2.3`
            if i >= len(tokens) or tokens[i][:1] in _OP_CHARS:
                raise Failure("invalid_range")
            token += tokens[i]
            i += 1
        out.extend(parse_comparator(token))
    return out


def parse_range(text: str) -> list[list[Comparator]]:
    return [parse_alternative(alt) for alt in text.split("||")]


def _holds(op: str, v: Version, bound: Version) -> bool:
    c = compare(v, bound)
    return {"=": c == 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def _alternative_matches(comparators: list[Comparator], v: Version) -> bool:
    if not all(_holds(op, v, bound) for op, bound in comparators):
        return False
    if not v.pre:
        return True
    # A pre-release only matches when the alternative names a pre-release of its triple.
    return any(bound.pre and bound.triple == v.triple for _, bound in comparators)


def satisfies(v: Version, rng: list[list[Comparator]]) -> bool:
    return any(_alternative_matches(alt, v) for alt in rng)


# --- the JSON request -------------------------------------------------------------------

# Per op: (field, JSON type, required), checked in this order.
FIELDS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "parse": (("version", "string", True),),
    "compare": (("a", "string", True), ("b", "string", True)),
    "bump": (("version", "string", True), ("part", "string", True), ("preid", "string", False)),
    "satisfies": (("version", "string", True), ("range", "string", True)),
    "sort": (("versions", "list", True),),
    "max_satisfying": (("versions", "list", True), ("range", "string", True)),
}


def _type_ok(value: object, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def load_request(raw: bytes) -> dict:
    try:
        request = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Failure("bad_json") from None
    if not isinstance(request, dict):
        raise Failure("bad_json")
    return request


def check_fields(request: dict) -> str:
    if "op" not in request:
        raise Failure("missing_field")
    op = request["op"]
    if not isinstance(op, str):
        raise Failure("bad_field")
    if op not in FIELDS:
        raise Failure("unknown_op")
    for name, kind, required in FIELDS[op]:
        if name not in request:
            if required:
                raise Failure("missing_field")
            continue
        if not _type_ok(request[name], kind):
            raise Failure("bad_field")
    return op


def _preid(request: dict) -> Ident | None:
    if "preid" not in request:
        return None
    ident = parse_pre_ident(request["preid"])
    if ident is None:
        raise Failure("bad_field")
    return ident


def execute(request: dict) -> str:
    op = check_fields(request)
    if op == "parse":
        v = parse_version(request["version"])
        return (
            f"major={v.major}\nminor={v.minor}\npatch={v.patch}\n"
            f"prerelease={'.'.join(str(i) for i in v.pre)}\nbuild={'.'.join(v.build)}\n"
        )
    if op == "compare":
        a = parse_version(request["a"])
        b = parse_version(request["b"])
        return f"{compare(a, b)}\n"
    if op == "bump":
        v = parse_version(request["version"])
        part = request["part"]
        if part not in PARTS:
            raise Failure("invalid_part")
        return f"{bump(v, part, _preid(request))}\n"
    if op == "satisfies":
        v = parse_version(request["version"])
        rng = parse_range(request["range"])
        return "true\n" if satisfies(v, rng) else "false\n"
    versions = [parse_version(text) for text in request["versions"]]
    if op == "sort":
        return "".join(f"{v}\n" for v in sorted(versions, key=Version.key))
    rng = parse_range(request["range"])  # op == "max_satisfying"
    best: Version | None = None
    for v in versions:
        if satisfies(v, rng) and (best is None or compare(v, best) > 0):
            best = v
    return f"{best}\n" if best is not None else "none\n"


def main() -> int:
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # numeric parts have no size limit
    try:
        output = execute(load_request(sys.stdin.buffer.read()))
    except Failure as failure:
        sys.stdout.write(f"error={failure.category}\n")
        return EXIT_ERROR
    sys.stdout.write(output)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
