#!/usr/bin/env python3
"""Generate tasks/wordfreq/cases/{public,hidden,enhanced}/*.json from the oracle.

Seeded: texts come from `random.Random(SEED)`, so re-running gives the same data. Each case
runs twice on the host against oracle/wordfreq.js with Node.js (fixtures written to a fresh
temp dir, then `sh -c <command>` with a `wordfreq` wrapper on PATH and the case's `input` on
stdin); it is kept only if both runs agree on exit code, stdout, stderr and the resulting file
tree. The stored `expected_output` is the oracle's stdout.

    python3 tasks/wordfreq/tools/gen_cases.py           # write the case files
    python3 tasks/wordfreq/tools/gen_cases.py --check   # compare with the stored files
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 20251203
TASK = Path(__file__).resolve().parents[1]
ORACLE = TASK / "oracle" / "wordfreq.js"

TOP = "wordfreq top [-n N] [--stop FILE] [FILE...]"
COUNT = "wordfreq count [FILE...]"
GREP = "wordfreq grep WORD [FILE...]"
VOCAB = "wordfreq vocab [--min-count N] [--stop FILE] [FILE...]"
STDIN = "wordfreq <command> (standard input)"
ERRORS = "wordfreq <command> (errors)"

rng = random.Random(SEED)
WORDS = [
    "river", "stone", "light", "paper", "garden", "window", "orange", "silver", "winter",
    "market", "letter", "bridge", "candle", "forest", "harbor", "island", "meadow", "pocket",
    "rabbit", "shadow", "ticket", "valley", "wagon", "yellow",
]  # fmt: skip


def text(lines: int, per_line: tuple[int, int] = (3, 8), vocabulary: int = len(WORDS)) -> str:
    """Seeded lines of words (some capitalised, some with a comma or a full stop)."""
    out = []
    for _ in range(lines):
        words = []
        for _ in range(rng.randint(*per_line)):
            w = rng.choice(WORDS[:vocabulary])
            if rng.random() < 0.2:
                w = w.capitalize()
            if rng.random() < 0.15:
                w += rng.choice([",", ".", ";", "!"])
            words.append(w)
        out.append(" ".join(words) + "\n")
    return "".join(out)


def case(command: str, pattern: str, files: dict[str, str] | None = None,
         stdin: str | None = None) -> dict:  # fmt: skip
    c: dict = {"command": command, "pattern": pattern, "files": files or {}}
    if stdin is not None:
        c["input"] = stdin
    return c


POEM = (
    "The river runs past the stone bridge,\n"
    "and the river sings to the stone.\n"
    "Light on the water, light on the bridge:\n"
    "the river is never alone.\n"
)
NOTES = "pack the tent and the stove\ncheck the map and the weather\nleave the car at the gate\n"

# --- public: exactly the worked examples of prd/ground.md -------------------------------------

PUBLIC = {
    "top": ("Worked example for `wordfreq top`", [
        case("wordfreq top -n 3 poem.txt", TOP, {"poem.txt": POEM}),
        case("wordfreq top --stop stop.txt notes.txt", TOP,
             {"notes.txt": NOTES, "stop.txt": "the\nand\nat\n"}),
    ]),
    "count": ("Worked example for `wordfreq count`", [
        case("wordfreq count poem.txt", COUNT, {"poem.txt": POEM}),
    ]),
    "grep": ("Worked example for `wordfreq grep`", [
        case("wordfreq grep bridge poem.txt", GREP, {"poem.txt": POEM}),
    ]),
    "vocab": ("Worked example for `wordfreq vocab`", [
        case("wordfreq vocab --min-count 2 poem.txt", VOCAB, {"poem.txt": POEM}),
    ]),
}  # fmt: skip


# --- hidden: each feature the way its own tests would ------------------------------------------


def hidden() -> dict:
    many = text(12, vocabulary=16)
    tied = "pear plum fig\nfig plum pear\nkiwi apple\n"
    return {
        "top": ("top: ranking, ties, the default of ten, several files, stop words", [
            case("wordfreq top story.txt", TOP, {"story.txt": many}),
            case("wordfreq top -n 4 fruit.txt", TOP, {"fruit.txt": tied}),
            case("wordfreq top -n 50 fruit.txt", TOP, {"fruit.txt": tied}),
            case("wordfreq top -n 5 a.txt b.txt", TOP, {"a.txt": text(4), "b.txt": text(5)}),
            case("wordfreq top -n 3 shout.txt", TOP,
                 {"shout.txt": "STONE Stone stone\nRiver RIVER\nlight\n"}),
            case("wordfreq top -n 5 --stop stop.txt story.txt", TOP,
                 {"story.txt": many, "stop.txt": "# common words\nriver\n\nStone\n#light\n"}),
            case("wordfreq top -n 4 log.txt", TOP,
                 {"log.txt": "error 404 at 10 10 10\nerror 500 retry 3\nretry error\n"}),
            case("wordfreq top -n 3 quotes.txt", TOP,
                 {"quotes.txt": "don't stop, don't quit\nit's the rock'n'roll way\nrock n roll\n"}),
        ]),
        "count": ("count: lines, words and distinct words per input, and a total", [
            case("wordfreq count story.txt", COUNT, {"story.txt": text(7)}),
            case("wordfreq count tail.txt", COUNT, {"tail.txt": "one line\nno newline at the end"}),
            case("wordfreq count empty.txt", COUNT, {"empty.txt": ""}),
            case("wordfreq count a.txt b.txt", COUNT,
                 {"a.txt": "river stone\n", "b.txt": "stone light\nriver\n"}),
            case("wordfreq count x.txt y.txt z.txt", COUNT,
                 {"x.txt": text(3), "y.txt": text(2), "z.txt": text(4)}),
            case("wordfreq count mixed.txt", COUNT,
                 {"mixed.txt": "Call 555 0100 today; it's free\nwell-known 2nd place\n"}),
        ]),
        "grep": ("grep: whole words, any case, line numbers, several files, no match", [
            case("wordfreq grep stone poem.txt", GREP,
                 {"poem.txt": "stone\nstones and milestone\nthe Stone age\nSTONE.\n"}),
            case("wordfreq grep River poem.txt", GREP, {"poem.txt": POEM}),
            case("wordfreq grep light a.txt b.txt", GREP,
                 {"a.txt": "light\ndark\n", "b.txt": "no\nlight years\nlight\n"}),
            case("wordfreq grep dragon poem.txt", GREP, {"poem.txt": POEM}),
            case("wordfreq grep rose crlf.txt", GREP,
                 {"crlf.txt": "a rose\r\nis a\r\nrose\r\n"}),
            case("wordfreq grep \"don't\" q.txt", GREP,
                 {"q.txt": "don't go\ndon t go\nDON'T STOP\n"}),
        ]),
        "vocab": ("vocab: distinct words in order, a minimum count, stop words", [
            case("wordfreq vocab story.txt", VOCAB, {"story.txt": text(5)}),
            case("wordfreq vocab --min-count 3 story.txt", VOCAB, {"story.txt": text(10)}),
            case("wordfreq vocab --stop stop.txt notes.txt", VOCAB,
                 {"notes.txt": NOTES, "stop.txt": "# skip these\nthe\nand\n  at  \n"}),
            case("wordfreq vocab words.txt", VOCAB,
                 {"words.txt": "Zebra apple Éclair éclair zoo Apple banana\n"}),
            case("wordfreq vocab a.txt b.txt", VOCAB,
                 {"a.txt": "wagon 12 wheels\n", "b.txt": "wagon's wheel\n"}),
            case("wordfreq vocab poem.txt --min-count 3", VOCAB, {"poem.txt": POEM}),
            case("wordfreq vocab -- -stop", VOCAB, {"-stop": "a file named -stop\n"}),
        ]),
        "stdin": ("standard input: no FILE, or `-`", [
            case("wordfreq top -n 3", STDIN, stdin="b a b c b a\n"),
            case("wordfreq count", STDIN, stdin="two lines\nof text\n"),
            case("wordfreq count - notes.txt", STDIN, {"notes.txt": NOTES}, stdin="from stdin\n"),
            case("wordfreq grep cat", STDIN, stdin="a cat\na dog\nthe cat sat\n"),
        ]),
        "errors": ("errors: unreadable input, usage, bad option values", [
            case("wordfreq top missing.txt", ERRORS),
            case("wordfreq count notes.txt missing.txt", ERRORS, {"notes.txt": NOTES}),
            case("wordfreq sort notes.txt", ERRORS, {"notes.txt": NOTES}),
            case("wordfreq", ERRORS),
            case("wordfreq top -n 0 notes.txt", ERRORS, {"notes.txt": NOTES}),
            case("wordfreq top -n ten notes.txt", ERRORS, {"notes.txt": NOTES}),
            case("wordfreq grep", ERRORS),
            case("wordfreq grep 42 notes.txt", ERRORS, {"notes.txt": NOTES}),
            case("wordfreq vocab --max 3 notes.txt", ERRORS, {"notes.txt": NOTES}),
        ]),
    }  # fmt: skip


# --- enhanced: boundaries, hostile input, stress ------------------------------------------------


def enhanced() -> dict:
    big = text(400, per_line=(8, 14))
    return {
        "boundaries": ("boundaries: option order, `--`, empty and odd inputs, large input", [
            case("wordfreq top notes.txt -n 2", TOP, {"notes.txt": NOTES}),
            case("wordfreq count -- -n", COUNT, {"-n": "a file named like an option\n"}),
            case("wordfreq top -n 3 punct.txt", TOP, {"punct.txt": "... --- !!! ???\n\n  \n"}),
            case("wordfreq vocab --stop empty.txt notes.txt", VOCAB,
                 {"notes.txt": NOTES, "empty.txt": ""}),
            case("wordfreq top -n 999999 notes.txt", TOP, {"notes.txt": NOTES}),
            case("wordfreq top -n 10 big.txt", TOP, {"big.txt": big}),
            case("wordfreq count big.txt big.txt", COUNT, {"big.txt": big}),
            case("wordfreq grep the blank.txt", GREP, {"blank.txt": "\n\nthe\n\n"}),
            case("wordfreq top -n 007 notes.txt", TOP, {"notes.txt": NOTES}),
        ]),
        "hostile": ("hostile input: paths, a directory, NUL, scripts other than Latin, emoji", [
            case("wordfreq top ../../nonexistent/passwd", ERRORS),
            case("wordfreq count notes", ERRORS, {"notes/a.txt": "inside a folder\n"}),
            case("wordfreq count 'my notes.txt'", COUNT, {"my notes.txt": "spaces in the name\n"}),
            case("wordfreq vocab nul.txt", VOCAB, {"nul.txt": "left\u0000right\u0000left\n"}),
            case("wordfreq top -n 5 intl.txt", TOP,
                 {"intl.txt": "日本 語 日本\nΑθήνα αθήνα Київ київ\ncafé CAFÉ 🙂 🙂\n"}),
            case("wordfreq grep київ intl.txt", GREP, {"intl.txt": "Київ\nкиїв!\nКиєв\n"}),
            case("wordfreq count long.txt", COUNT, {"long.txt": "word " * 3000 + "\n"}),
        ]),
    }  # fmt: skip


# --- running against the oracle ---------------------------------------------------------------


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under root: dirs as 'dir', links as 'link:<target>', files by sha256."""
    tree: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                tree[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                tree[rel] = "dir"
            else:
                tree[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return tree


def run(c: dict, entry: list[str]) -> tuple[int, str, str, dict[str, str]]:
    """Run one case with `wordfreq` -> entry in a fresh temp dir; return rc, out, err, tree."""
    with tempfile.TemporaryDirectory(prefix="wordfreq-case-") as tmp:
        base = Path(tmp)
        bindir, data = base / "bin", base / "w" / "x" / "data"
        bindir.mkdir()
        data.mkdir(parents=True)
        wrapper = bindir / "wordfreq"
        wrapper.write_text("#!/bin/sh\nexec " + " ".join(entry) + ' "$@"\n')
        wrapper.chmod(0o755)
        for rel, content in c.get("files", {}).items():
            p = data / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode("utf-8"))
        env = {
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(base),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
        }
        stdin = c.get("input")
        proc = subprocess.run(
            ["sh", "-c", c["command"]], cwd=data, env=env, capture_output=True, timeout=20,
            input=stdin.encode("utf-8") if isinstance(stdin, str) else b"",
        )  # fmt: skip
        return (
            proc.returncode,
            proc.stdout.decode("utf-8"),
            proc.stderr.decode("utf-8"),
            snapshot(data),
        )


def oracle_entry() -> list[str]:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        raise SystemExit("Node.js is needed to run the oracle (apt-get install nodejs)")
    return [node, str(ORACLE)]


def build() -> dict[tuple[str, str], dict]:
    files: dict[tuple[str, str], dict] = {}
    for split, groups in (("public", PUBLIC), ("hidden", hidden()), ("enhanced", enhanced())):
        for stem, (description, cases) in groups.items():
            done = []
            for c in cases:
                first, second = run(c, oracle_entry()), run(c, oracle_entry())
                if first != second:
                    raise SystemExit(f"nondeterministic: {split}/{stem}: {c['command']}")
                done.append({**c, "expected_output": first[1]})
            files[(split, stem)] = {"description": description, "cases": done}
    return files


def dump(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    files = build()
    check = "--check" in argv
    stale = 0
    for (split, stem), doc in files.items():
        path = TASK / "cases" / split / f"{stem}.json"
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != dump(doc):
                print(f"differs: {path.relative_to(TASK)}")
                stale += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(doc), encoding="utf-8")
    if not check:
        for split in ("public", "hidden", "enhanced"):
            for path in (TASK / "cases" / split).glob("*.json"):
                if (split, path.stem) not in files:
                    path.unlink()
        counts = {
            s: sum(len(d["cases"]) for (sp, _), d in files.items() if sp == s)
            for s in ("public", "hidden", "enhanced")
        }
        print("wrote", counts)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
