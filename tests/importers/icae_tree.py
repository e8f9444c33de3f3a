"""Small ICAE-EVAL trees, built by the tests themselves in ICAE-EVAL's layout and formats
(`json.dumps(indent=2, ensure_ascii=False)`, start.md = header + fuzzy_prd): no file of
ICAE-EVAL's is used.

`build_tree` makes three aliases of one little text tool (JSON on stdin: `count`, `upper`,
`len`), each with three levels and public, hidden and enhanced cases:

- realcode@101: a golden repository (the original source: the tool and its own tests): clean;
  its case files laid out as ICAE-EVAL's PRDs quote them (`quoted_json`), not as json.dumps.
- realcode@102: no golden repository; a stored expected output that is a number (the tool's
  `len` prints it without a newline, as ICAE compares json.dumps(3) == "3"); its normal
  level has a TC_ record for a public case file it does not have (a missing fixture).
- realcode@103: its easy level is missing, and its medium level's records are
  realcode@101's, copied word for word.

As in ICAE-EVAL's data, each alias's rcb_tests repository (rcb_tests_repos/<key>/rcb_tests/)
holds its three case folders and the protocol's harness (`RCB_HARNESS`: test.sh and the
helper it calls); the golden repository (realcode_repos/<key>/, `GOLDEN`) is the original
source, without rcb_tests/. `TOOL` is the tool itself; what a scripted delivery that is the
oracle itself writes is both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

HEADER = "## Product Requirement Document\n\n"
ALIASES = ("realcode@101", "realcode@102", "realcode@103")
KEYS = {"realcode@101": "acme__wordtool", "realcode@102": "acme__lentool", "realcode@103": "acme__copycat"}
LEVEL_DIRS = {"normal": "prd_json", "medium": "prd_json_medium", "easy": "prd_json_easy"}
PRD_DIRS = {"normal": "fuzzy_prds", "medium": "fuzzy_prds_medium", "easy": "fuzzy_prds_easy"}

TOOL = '''import json
import sys


def main() -> int:
    req = json.loads(sys.stdin.read())
    action, text = req.get("action"), req.get("text", "")
    if action == "count":
        print(f"words={len(text.split())}")
    elif action == "upper":
        print(text.upper())
    elif action == "len":
        sys.stdout.write(str(len(text)))
    else:
        print("error=unknown_action")
    return 0


sys.exit(main())
'''

RUNNER = '''import json
import pathlib
import subprocess
import sys

cases_dir, out_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out_dir.mkdir(parents=True, exist_ok=True)
for path in sorted(cases_dir.glob("*.json")):
    for i, case in enumerate(json.loads(path.read_text())["cases"]):
        ran = subprocess.run([sys.executable, "tool.py"], input=json.dumps(case["input"]).encode(),
                             capture_output=True)
        (out_dir / f"{path.stem}@{i:03d}.txt").write_bytes(ran.stdout)
        print(f"ran {path.stem}@{i:03d}")
'''

HARNESS = '''#!/bin/bash
# ICAE-EVAL's protocol: bash rcb_tests/test.sh --cases-dir DIR
set -u
dir=test_cases
while [ $# -gt 0 ]; do
    case "$1" in
        --cases-dir) dir=$2; shift 2 ;;
        *) shift ;;
    esac
done
cd "$(dirname "$0")/.."
python3 rcb_tests/run_cases.py "rcb_tests/$dir" "rcb_tests/stdout/$dir"
'''

ORIGINAL_TESTS = '''import json
import subprocess
import sys


def run(req):
    return subprocess.run([sys.executable, "tool.py"], input=json.dumps(req), text=True,
                          capture_output=True).stdout


def test_count():
    assert run({"action": "count", "text": "one two three"}) == "words=3\\n"
'''

# realcode_repos/<key>/: the original source, as ICAE-EVAL ships it (no rcb_tests/)
GOLDEN = {"tool.py": TOOL, "tests/test_tool.py": ORIGINAL_TESTS,
          "README.md": "# wordtool\n\nThe golden repository.\n"}  # fmt: skip
# rcb_tests_repos/<key>/rcb_tests/: beside the case folders, the protocol's harness
RCB_HARNESS = {"rcb_tests/test.sh": HARNESS, "rcb_tests/run_cases.py": RUNNER}


def icae_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def quoted_json(data: dict[str, Any]) -> str:
    """A case file laid out as ICAE-EVAL's easy PRDs quote its rcb_tests case files: four
    spaces, each case's input on one line, which no `json.dumps` writes."""
    one = lambda value: json.dumps(value, ensure_ascii=False)  # noqa: E731
    cases = ",\n".join(
        "        {\n"
        f'            "input": {one(c["input"])},\n'
        f'            "expected_output": {one(c["expected_output"])}\n'
        "        }"
        for c in data["cases"]
    )
    return (f'{{\n    "description": {one(data["description"])},\n    "cases": [\n{cases}\n'
            "    ]\n}\n")  # fmt: skip


def case_file(description: str, *cases: tuple[dict[str, Any], Any]) -> dict[str, Any]:
    return {"description": description,
            "cases": [{"input": i, "expected_output": e} for i, e in cases]}  # fmt: skip


PUBLIC = {
    "feature1_count.json": case_file("count words", ({"action": "count", "text": "a b"}, "words=2\n")),
    "feature2_upper.json": case_file("upper-case", ({"action": "upper", "text": "ab"}, "AB\n")),
}
HIDDEN = {
    "feature1_count.json": case_file(
        "count words", ({"action": "count", "text": "one two three"}, "words=3\n"),
        ({"action": "count", "text": ""}, "words=0\n"),
    ),
    "feature2_upper.json": case_file("upper-case", ({"action": "upper", "text": "é ß"}, "É SS\n")),
}
ENHANCED = {
    "edge_unknown.json": case_file("unknown action", ({"action": "nope"}, "error=unknown_action\n")),
}
LEN_CASES = {  # realcode@102's hidden len cases: a number stored as the expected output
    "feature3_len.json": case_file("length", ({"action": "len", "text": "abc"}, 3),
                                   ({"action": "len", "text": "hello"}, "5")),
}


def records(alias: str, which: list[int]) -> list[dict[str, Any]]:
    """Task records C00n of an alias (their text names the alias: no two tasks share one),
    then the generic ones every ICAE task has."""
    out = [
        {"constraint_id": f"C00{n}",
         "trigger_keywords": [f"question {n} about {alias}", f"how does rule {n} work"],
         "oracle_response": f"Rule {n} of {alias}: the exact behaviour number {n}, stated "
                           "precisely."}
        for n in which
    ]  # fmt: skip
    return out + [dict(r) for r in GENERIC_RECORDS]


# the generic records every ICAE-EVAL task has, word for word (their families: ARCH…,
# HARNESS…; TC_<stem> per public case file), in their order
GENERIC_RECORDS = (
    {"constraint_id": "ARCH001", "trigger_keywords": ["how should I organize the code",
                                                      "single file or multiple files"],
     "oracle_response": "Scale-driven code organization: keep the core decoupled from "
                        "stdin/stdout and JSON parsing."},
    {"constraint_id": "HARNESS001", "trigger_keywords": ["how does the dispatcher work",
                                                         "stdin stdout interface"],
     "oracle_response": "Implement an execution adapter (dispatcher) that reads a single JSON "
                        "object from stdin and prints the result to stdout."},
    {"constraint_id": "HARNESS002", "trigger_keywords": ["how to write test.sh",
                                                         "cases-dir parameter"],
     "oracle_response": "Deliver a bash test harness at rcb_tests/test.sh. It must accept "
                        "--cases-dir <subdir> (default: test_cases) and write raw stdout to "
                        "rcb_tests/stdout/<cases-dir>/{filename_stem}@{case_index_zero_padded_3}"
                        ".txt"},
    {"constraint_id": "HARNESS003", "trigger_keywords": ["do you have test cases"],
     "oracle_response": "Yes, public test cases are provided, one file per feature. Ask me for "
                        "a specific feature by name and I will give you the full test case "
                        "JSON."},
)  # fmt: skip


def level_json(alias: str, difficulty: str, public: dict[str, Any]) -> dict[str, Any]:
    shown = {"normal": [1, 2, 3], "medium": [2, 3], "easy": [3]}[difficulty]
    hidden = records(alias, shown)
    hidden += [
        {"constraint_id": f"TC_{name[:-5]}", "trigger_keywords": [f"test cases for {name[:-5]}"],
         "oracle_response": f"Here are the public test cases for {name[:-5]}:\n{icae_json(c)}"}
        for name, c in public.items()
    ]  # fmt: skip
    return {
        "fuzzy_prd": f"Hey team, we need a small text tool for {alias} ({difficulty}). "
        "It counts words and shouts — like the old one did.",
        "oracle_data": {
            "task_id": f"TASK-{alias.upper()}", "golden_api_signature": "",
            "hidden_constraints": hidden,
            "context_pointers": [{"vague_reference": "like the old one",
                                  "actual_meaning": "the 2019 word counter"}],
            "fallback_response": "That is not specified; use your best judgement.",
        },  # fmt: skip
        "public_test_cases": public,
    }


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def alias_record(alias: str, language: str, loc: int) -> dict[str, Any]:
    key = KEYS.get(alias, alias.replace("@", "__"))
    user, _, repo = key.partition("__")
    return {"url": f"https://example.invalid/{user}/{repo}", "overall_score": 70,
            "star_count": 100, "total_lines_of_code": loc, "completeness": 8,
            "effectiveness": 8, "reliability": 8, "efficiency": 6, "total_code_files": 3,
            "language": language, "key": key, "username": user, "repo_name": repo,
            "alias": alias}  # fmt: skip


def write_alias(
    root: Path, alias: str, *, golden: bool, hidden: dict[str, Any], difficulties=LEVEL_DIRS,
    case_json=icae_json,
) -> None:  # fmt: skip
    key = KEYS.get(alias, alias.replace("@", "__"))
    for difficulty in difficulties:
        data = level_json(alias, difficulty, PUBLIC)
        write(root, f"user_agent/{LEVEL_DIRS[difficulty]}/{alias}.json", icae_json(data))
        write(root, f"{PRD_DIRS[difficulty]}/{alias}/start.md", HEADER + data["fuzzy_prd"])
    rcb = f"rcb_tests_repos/{key}/rcb_tests"
    for folder, files in (("public_test_cases", PUBLIC), ("test_cases", hidden),
                          ("enhanced_test_cases", ENHANCED)):  # fmt: skip
        for name, content in files.items():
            write(root, f"{rcb}/{folder}/{name}", case_json(content))
    for rel, text in RCB_HARNESS.items():
        write(root, f"rcb_tests_repos/{key}/{rel}", text)
    (root / rcb / "test.sh").chmod(0o755)
    if golden:
        for rel, text in GOLDEN.items():
            write(root, f"realcode_repos/{key}/{rel}", text)


def build_tree(root: Path) -> Path:
    """The three-alias tree described above, at `root`."""
    write_alias(root, "realcode@101", golden=True, hidden=HIDDEN, case_json=quoted_json)
    write_alias(root, "realcode@102", golden=False, hidden={**HIDDEN, **LEN_CASES})
    # a TC_ record for a public file realcode@102 does not have: a missing fixture
    normal = root / "user_agent/prd_json/realcode@102.json"
    data = json.loads(normal.read_text())
    data["oracle_data"]["hidden_constraints"].append(
        {"constraint_id": "TC_feature9_gone", "trigger_keywords": ["test cases for feature9"],
         "oracle_response": "Here are the public test cases for feature9_gone: {}"}
    )  # fmt: skip
    normal.write_text(icae_json(data))
    write_alias(root, "realcode@103", golden=False, hidden=HIDDEN,
                difficulties=("normal", "medium"))  # fmt: skip
    medium = root / "user_agent/prd_json_medium/realcode@103.json"
    data = json.loads(medium.read_text())
    copied = json.loads((root / "user_agent/prd_json_medium/realcode@101.json").read_text())
    data["oracle_data"]["hidden_constraints"] = copied["oracle_data"]["hidden_constraints"]
    medium.write_text(icae_json(data))
    aliases = {
        "realcode@101": alias_record("realcode@101", "Python", 120),
        "realcode@102": alias_record("realcode@102", "Python", 80),
        "realcode@103": alias_record("realcode@103", "Go", 300),
    }
    write(root, "repo_alias.json", icae_json(aliases))
    return root


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file of a tree, by its path: what a byte-for-byte round trip compares."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}  # fmt: skip


def oracle_solution(task_folder: Path, *, golden: bool = True) -> None:
    """solutions/oracle.yaml: a scripted delivery that is the oracle itself (the golden
    repository's files and its rcb_tests harness, or for a task without one the tool that
    wrote its stored outputs)."""
    steps: list[dict[str, Any]] = [{"say": "Writing the reference implementation."}]
    steps += [{"write": {"path": rel, "content": text}}
              for rel, text in {**GOLDEN, **RCB_HARNESS}.items()]  # fmt: skip
    steps += [{"run": "bash rcb_tests/test.sh --cases-dir public_test_cases"},
              {"submit": "The reference implementation, behind ICAE's test.sh."}]  # fmt: skip
    description = "the oracle itself" if golden else "the tool that wrote the stored outputs"
    (task_folder / "solutions").mkdir(exist_ok=True)
    (task_folder / "solutions" / "oracle.yaml").write_text(
        yaml.safe_dump({"description": description, "steps": steps}, allow_unicode=True)
    )
