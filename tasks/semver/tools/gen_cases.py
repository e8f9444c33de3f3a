#!/usr/bin/env python3
"""Generate tasks/semver/cases/{public,hidden,enhanced}/*.json from the oracle.

Hand-written cases (each tagged with the constraint it exercises) plus a few seeded random
ones. Every input is run through the oracle twice, as the dispatcher would (json.dumps on
stdin); a case is stored only when both runs agree, and its expected_output is the oracle's
stdout byte for byte.

    python3 tasks/semver/tools/gen_cases.py          # from the repository root
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TASK = Path(__file__).resolve().parent.parent
ORACLE = TASK / "oracle" / "semver.py"
SEED = 20250601

# Tags: Cnnn = hidden constraint of L1, CP1/CP2 = context pointers, N = native coverage.

PUBLIC: dict[str, list[dict]] = {
    "parse": [
        {"op": "parse", "version": "1.2.3-rc.1+build.5"},
        {"op": "parse", "version": "1.2"},
    ],
    "compare": [{"op": "compare", "a": "1.2.3", "b": "1.10.0"}],
    "bump": [
        {"op": "bump", "version": "1.2.3", "part": "minor"},
        {"op": "bump", "version": "1.2.3", "part": "major"},
    ],
    "satisfies": [
        {"op": "satisfies", "version": "1.4.2", "range": "^1.2.0"},
        {"op": "satisfies", "version": "1.3.0", "range": "~1.2.0"},
    ],
    "sort": [{"op": "sort", "versions": ["1.10.0", "1.2.0", "1.2.0-beta"]}],
    "max_satisfying": [
        {"op": "max_satisfying", "versions": ["1.2.3", "1.3.0", "2.0.0"], "range": "^1.2.0"}
    ],
}


def _random_version(rng: random.Random, pre_chance: float = 0.35) -> str:
    core = ".".join(str(rng.choice([0, 0, 1, 1, 2, 3, 4, 10, 12])) for _ in range(3))
    if rng.random() < pre_chance:
        ids = [
            rng.choice(["alpha", "beta", "rc", "0", "1", "2", "11"])
            for _ in range(rng.randint(1, 2))
        ]
        core += "-" + ".".join(ids)
    if rng.random() < 0.1:
        core += "+build." + str(rng.randint(1, 99))
    return core


def hidden_cases(rng: random.Random) -> dict[str, list[dict]]:
    return {
        "parse": [
            {"op": "parse", "version": "10.20.30"},  # C003 empty prerelease/build
            {"op": "parse", "version": "1.0.0-alpha.beta.1+exp.sha.5114f85"},  # C003
            {"op": "parse", "version": "v2.0.0-rc.2"},  # C005
            {"op": "parse", "version": "V1.2.3"},  # C005, C001, C002
            {"op": "parse", "version": "1.02.3"},  # C001, C002, N
            {"op": "parse", "version": "1.0.0-01"},  # N: numeric identifier with leading zero
            {"op": "parse", "version": _random_version(rng, 1.0)},  # N (seeded)
        ],
        "compare": [
            {"op": "compare", "a": "1.0.0-alpha", "b": "1.0.0-alpha.1"},  # N
            {"op": "compare", "a": "1.0.0-beta.11", "b": "1.0.0-beta.2"},  # N numeric ids
            {"op": "compare", "a": "1.0.0-alpha.beta", "b": "1.0.0-alpha.1"},  # N alnum > num
            {"op": "compare", "a": "1.0.0+build.1", "b": "1.0.0+build.2"},  # C004
            {"op": "compare", "a": "v1.2.3", "b": "1.2.3"},  # C005
            {"op": "compare", "a": "1.0.0"},  # C002 missing_field
            {"op": "compare", "a": _random_version(rng), "b": _random_version(rng)},  # N
        ],
        "bump": [
            {"op": "bump", "version": "1.2.3+build.7", "part": "patch"},  # CP2 build dropped
            {"op": "bump", "version": "1.2.3-rc.1", "part": "patch"},  # C006
            {"op": "bump", "version": "2.0.0-rc.1", "part": "major"},  # C006
            {"op": "bump", "version": "2.1.0-rc.1", "part": "major"},  # C006
            {"op": "bump", "version": "1.3.0-beta", "part": "minor"},  # C006
            {"op": "bump", "version": "1.2.3", "part": "prerelease"},  # C007 default preid
            {"op": "bump", "version": "1.2.4-rc.0", "part": "prerelease"},  # C007
            {
                "op": "bump",
                "version": "1.2.4-alpha.3",
                "part": "prerelease",
                "preid": "beta",
            },  # C007
            {"op": "bump", "version": "1.2.4-beta", "part": "prerelease"},  # C007
            {"op": "bump", "version": "1.2.3", "part": "build"},  # C002 invalid_part
            {"op": "bump", "version": "v1.2.3", "part": "patch"},  # C005
        ],
        "satisfies": [
            {"op": "satisfies", "version": "0.3.0", "range": "^0.2.3"},  # CP1
            {"op": "satisfies", "version": "0.0.4", "range": "^0.0.3"},  # CP1
            {"op": "satisfies", "version": "2.5.0", "range": "1.x || >=2.5.0"},  # CP1
            {"op": "satisfies", "version": "2.4.0", "range": "1.2.3 - 2.3"},  # CP1
            {"op": "satisfies", "version": "1.2.3-beta.4", "range": "^1.2.3-beta.2"},  # C008
            {"op": "satisfies", "version": "1.2.4-beta.1", "range": "^1.2.3-beta.2"},  # C008
            {"op": "satisfies", "version": "2.0.0-rc.1", "range": ">=1.0.0"},  # C008
            {"op": "satisfies", "version": "1.0.0-rc.1", "range": "*"},  # C008
            {"op": "satisfies", "version": "v1.2.3", "range": "^1"},  # C005
            {"op": "satisfies", "version": "1.2.3", "range": ">=1.2.3,<2"},  # C002 invalid_range
        ],
        "sort": [
            {  # N: the SemVer 2.0.0 precedence chain, shuffled
                "op": "sort",
                "versions": rng.sample(
                    [
                        "1.0.0-alpha",
                        "1.0.0-alpha.1",
                        "1.0.0-alpha.beta",
                        "1.0.0-beta",
                        "1.0.0-beta.2",
                        "1.0.0-beta.11",
                        "1.0.0-rc.1",
                        "1.0.0",
                    ],
                    8,
                ),
            },
            {"op": "sort", "versions": ["1.0.0+b", "1.0.0+a", "0.1.0", "1.0.0+b"]},  # C009 ties
            {"op": "sort", "versions": ["v2.0.0", "1.10.0", "1.9.0"]},  # C005
            {"op": "sort", "versions": []},  # C009 empty
            {"op": "sort", "versions": ["1.0.0", "nope"]},  # C002 invalid_version
            {"op": "sort", "versions": [_random_version(rng) for _ in range(8)]},  # N
        ],
        "max_satisfying": [
            {
                "op": "max_satisfying",
                "versions": ["1.2.3", "1.3.0", "2.0.0"],
                "range": ">=3.0.0",
            },  # C009
            {
                "op": "max_satisfying",
                "versions": ["1.2.3", "1.3.0-rc.1"],
                "range": "^1.2.0",
            },  # C008
            {
                "op": "max_satisfying",
                "versions": ["1.0.0+b", "1.0.0+a"],
                "range": "1.x",
            },  # C009 first
            {
                "op": "max_satisfying",
                "versions": ["0.1.0", "0.2.0", "0.2.9", "0.3.0"],
                "range": "~0.2",
            },  # CP1
            {  # N (seeded)
                "op": "max_satisfying",
                "versions": [_random_version(rng, 0.2) for _ in range(6)],
                "range": rng.choice(["^1.0.0", "~2.3", ">=0.2.0 <3", "1.x || 3.x"]),
            },
        ],
    }


def enhanced_cases(rng: random.Random) -> dict[str, list[dict]]:
    m = "malformed"
    return {
        "malformed": [
            {"input": '{"op": "parse", "version": '},  # not a JSON object (truncated)
            {"input": {"version": "1.2.3"}},  # no op
            {"input": {"op": "PARSE", "version": "1.2.3"}, "pattern": m},  # op is case-sensitive
            {"input": {"op": 3, "version": "1.2.3"}, "pattern": m},  # op of the wrong type
            {"input": {"op": "sort", "versions": "1.0.0 2.0.0"}, "pattern": m},  # not a list
            {
                "input": {"op": "satisfies", "version": "x", "range": 5},
                "pattern": m,
            },  # type before value
            {
                "input": {"op": "bump", "version": "1.2.3", "part": "minor", "preid": "01"},
                "pattern": m,
            },
        ],
        "boundaries": [
            {
                "input": {
                    "op": "parse",
                    "version": "99999999999999999999.0.0-rc.18446744073709551616",
                }
            },
            {"input": {"op": "bump", "version": "9007199254740991.0.0", "part": "major"}},
            {
                "input": {
                    "op": "compare",
                    "a": "1.0.0-rc.18446744073709551617",
                    "b": "1.0.0-rc.18446744073709551616",
                }
            },
            {"input": {"op": "parse", "version": ""}},
            {"input": {"op": "parse", "version": "\uff11.2.3"}},  # fullwidth digit one
            {"input": {"op": "satisfies", "version": "1.2.3", "range": ""}},  # empty range
            {"input": {"op": "satisfies", "version": "1.2.3", "range": "../../etc/passwd"}},
            {"input": {"op": "sort", "versions": [_random_version(rng) for _ in range(40)]}},
        ],
    }


def run_oracle(payload: object) -> tuple[str, int]:
    proc = subprocess.run(
        [sys.executable, str(ORACLE)],
        input=json.dumps(payload, ensure_ascii=False).encode(),
        capture_output=True,
        timeout=30,
        env={"LANG": "C.UTF-8", "TZ": "UTC", "PATH": "/usr/bin:/bin"},
    )
    assert proc.stderr == b"", proc.stderr
    return proc.stdout.decode(), proc.returncode


def _case(entry: dict) -> dict:
    first, code = run_oracle(entry["input"])
    second, _ = run_oracle(entry["input"])
    assert first == second, f"nondeterministic: {entry}"
    assert code in (0, 2), (entry, code)
    case = {"input": entry["input"], "expected_output": first}
    if "pattern" in entry:
        case["pattern"] = entry["pattern"]
    return case


def write_split(split: str, files: dict[str, list[dict]], descriptions: dict[str, str]) -> int:
    out_dir = TASK / "cases" / split
    out_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    with ThreadPoolExecutor(max_workers=8) as pool:
        for stem, entries in files.items():
            cases = list(pool.map(_case, entries))
            doc = {"description": descriptions[stem], "cases": cases}
            text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
            (out_dir / f"{stem}.json").write_text(text, encoding="utf-8")
            total += len(cases)
    return total


def main() -> None:
    rng = random.Random(SEED)
    wrap = {stem: [{"input": c} for c in cases] for stem, cases in PUBLIC.items()}
    desc = {
        "parse": "parse: split a version into its parts",
        "compare": "compare: -1, 0 or 1 by SemVer precedence",
        "bump": "bump: the next major, minor, patch or pre-release version",
        "satisfies": "satisfies: node-semver range matching",
        "sort": "sort: ascending precedence, one version per line",
        "max_satisfying": "max_satisfying: the highest version matching a range",
    }
    n_public = write_split("public", wrap, desc)
    hidden = {stem: [{"input": c} for c in cases] for stem, cases in hidden_cases(rng).items()}
    n_hidden = write_split("hidden", hidden, desc)
    enhanced_desc = {
        "malformed": "robustness: malformed requests, wrong types and the order of error checks",
        "boundaries": "boundaries: huge numbers, empty and non-ASCII strings, hostile ranges",
    }
    n_enhanced = write_split("enhanced", enhanced_cases(rng), enhanced_desc)
    print(f"public {n_public}, hidden {n_hidden}, enhanced {n_enhanced}")


if __name__ == "__main__":
    main()
