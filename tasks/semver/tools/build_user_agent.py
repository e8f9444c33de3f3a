#!/usr/bin/env python3
"""Write tasks/semver/user_agent/<level>.json from prd/<level>.md and the records below.

Every record is defined once here, so a constraint keeps its id, trigger phrases and answer
at every level; each level lists the records its PRD still hides. Run after editing a PRD or
a record:  python3 tasks/semver/tools/build_user_agent.py
"""

from __future__ import annotations

import json
from pathlib import Path

TASK = Path(__file__).resolve().parent.parent
SIGNATURE = "python3 /workspace/semver.py  (reads one JSON object on stdin)"
FALLBACK = "That isn't specified for this tool, so use your best judgement."

RECORDS: dict[str, tuple[list[str], str]] = {
    "ARCH001": (
        [
            "can I use third-party libraries",
            "are external packages or dependencies allowed",
            "can I pip install the semver package",
            "is the python standard library enough",
            "should everything be in one single file",
            "which python version should I target",
        ],
        "A single file /workspace/semver.py for Python 3.11, standard library only; no "
        "third-party packages are installed.",
    ),
    "C001": (
        [
            "how should errors be reported",
            "what happens on invalid input",
            "what exit code or exit status on error",
            "what does the tool print when something goes wrong",
            "should error messages go to stderr or stdout",
            "how should the tool fail on bad input",
        ],
        "On any error print exactly one line `error=<category>` on stdout, nothing on stderr, "
        "and exit with status 2. Successful runs exit 0.",
    ),
    "C002": (
        [
            "what error categories are there",
            "which error names or codes should be used",
            "what category for an invalid version or an invalid range",
            "which error wins when several things are wrong",
            "what error for a missing field or a field of the wrong type",
            "what error for an unknown op or malformed json",
        ],
        "Categories, checked in this order (first failure wins): `bad_json` when stdin is not "
        "a JSON object; `missing_field` when `op` or a required field is absent; `bad_field` "
        "when `op` or a field has the wrong JSON type (null included, or a non-string in "
        "`versions`); `unknown_op` for an unknown (case-sensitive) op name. Fields are checked "
        "for presence and type in the op's field order first, then their values in the same "
        "order: `invalid_version` (any bad version, also inside `versions`), `invalid_range`, "
        "`invalid_part`, and `bad_field` for a `preid` that is not one valid pre-release "
        "identifier.",
    ),
    "C003": (
        [
            "what should parse print",
            "what is the output format of parse",
            "how should the parts of a parsed version be displayed",
            "what does parse show when there is no prerelease or build",
            "format of the parse result",
        ],
        "`parse` prints five lines in this order: `major=<n>`, `minor=<n>`, `patch=<n>`, "
        "`prerelease=<identifiers joined by dots>`, `build=<identifiers joined by dots>`; an "
        "absent part leaves the value empty (`prerelease=`).",
    ),
    "C004": (
        [
            "what should compare print",
            "what is the output format of compare",
            "how to show which of the two versions is newer",
            "does build metadata matter when comparing",
            "what does compare return for equal versions",
        ],
        "`compare` prints `-1` if a has lower precedence than b, `0` if equal, `1` if higher. "
        "Build metadata is ignored (`1.0.0+a` vs `1.0.0+b` prints `0`).",
    ),
    "C005": (
        [
            "are versions with a leading v accepted",
            "is v1.2.3 a valid version",
            "do we allow a v prefix like git tags",
            "how strict is version parsing",
            "can versions have surrounding whitespace or a prefix",
            "is V1.2.3 or =1.2.3 accepted",
        ],
        "A version may start with one lowercase `v` (`v1.2.3`); it is ignored and never printed "
        "back (outputs show `1.2.3`). Nothing else is tolerated: `V1.2.3`, `=1.2.3`, `vv1.2.3` "
        "and surrounding whitespace are invalid versions. The same `v` is allowed on versions "
        "inside ranges.",
    ),
    "C006": (
        [
            "what happens when bumping a pre-release version",
            "how does a patch bump work on 1.2.3-rc.1",
            "bumping major minor or patch of a prerelease version",
            "does bumping a release candidate just release it",
            "what does a minor bump do to 1.3.0-beta",
        ],
        "Bumping a pre-release version releases it when the lower parts are already zero: "
        "`patch` on 1.2.3-rc.1 gives 1.2.3; `minor` on 1.3.0-beta gives 1.3.0 (but on "
        "1.3.1-beta gives 1.4.0); `major` on 2.0.0-rc.1 gives 2.0.0 (but on 2.1.0-rc.1 gives "
        "3.0.0).",
    ),
    "C007": (
        [
            "how does the prerelease part work",
            "what does bump with part prerelease produce",
            "what is the default preid",
            "how is the prerelease number incremented",
            "what happens when preid differs from the current prerelease tag",
        ],
        "`part` = `prerelease`: on a release version, bump the patch and add `-<preid>.0`, with "
        "preid defaulting to `rc` (1.2.3 gives 1.2.4-rc.0). On a pre-release: with no preid or "
        "a preid equal to the first identifier, increment the rightmost numeric identifier "
        "(1.2.4-rc.0 gives 1.2.4-rc.1; 1.0.0-rc.1.beta gives 1.0.0-rc.2.beta), appending `.0` "
        "when none is numeric (1.2.4-beta gives 1.2.4-beta.0); with a different preid the "
        "pre-release becomes `<preid>.0` (1.2.4-alpha.3 with preid beta gives 1.2.4-beta.0).",
    ),
    "C008": (
        [
            "do pre-release versions satisfy ranges",
            "should 2.0.0-rc.1 match >=1.0.0",
            "how are prereleases handled in range matching",
            "does * match pre-release versions",
            "are release candidates excluded from ranges",
            "does max_satisfying consider prerelease versions",
        ],
        "A pre-release version satisfies an alternative (a `||` part) only if it meets every "
        "comparator and some comparator in that alternative has a pre-release on the same "
        "major.minor.patch: 1.2.3-beta.4 satisfies ^1.2.3-beta.2, but 1.2.4-beta.1 does not, "
        "2.0.0-rc.1 does not satisfy >=1.0.0, and `*` matches no pre-release. max_satisfying "
        "uses the same rule.",
    ),
    "C009": (
        [
            "what should sort print",
            "what is the output format of sort and max_satisfying",
            "what if no version satisfies the range",
            "how are ties ordered when sorting",
            "what does max_satisfying print when nothing matches",
            "should sort be ascending or descending",
        ],
        "`sort` prints the versions in ascending precedence, one per line; equal-precedence "
        "versions (e.g. differing only in build metadata) keep their input order, duplicates are "
        "kept, and an empty list prints nothing. `max_satisfying` prints the highest matching "
        "version (the first among equals), or `none` when nothing matches. Printed versions keep "
        "their build metadata.",
    ),
}

POINTERS: dict[str, str] = {
    "like npm does": (
        "Ranges use node-semver's syntax and meaning: `||` separates alternatives; inside one, "
        "whitespace-separated comparators (`<`, `<=`, `>`, `>=`, `=` or none) must all hold, and "
        "an operator may be followed by whitespace; x-ranges and partial versions (`*`, `1.x`, "
        "`1.2.*`, `1`, `1.2`: `1.x` is `>=1.0.0 <2.0.0-0`, `>1.2` is `>=1.3.0`, `<=1.2` is "
        "`<1.3.0-0`, `<*`/`>*` match nothing); tilde `~`/`~>` (`~1.2.3` is `>=1.2.3 <1.3.0-0`, "
        "`~1` is `>=1.0.0 <2.0.0-0`); caret keeps the left-most non-zero part (`^1.2.3` is "
        "`>=1.2.3 <2.0.0-0`, `^0.2.3` is `>=0.2.3 <0.3.0-0`, `^0.0.3` is `>=0.0.3 <0.0.4-0`); "
        "hyphen ranges (`1.2.3 - 2.3` is `>=1.2.3 <2.4.0-0`, `1.2 - 2.3.4` is "
        "`>=1.2.0 <=2.3.4`). An empty range or alternative matches anything; a wildcard may not "
        "be followed by a number, and a pre-release or build suffix needs all three numbers; "
        "anything else (a comma, a dangling operator) is an invalid range."
    ),
    "the way our old release script did": (
        "`major` gives (X+1).0.0, `minor` gives X.(Y+1).0, `patch` gives X.Y.(Z+1), and a bumped "
        "version never keeps build metadata. `preid` (optional, any part) must be one valid "
        "pre-release identifier such as `rc` or `beta`."
    ),
}

# What each level's PRD still hides (ids in file order).
HIDDEN: dict[str, list[str]] = {
    "L1": ["ARCH001", "C001", "C002", "C003", "C004", "C005", "C006", "C007", "C008", "C009"],
    "L2": ["C002", "C005", "C006", "C007", "C008"],
    "L3": ["C002", "C005", "C008"],
    "ground": [],
}
VAGUE: dict[str, list[str]] = {
    "L1": ["like npm does", "the way our old release script did"],
    "L2": ["the way our old release script did"],
    "L3": [],
    "ground": [],
}


def build(level: str) -> dict:
    prd = (TASK / "prd" / f"{level}.md").read_text(encoding="utf-8")
    for phrase in VAGUE[level]:
        assert phrase in " ".join(prd.split()), f"{level}.md lacks the vague reference {phrase!r}"
    records = [
        {
            "constraint_id": cid,
            "trigger_keywords": RECORDS[cid][0],
            "oracle_response": RECORDS[cid][1],
        }
        for cid in HIDDEN[level]
    ]
    pointers = [{"vague_reference": p, "actual_meaning": POINTERS[p]} for p in VAGUE[level]]
    return {
        "fuzzy_prd": prd,
        "oracle_data": {
            "task_id": "semver",
            "golden_api_signature": SIGNATURE,
            "hidden_constraints": records,
            "context_pointers": pointers,
            "fallback_response": FALLBACK,
        },
    }


def main() -> None:
    out_dir = TASK / "user_agent"
    out_dir.mkdir(exist_ok=True)
    for level in HIDDEN:
        data = build(level)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        (out_dir / f"{level}.json").write_text(text, encoding="utf-8")
        print(
            f"user_agent/{level}.json: {len(HIDDEN[level])} records, {len(VAGUE[level])} pointers"
        )


if __name__ == "__main__":
    main()
