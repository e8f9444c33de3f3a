#!/usr/bin/env python3
"""Generate tasks/tidy/cases/{public,hidden,enhanced}/*.json from the oracle.

Seeded: file contents come from `random.Random(SEED)`, so re-running gives the same data.
Each case runs twice on the host against oracle/tidy.py (fixtures written to a fresh temp
dir, `prep` run there, then `sh -c <command>` with a `tidy` wrapper on PATH); it is kept only
if both runs agree on exit code, stdout, stderr and the resulting file tree. The stored
`expected_output` is the oracle's stdout.

    python3 tasks/tidy/tools/gen_cases.py           # write the case files
    python3 tasks/tidy/tools/gen_cases.py --check   # compare with the stored files
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 20240611
TASK = Path(__file__).resolve().parents[1]
ORACLE = TASK / "oracle" / "tidy.py"

SORT = "tidy sort <dir> --by ext|date-prefix [--dry-run]"
DEDUPE = "tidy dedupe <dir> [--dry-run]"
RENAME = "tidy rename <dir> --lower|--snake [--dry-run]"
STATS = "tidy stats <dir>"
CLEAN = "tidy clean <dir> [--dry-run]"
ERRORS = "tidy <command> <dir> (errors)"

rng = random.Random(SEED)
WORDS = [
    "alpha", "invoice", "draft", "budget", "meeting", "photo", "scan", "report", "summary",
    "ledger", "quarter", "notes", "travel", "receipt", "contract", "minutes", "backup",
    "archive", "agenda", "review", "memo", "plan",
]  # fmt: skip


def text(lines: int = 1) -> str:
    """A few seeded words per line, newline-terminated."""
    return "".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) + f" {rng.randint(1, 9999)}\n"
        for _ in range(lines)
    )


def case(command: str, pattern: str, files: dict[str, str], prep: str | None = None) -> dict:
    c: dict = {"command": command, "pattern": pattern, "files": files}
    if prep:
        c["prep"] = prep
    return c


# --- public: exactly the worked examples of prd/ground.md -------------------------------------

PUBLIC = {
    "sort": (
        "Worked examples for `tidy sort`",
        [
            case(
                "tidy sort inbox --by ext",
                SORT,
                {
                    "inbox/report.pdf": "%PDF quarterly report\n",
                    "inbox/notes.txt": "call the bank\n",
                    "inbox/todo.txt": "buy milk\n",
                    "inbox/photo.jpg": "JPEG beach\n",
                },
            ),
            case(
                "tidy sort inbox --by date-prefix",
                SORT,
                {
                    "inbox/2024-03-05-invoice.pdf": "%PDF invoice 118\n",
                    "inbox/2024-03-18 minutes.txt": "board meeting\n",
                    "inbox/2023-11-30-scan.png": "PNG scan\n",
                },
            ),
        ],
    ),
    "dedupe": (
        "Worked examples for `tidy dedupe`",
        [
            case(
                "tidy dedupe photos",
                DEDUPE,
                {
                    "photos/a.jpg": "JPEG sunset\n",
                    "photos/b.jpg": "JPEG sunset\n",
                    "photos/c.jpg": "JPEG sunset\n",
                    "photos/d.jpg": "JPEG harbour\n",
                },
            ),
            case(
                "tidy dedupe photos --dry-run",
                DEDUPE,
                {
                    "photos/one.jpg": "JPEG forest\n",
                    "photos/two.jpg": "JPEG forest\n",
                    "photos/three.jpg": "JPEG forest\n",
                },
            ),
        ],
    ),
    "rename": (
        "Worked examples for `tidy rename`",
        [
            case(
                "tidy rename docs --lower",
                RENAME,
                {"docs/README.MD": "# readme\n", "docs/Draft.TXT": "first draft\n"},
            ),
            case(
                "tidy rename docs --snake",
                RENAME,
                {
                    "docs/Meeting Notes.TXT": "agenda\n",
                    "docs/budget-2024 final.xlsx": "numbers\n",
                },
            ),
        ],
    ),
    "stats": (
        "Worked example for `tidy stats`",
        [
            case(
                "tidy stats proj",
                STATS,
                {
                    "proj/README.md": "# proj\n",
                    "proj/src/main.py": "print('hello world')\n",
                    "proj/src/util.py": "X = 1\n",
                    "proj/docs/guide.md": "how to use it\n",
                },
            ),
        ],
    ),
    "clean": (
        "Worked example for `tidy clean`",
        [
            case(
                "tidy clean junk",
                CLEAN,
                {"junk/empty.txt": "", "junk/keep.txt": "data\n"},
                prep="mkdir -p junk/old/cache",
            ),
        ],
    ),
}


# --- hidden: native coverage; comments name the constraint ids each case exercises -----------


def hidden() -> dict:
    a, b, c, d = text(), text(), text(2), text()
    sort = [
        # C003 extension folders are the lower-cased last extension
        case(
            "tidy sort inbox --by ext",
            SORT,
            {
                "inbox/PHOTO.JPG": text(),
                "inbox/Scan.Jpg": text(),
                "inbox/notes.TXT": text(),
                "inbox/a.md": text(),
            },
        ),
        # C003 no extension -> no_ext (incl. a trailing dot)
        case(
            "tidy sort inbox --by ext",
            SORT,
            {
                "inbox/README": text(),
                "inbox/Makefile": text(),
                "inbox/draft.": text(),
                "inbox/b.txt": text(),
            },
        ),
        # C003 only the last extension counts
        case(
            "tidy sort inbox --by ext",
            SORT,
            {"inbox/backup.tar.gz": text(), "inbox/site.min.js": text(), "inbox/v1.2.txt": text()},
        ),
        # C002 name collision in an existing folder
        case(
            "tidy sort inbox --by ext",
            SORT,
            {"inbox/txt/a.txt": text(), "inbox/a.txt": text(), "inbox/b.txt": text()},
        ),
        # C002 collision chain, with and without an extension
        case(
            "tidy sort inbox --by ext",
            SORT,
            {
                "inbox/pdf/report.pdf": text(),
                "inbox/pdf/report-1.pdf": text(),
                "inbox/report.pdf": text(),
                "inbox/no_ext/LICENSE": text(),
                "inbox/LICENSE": text(),
            },
        ),
        # C001 hidden entries stay where they are
        case(
            "tidy sort inbox --by ext",
            SORT,
            {
                "inbox/.env": text(),
                "inbox/.cache.txt": text(),
                "inbox/.git/config": text(),
                "inbox/data.csv": text(),
            },
        ),
        # C009 singular summary; only loose top-level files move
        case(
            "tidy sort inbox --by ext",
            SORT,
            {"inbox/only.log": text(), "inbox/sub/deep.txt": text()},
        ),
        # C007 dry run
        case(
            "tidy sort inbox --by ext --dry-run",
            SORT,
            {"inbox/a.txt": text(), "inbox/B.PNG": text(), "inbox/c": text()},
        ),
        # C006 journal appended once; second run finds nothing
        case(
            "tidy sort inbox --by ext && tidy sort inbox --by ext",
            SORT,
            {"inbox/x.csv": text(), "inbox/y.csv": text(), "inbox/z.json": text()},
        ),
        # C004 date folders and undated
        case(
            "tidy sort inbox --by date-prefix",
            SORT,
            {
                "inbox/2024-03-05-report.pdf": text(),
                "inbox/2023-12-31 notes.txt": text(),
                "inbox/2024-03-28.md": text(),
                "inbox/misc.txt": text(),
            },
        ),
        # C004 only real calendar dates in YYYY-MM-DD form
        case(
            "tidy sort inbox --by date-prefix",
            SORT,
            {
                "inbox/2023-02-30-x.txt": text(),
                "inbox/2023-13-01.txt": text(),
                "inbox/20230101.txt": text(),
                "inbox/2024-02-29.md": text(),
                "inbox/0000-01-01.txt": text(),
                "inbox/2024-1-05.txt": text(),
            },
        ),
        # C002 + C004 collisions in date and undated folders
        case(
            "tidy sort inbox --by date-prefix",
            SORT,
            {
                "inbox/2024/01/2024-01-10-a.txt": text(),
                "inbox/2024-01-10-a.txt": text(),
                "inbox/undated/x.txt": text(),
                "inbox/x.txt": text(),
            },
        ),
        # C007 + C004 dry run by date
        case(
            "tidy sort inbox --by date-prefix --dry-run",
            SORT,
            {
                "inbox/2022-07-04-fireworks.jpg": text(),
                "inbox/2022-07-09-lake.jpg": text(),
                "inbox/holiday.jpg": text(),
            },
        ),
    ]
    dedupe = [
        # base: same depth, code-point smallest kept
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {"inbox/a.txt": a, "inbox/b.txt": a, "inbox/c.txt": a, "inbox/d.txt": b},
        ),
        # C005 the shallowest copy wins over a lexicographically smaller deeper one
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {"inbox/archive/2020/photo.jpg": c, "inbox/z-photo.jpg": c, "inbox/other.jpg": d},
        ),
        # C005 several groups, mixed depths
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {
                "inbox/b/copy.txt": a,
                "inbox/a/b/orig.txt": a,
                "inbox/c.txt": a,
                "inbox/x/1.md": b,
                "inbox/y/0.md": b,
                "inbox/y/z/0.md": b,
            },
        ),
        # C005 empty files are never duplicates
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {
                "inbox/e1.txt": "",
                "inbox/e2.txt": "",
                "inbox/sub/e3.txt": "",
                "inbox/p.txt": d,
                "inbox/q.txt": d,
            },
        ),
        # C007 dry run
        case(
            "tidy dedupe inbox --dry-run",
            DEDUPE,
            {"inbox/m.txt": c, "inbox/n.txt": c, "inbox/o.txt": a, "inbox/p.txt": a},
        ),
        # C001 hidden files are neither kept nor removed; C006 existing journal is appended to
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {
                "inbox/a.txt": b,
                "inbox/.a.txt": b,
                "inbox/.cache/a.txt": b,
                "inbox/b.txt": b,
                "inbox/.tidy.log": "moved old.txt -> txt/old.txt\n",
            },
        ),
        # C009 nothing to do (and no journal)
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {"inbox/one.txt": text(), "inbox/two.txt": text()},
        ),
        # C009 singular forms
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {"inbox/x1.txt": "x", "inbox/x2.txt": "x", "inbox/y.txt": text()},
        ),
    ]
    rename = [
        # base --lower, nested; folders keep their names
        case(
            "tidy rename inbox --lower",
            RENAME,
            {
                "inbox/Report.PDF": text(),
                "inbox/Photos/IMG_001.JPG": text(),
                "inbox/Sub Dir/Some File.TXT": text(),
                "inbox/ok.txt": text(),
            },
        ),
        # C002 --lower collision
        case("tidy rename inbox --lower", RENAME, {"inbox/A.txt": text(), "inbox/a.txt": text()}),
        # C011 camelCase and punctuation
        case(
            "tidy rename inbox --snake",
            RENAME,
            {
                "inbox/myFileName.TXT": text(),
                "inbox/Quarterly Report (final).docx": text(),
                "inbox/already_snake.txt": text(),
                "inbox/parseHTTPResponse.py": text(),
            },
        ),
        # C011 digits, runs of separators, leading/trailing underscores
        case(
            "tidy rename inbox --snake",
            RENAME,
            {
                "inbox/2024 Budget--v2.xlsx": text(),
                "inbox/__init__.py": text(),
                "inbox/Version2Final.md": text(),
                "inbox/Tom's & Jerry's.csv": text(),
            },
        ),
        # C002 + C011 snake collision
        case(
            "tidy rename inbox --snake",
            RENAME,
            {"inbox/My File.txt": text(), "inbox/my_file.txt": text()},
        ),
        # C001 hidden files and folders untouched
        case(
            "tidy rename inbox --lower",
            RENAME,
            {
                "inbox/.Hidden.TXT": text(),
                "inbox/.Config/Foo.TXT": text(),
                "inbox/Visible.TXT": text(),
            },
        ),
        # C007 dry run
        case(
            "tidy rename inbox --lower --dry-run",
            RENAME,
            {"inbox/Alpha.TXT": text(), "inbox/beta.txt": text(), "inbox/GAMMA.md": text()},
        ),
        # C011 names without an extension, trailing dot
        case(
            "tidy rename inbox --snake",
            RENAME,
            {"inbox/Makefile": text(), "inbox/READ ME": text(), "inbox/Notes.": text()},
        ),
        # C009 singular summary
        case(
            "tidy rename inbox --lower",
            RENAME,
            {"inbox/Single.txt": text(), "inbox/lower.txt": text()},
        ),
    ]
    stats = [
        # C012 basic
        case(
            "tidy stats proj",
            STATS,
            {
                "proj/a.txt": text(3),
                "proj/b.txt": text(),
                "proj/lib/x.py": text(5),
                "proj/lib/deep/y.py": text(),
                "proj/LICENSE": text(2),
                "proj/img/logo.PNG": text(),
            },
        ),
        # C012 ordering ties: count then extension; largest tie -> smallest path
        case(
            "tidy stats proj",
            STATS,
            {
                "proj/z.md": "abcd\n",
                "proj/a.rs": "abcd\n",
                "proj/m.go": "ab\n",
                "proj/k/b.md": "abcd\n",
                "proj/k/c.rs": "x\n",
            },
        ),
        # C001 hidden entries are not counted
        case(
            "tidy stats proj",
            STATS,
            {
                "proj/.env": text(9),
                "proj/.git/objects/ab": text(9),
                "proj/main.c": text(),
                "proj/.tidy.log": text(3),
            },
        ),
        # C012 empty folder
        case("tidy stats proj", STATS, {}, prep="mkdir -p proj"),
        # C012 singular forms
        case("tidy stats proj", STATS, {"proj/a.txt": "x"}),
    ]
    clean = [
        # base: empty files and folders
        case(
            "tidy clean junk",
            CLEAN,
            {"junk/zero.log": "", "junk/sub/zero.txt": "", "junk/sub/data.txt": text()},
            prep="mkdir -p junk/tmp/a junk/tmp/b",
        ),
        # C010 whitespace-only files count as empty
        case(
            "tidy clean junk",
            CLEAN,
            {
                "junk/spaces.txt": "   \n",
                "junk/tabs.txt": "\t\t\n",
                "junk/crlf.txt": "\r\n\r\n",
                "junk/x.txt": "x\n",
            },
        ),
        # C010 cascade: folders emptied by the clean-up go too
        case(
            "tidy clean junk",
            CLEAN,
            {"junk/a/b/blank.txt": " \n", "junk/keep.md": text()},
            prep="mkdir -p junk/a/b/c",
        ),
        # C010 + C001 a folder holding a hidden file is not empty
        case(
            "tidy clean junk",
            CLEAN,
            {"junk/cache/.keep": "", "junk/cache/tmp.txt": "", "junk/ws.txt": "\n\n"},
        ),
        # C007 dry run
        case(
            "tidy clean junk --dry-run",
            CLEAN,
            {"junk/e.txt": "", "junk/d/e2.txt": "", "junk/f.txt": text()},
            prep="mkdir -p junk/g",
        ),
        # C009 nothing to clean
        case("tidy clean junk", CLEAN, {"junk/a.txt": text(), "junk/b/c.txt": text()}),
        # C009 singular forms
        case("tidy clean junk", CLEAN, {"junk/e.txt": ""}, prep="mkdir -p junk/d"),
    ]
    errors = [
        # C008 missing directory
        case("tidy sort nowhere --by ext", ERRORS, {"inbox/a.txt": text()}),
        # C008 a file is not a directory
        case("tidy stats notes.txt", ERRORS, {"notes.txt": text()}),
        # C008 usage errors
        case("tidy shred inbox", ERRORS, {"inbox/a.txt": text()}),
        case("tidy sort inbox", ERRORS, {"inbox/a.txt": text()}),
        case("tidy rename inbox --lower --snake", ERRORS, {"inbox/A.txt": text()}),
        case("tidy", ERRORS, {}),
    ]
    return {
        "sort": ("Native cases for `tidy sort`", sort),
        "dedupe": ("Native cases for `tidy dedupe`", dedupe),
        "rename": ("Native cases for `tidy rename`", rename),
        "stats": ("Native cases for `tidy stats`", stats),
        "clean": ("Native cases for `tidy clean`", clean),
        "errors": ("Native error cases: missing directory and usage errors", errors),
    }


def enhanced() -> dict:
    a = text()
    boundaries = [
        case("tidy sort inbox --by ext", SORT, {}, prep="mkdir -p inbox"),
        case("tidy clean junk", CLEAN, {}, prep="mkdir -p junk"),
        case(
            "tidy sort inbox --by ext",
            SORT,
            {
                "inbox/txt/a.txt": text(),
                "inbox/txt/a-1.txt": text(),
                "inbox/txt/a-2.txt": text(),
                "inbox/a.txt": text(),
            },
        ),
        case(
            "tidy clean junk",
            CLEAN,
            {"junk/l1/l2/.keep": "", "junk/l1/l2/blank.txt": "\t"},
            prep="mkdir -p junk/l1/l2/l3/l4",
        ),
        case(
            "tidy sort inbox --by ext",
            SORT,
            {"inbox/a.txt": text()},
            prep="ln -s a.txt inbox/alias.txt",
        ),
    ]
    hostile = [
        case(
            "tidy sort inbox --by ext",
            SORT,
            {
                "inbox/Résumé final.PDF": text(),
                "inbox/日本語 メモ.txt": text(),
                "inbox/party 🎉.md": text(),
                "inbox/naïve.TXT": text(),
            },
        ),
        case(
            "tidy sort inbox --by ext",
            SORT,
            {"inbox/-rf.txt": text(), "inbox/--help.md": text(), "inbox/-.txt": text()},
        ),
        case(
            "tidy rename inbox --snake",
            RENAME,
            {
                "inbox/-Draft Copy.TXT": text(),
                "inbox/!!!.txt": text(),
                "inbox/___": text(),
                "inbox/Café Menu.PDF": text(),
                "inbox/日本語.txt": text(),
            },
        ),
        case(
            "tidy rename inbox --lower",
            RENAME,
            {
                "inbox/Note.txt": text(),
                "inbox/NOTE.txt": text(),
                "inbox/note-1.txt": text(),
                "inbox/note.txt": text(),
            },
        ),
        case(
            "tidy dedupe inbox",
            DEDUPE,
            {
                "inbox/a b/c d/x.txt": a,
                "inbox/a b/x.txt": a,
                "inbox/z.txt": a,
                "inbox/a b/c d/e f/x.txt": a,
                "inbox/été/ü.txt": "crème brûlée\n",
                "inbox/été/v.txt": "crème brûlée\n",
            },
        ),
        case(
            "cd proj && tidy stats .",
            STATS,
            {
                "proj/café.txt": "crème brûlée\n",
                "proj/日記.md": "今日は晴れ\n",
                "proj/sub/ø.TXT": "ø\n",
            },
        ),
        case("tidy stats ../../etc/passwd", ERRORS, {}),
        case("tidy dedupe missing --dry-run", ERRORS, {"inbox/a.txt": text()}),
        case("tidy sort inbox --by size", ERRORS, {"inbox/a.txt": text()}),
        case("tidy clean", ERRORS, {"junk/e.txt": ""}),
    ]
    return {
        "boundaries": (
            "Boundaries: empty folders, collision chains, hidden-file guards",
            boundaries,
        ),
        "hostile": ("Hostile names and arguments: unicode, spaces, leading dashes", hostile),
    }


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
    """Run one case with `tidy` -> entry, in a fresh temp dir; return rc, out, err, tree."""
    with tempfile.TemporaryDirectory(prefix="tidy-case-") as tmp:
        base = Path(tmp)
        bindir, data = base / "bin", base / "w" / "x" / "data"
        bindir.mkdir()
        data.mkdir(parents=True)
        wrapper = bindir / "tidy"
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
        if c.get("prep"):
            subprocess.run(["sh", "-c", c["prep"]], cwd=data, env=env, check=True)
        proc = subprocess.run(
            ["sh", "-c", c["command"]], cwd=data, env=env, capture_output=True, timeout=20
        )
        return (
            proc.returncode,
            proc.stdout.decode("utf-8"),
            proc.stderr.decode("utf-8"),
            snapshot(data),
        )


def oracle_entry() -> list[str]:
    return [sys.executable, str(ORACLE)]


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
