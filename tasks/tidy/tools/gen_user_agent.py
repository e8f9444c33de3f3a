#!/usr/bin/env python3
"""Write tasks/tidy/user_agent/{L1,L2,L3,ground}.json from one list of records.

Every record is defined once here, with the levels whose PRD hides it, so the levels cannot
drift apart; `fuzzy_prd` is the level's PRD text. Run after editing a PRD or a record:

    python3 tasks/tidy/tools/gen_user_agent.py
"""

from __future__ import annotations

import json
from pathlib import Path

TASK = Path(__file__).resolve().parents[1]
LEVELS = ("L1", "L2", "L3", "ground")
SIGNATURE = (
    "tidy <sort|dedupe|rename|stats|clean> <dir> [options]   "
    "(entry: python3 /workspace/tidy.py; sort --by ext|date-prefix, rename --lower|--snake, "
    "--dry-run on sort/dedupe/rename/clean)"
)
FALLBACK = (
    "That isn't specified in the requirements, so I have no preference; "
    "please use your own judgement."
)

# (record, levels whose PRD hides it)
RECORDS: list[tuple[dict, tuple[str, ...]]] = [
    (
        {
            "constraint_id": "C001",
            "trigger_keywords": [
                "should hidden files and dotfiles be skipped",
                "what about dotfiles and files starting with a dot",
                "should it skip hidden folders like .git",
                "are hidden files counted or moved",
                "how are symbolic links handled",
                "should symlinks be followed",
            ],
            "oracle_response": (
                "Any file or folder whose name starts with `.` is skipped by every subcommand: "
                "never moved, renamed, deleted or counted, and hidden folders are not descended "
                "into. Symbolic links are ignored the same way (never followed, moved, renamed, "
                "deleted or counted); only regular files and real folders are considered."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "constraint_id": "C002",
            "trigger_keywords": [
                "what if a file with the same name already exists at the destination",
                "how should name collisions be handled",
                "what if the target name is already taken",
                "should existing files be overwritten",
                "naming conflict when moving or renaming",
                "how to resolve a clash between two files that end up with the same name",
            ],
            "oracle_response": (
                "Never overwrite. If the destination name is already taken in the target folder "
                "(by any entry, including hidden ones, or by a file placed there earlier in the "
                "same run), insert `-1` before the extension (or append it when there is no "
                "extension); if that is taken too, try `-2`, `-3`, ... and use the first free "
                "one: `a.txt` -> `a-1.txt` -> `a-2.txt`, `backup.tar.gz` -> `backup.tar-1.gz`, "
                "`LICENSE` -> `LICENSE-1`. The extension is the text after the last dot, if that "
                "dot is neither the first nor the last character. This applies to sort and "
                "rename."
            ),
        },
        ("L1", "L2", "L3"),
    ),
    (
        {
            "constraint_id": "C003",
            "trigger_keywords": [
                "how are the extension folders named",
                "where do files without an extension go",
                "is the extension folder name lower case",
                "what about file names with several dots like tar.gz",
                "what does sort by ext do exactly",
                "does sort also move files inside subfolders",
            ],
            "oracle_response": (
                "With `--by ext` the folder is the file's extension in lower case: the text after "
                "the last `.`, provided that dot is neither the first nor the last character "
                "(`archive.tar.gz` -> `gz/`, `PHOTO.JPG` -> `jpg/PHOTO.JPG`; the file name itself "
                "is not changed). Files without an extension (`README`, `draft.`) go to "
                "`no_ext/`. Only files directly inside <dir> are moved; files in subfolders stay "
                "where they are. Folders are created as needed."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C004",
            "trigger_keywords": [
                "what folder structure should sort by date prefix create",
                "what date format is expected at the start of the name",
                "where do files without a date prefix go",
                "how are the date folders named",
                "what about invalid dates in file names",
                "year and month folders for date-prefix",
            ],
            "oracle_response": (
                "With `--by date-prefix`, a file whose name starts with `YYYY-MM-DD` (ASCII "
                "digits, a real calendar date, year 0001-9999; anything may follow) goes to the "
                "folder `YYYY/MM/` (`2024-03-05-report.pdf` -> `2024/03/2024-03-05-report.pdf`). "
                "Every other file, including impossible or malformed dates such as `2023-02-30` "
                "or `2024-1-05`, goes to `undated/`."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C005",
            "trigger_keywords": [
                "which duplicate should be kept",
                "which copy survives when deduplicating",
                "how do I decide which of the duplicate files to delete",
                "are empty files considered duplicates",
                "how are duplicate files detected",
                "keep the original or the newest copy of a duplicate",
            ],
            "oracle_response": (
                "Duplicates are files with byte-for-byte identical content anywhere under <dir>. "
                "Keep the shallowest copy (fewest folders between it and <dir>); among equally "
                "shallow copies keep the one with the smallest relative path (plain code-point "
                "string order). Delete all other copies. Empty (0-byte) files are never treated "
                "as duplicates. Folders emptied by the deletions stay."
            ),
        },
        ("L1", "L2", "L3"),
    ),
    (
        {
            "constraint_id": "C006",
            "trigger_keywords": [
                "where should the log be written",
                "what is the log file called and what goes in it",
                "should the changes be logged",
                "is there a journal of what was changed",
                "should the log be appended or overwritten",
                "log file location and format",
            ],
            "oracle_response": (
                "Every action actually performed is appended, as the exact line printed on "
                "stdout (e.g. `moved a.txt -> txt/a.txt`), to the file `<dir>/.tidy.log`, created "
                "if missing and never truncated. The summary line is not logged. Nothing is "
                "written to it by a dry run, by `stats`, or when there was nothing to do."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "constraint_id": "C007",
            "trigger_keywords": [
                "what exactly should --dry-run print",
                "what does the dry-run output look like",
                "does a dry run write anything",
                "what is the preview mode output",
                "how should --dry-run behave",
                "should dry run change any files",
            ],
            "oracle_response": (
                "`--dry-run` (accepted by sort, dedupe, rename and clean) changes nothing on disk "
                "and writes no log. It prints what a real run would print, but every action line "
                "and the summary line start with `would ` and use the base form of the verb: "
                "`would move a.txt -> txt/a.txt`, `would remove b.txt (duplicate of a.txt)`, "
                "`would rename A.txt -> a.txt`, `would remove old/`, `would sort 3 files into 2 "
                "folders`, `would remove 2 duplicates (24 bytes)`, `would rename 1 file`, "
                "`would remove 1 empty file and 0 empty folders`."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C008",
            "trigger_keywords": [
                "what if the directory does not exist",
                "what error message for a missing folder",
                "which exit codes should it use",
                "how should invalid arguments be reported",
                "what is the usage error message",
                "what happens with an unknown subcommand",
            ],
            "oracle_response": (
                "If <dir> does not exist or is not a folder: print exactly `error: directory not "
                "found` to stderr, nothing to stdout, change nothing, exit status 3. Usage errors "
                "(unknown or missing subcommand, missing or extra <dir>, an unknown option or one "
                "not valid for that subcommand such as `--dry-run` on stats, sort without `--by` "
                "or with a value other than ext/date-prefix, rename without exactly one of "
                "`--lower`/`--snake`): print exactly "
                "`usage: tidy <sort|dedupe|rename|stats|clean> <dir> [options]` to stderr, "
                "nothing to stdout, exit status 2; they are checked before the folder. Success "
                "is exit status 0, also when there is nothing to do."
            ),
        },
        ("L1", "L2", "L3"),
    ),
    (
        {
            "constraint_id": "C009",
            "trigger_keywords": [
                "what should the output look like",
                "what summary line should be printed",
                "what is printed for each file that is moved or removed",
                "what is the output format of each subcommand",
                "singular or plural in the summary",
                "in which order are the results printed",
            ],
            "oracle_response": (
                "Paths are relative to <dir> with `/`, and everything is processed and printed in "
                "code-point order of the relative path. One line per action, then one summary "
                "line. sort: `moved <name> -> <folder>/<name>`, then `sorted <N> files into <M> "
                "folders` (M = distinct destination folders used in this run; `2024/03` counts "
                "as one). dedupe: `removed <path> (duplicate of <kept path>)` in order of the "
                "removed path, then `removed <N> duplicates (<B> bytes)` (B = total size "
                "removed). rename: `renamed <old path> -> <new path>`, then `renamed <N> files`. "
                "clean: `removed <path>` per file, then `removed <path>/` per folder, then "
                "`removed <N> empty files and <M> empty folders`. Use the singular for exactly 1 "
                "(`1 file`, `1 folder`, `1 duplicate`, `1 byte`, `1 empty file`, `1 empty "
                "folder`) and the plural otherwise, including 0."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C010",
            "trigger_keywords": [
                "what counts as an empty file",
                "are whitespace-only files empty",
                "which folders should clean remove",
                "should clean remove nested empty folders",
                "what does clean consider empty",
                "should the target folder itself be removed when empty",
            ],
            "oracle_response": (
                "An empty file is a file of 0 bytes or one containing only ASCII whitespace "
                "(space, tab, newline, carriage return, vertical tab, form feed). An empty folder "
                "is one that contains nothing once its empty files and empty subfolders are "
                "removed, so a chain of folders emptied by the clean-up goes entirely; a folder "
                "holding anything else (a non-empty file, a hidden entry, a symbolic link) is "
                "kept. <dir> itself is never removed. Removed files are listed first (path "
                "order), then removed folders, deepest first, then by path, with a trailing `/`."
            ),
        },
        ("L1", "L2", "L3"),
    ),
    (
        {
            "constraint_id": "C011",
            "trigger_keywords": [
                "what exactly does snake case mean here",
                "how should names be converted to snake_case",
                "how to handle camelCase in snake mode",
                "what about spaces and special characters in snake case",
                "is the extension changed when renaming",
                "what if the snake case name ends up empty",
            ],
            "oracle_response": (
                "`--snake`: split the name into stem and extension (text after the last `.`, if "
                "that dot is neither the first nor the last character). In the stem: (1) insert "
                "`_` between an ASCII lower-case letter or digit and a following ASCII upper-case "
                "letter; (2) lower-case it; (3) replace every run of characters other than "
                "`a-z`/`0-9` (non-ASCII letters included) with one `_`; (4) strip `_` from both "
                "ends, and use `file` if nothing is left. The extension is lower-cased and kept. "
                "`myFileName.TXT` -> `my_file_name.txt`, `parseHTTPResponse.py` -> "
                "`parse_httpresponse.py`, `__init__.py` -> `init.py`, `READ ME` -> `read_me`, "
                "`Notes.` -> `notes`. `--lower` lower-cases the whole name, extension included. "
                "Folder names are never changed."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "constraint_id": "C012",
            "trigger_keywords": [
                "what should stats print",
                "what is the stats output format",
                "in which order are the extensions listed in stats",
                "what does the stats overview include",
                "what does stats print for an empty folder",
                "which file is reported as the largest",
            ],
            "oracle_response": (
                "stats changes nothing and prints `files: <n>`, `folders: <n>` (folders below "
                "<dir> at any depth), `bytes: <total size>`, then one line per extension "
                "`ext <ext>: <n> files, <b> bytes` (lower-cased extension or `no_ext`; ordered by "
                "file count, highest first, then extension name), then `largest: <path> (<b> "
                "bytes)` for the biggest file (ties: smallest path), omitted when there are no "
                "files. Singular for exactly 1 (`1 file`, `1 byte`)."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "ARCH001",
            "trigger_keywords": [
                "can I use third-party libraries",
                "which python version should I target",
                "can I install packages with pip",
                "should it be a single file or a package",
            ],
            "oracle_response": (
                "Python 3.11 with the standard library only; everything lives in the single file "
                "/workspace/tidy.py, invoked as `tidy <subcommand> ...`."
            ),
        },
        ("L1",),
    ),
]

# (pointer, levels whose PRD uses the vague reference)
POINTERS: list[tuple[dict, tuple[str, ...]]] = [
    (
        {
            "vague_reference": "the usual log",
            "actual_meaning": (
                "The journal file `.tidy.log` inside the folder being tidied: every action "
                "actually performed is appended as the exact line printed on stdout; nothing is "
                "written for dry runs, for stats, or when nothing was done."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "vague_reference": "the way the old cleanup script did it",
            "actual_meaning": (
                "The old cleanup script kept the shallowest copy of each set of identical files "
                "(fewest folders deep), breaking ties by the smallest relative path, deleted the "
                "other copies, and never treated empty files as duplicates."
            ),
        },
        ("L1",),
    ),
]


def build(level: str) -> dict:
    prd = (TASK / "prd" / f"{level}.md").read_text(encoding="utf-8")
    return {
        "fuzzy_prd": prd,
        "oracle_data": {
            "task_id": "tidy",
            "golden_api_signature": SIGNATURE,
            "hidden_constraints": [r for r, levels in RECORDS if level in levels],
            "context_pointers": [p for p, levels in POINTERS if level in levels],
            "fallback_response": FALLBACK,
        },
    }


def main() -> None:
    out = TASK / "user_agent"
    out.mkdir(exist_ok=True)
    for level in LEVELS:
        doc = build(level)
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        (out / f"{level}.json").write_text(text, encoding="utf-8")
        print(
            level,
            len(doc["oracle_data"]["hidden_constraints"]),
            "records,",
            len(doc["oracle_data"]["context_pointers"]),
            "pointers",
        )


if __name__ == "__main__":
    main()
