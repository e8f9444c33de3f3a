#!/usr/bin/env python3
"""Write tasks/wordfreq/user_agent/{L1,L2,L3,ground}.json from one list of records.

Every record is defined once here, with the levels whose PRD hides it, so the levels cannot
drift apart; `fuzzy_prd` is the level's PRD text. Run after editing a PRD or a record:

    python3 tasks/wordfreq/tools/gen_user_agent.py
"""

from __future__ import annotations

import json
from pathlib import Path

TASK = Path(__file__).resolve().parents[1]
LEVELS = ("L1", "L2", "L3", "ground")
SIGNATURE = (
    "wordfreq <top|count|grep|vocab> [options] [FILE...]   (entry: node /workspace/wordfreq.js; "
    "top -n N --stop FILE, grep WORD, vocab --min-count N --stop FILE)"
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
                "what counts as a word",
                "how should the text be split into words",
                "are numbers counted as words",
                "what about apostrophes and hyphens inside words",
                "which characters can a word contain",
            ],
            "oracle_response": (
                "A word is a maximal run of Unicode letters and digits (any script); an "
                "apostrophe ' between two such characters belongs to the word (don't, "
                "rock'n'roll). Everything else - spaces, punctuation, hyphens, emoji, other "
                "apostrophes - separates words (well-known is two words). A run made only of "
                "digits is not a word (42 and 2024 are ignored; 2nd is a word)."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "constraint_id": "C002",
            "trigger_keywords": [
                "is it case sensitive",
                "should upper and lower case words be counted together",
                "are The and the the same word",
                "in which case should words be printed",
                "should words be lowercased",
            ],
            "oracle_response": (
                "Words are compared case-insensitively and always printed in lower case "
                "(JavaScript's toLowerCase()): The, THE and the are the word the."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C003",
            "trigger_keywords": [
                "how should ties in top be ordered",
                "what order for equal counts in top",
                "how many lines does top print by default",
                "what is the default for -n",
                "how are ties broken in the ranking",
            ],
            "oracle_response": (
                "top shows the 10 most frequent words unless -n says otherwise. Most frequent "
                "first; words with the same count in alphabetical order, compared as plain "
                "strings by UTF-16 code unit (JavaScript's default < on strings, not a locale "
                "order), the same order vocab uses."
            ),
        },
        ("L1", "L2", "L3"),
    ),
    (
        {
            "constraint_id": "C004",
            "trigger_keywords": [
                "what should count print exactly",
                "what is the output format of count",
                "is there a total line for several files",
                "how are lines counted when the last line has no newline",
                "what columns does count show",
            ],
            "oracle_response": (
                "For each input in order: `<lines> <words> <distinct words> <name>`. With more "
                "than one input a last line `<lines> <words> <distinct words> total` (sums of "
                "lines and words, and the words distinct across all inputs). Lines are split at "
                "\\n; a last line without a final \\n still counts; an empty input has 0 lines."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C005",
            "trigger_keywords": [
                "does grep match whole words or substrings",
                "should grep ignore case",
                "how are matches from several files shown",
                "what if grep finds nothing",
                "what exit status when no line matches",
            ],
            "oracle_response": (
                "grep matches WORD as a whole word, by the same word and case rules as "
                "counting (stone matches `Stone.` but not stones or milestone). With more than "
                "one input each line is printed as `<name>:<line number>:<line>` (line numbers "
                "start at 1 in each input). When no line matches, nothing is printed and the "
                "exit status is 1."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "constraint_id": "C006",
            "trigger_keywords": [
                "how should errors be reported",
                "what if a file does not exist",
                "which exit codes should be used",
                "what is the usage message",
                "what if the value of -n is invalid",
            ],
            "oracle_response": (
                "Errors print one line to stderr, nothing to stdout, exit status 2, checked "
                "before anything is printed, in this order: a bad or missing subcommand, an "
                "unknown option, an option without its value or grep without WORD prints "
                "`usage: wordfreq <top|count|grep|vocab> [options] [FILE...]`; a value of -n "
                "or --min-count that is not a positive integer (ASCII digits, at least 1) "
                "prints `wordfreq: -n must be a positive integer` (or --min-count); a grep "
                "WORD that is not exactly one word prints `wordfreq: not a word: WORD`; a file "
                "that cannot be read (missing, a folder) prints `wordfreq: cannot read FILE` "
                "with the name as given - the stop file first, then the files in order."
            ),
        },
        ("L1", "L2", "L3"),
    ),
    (
        {
            "constraint_id": "C007",
            "trigger_keywords": [
                "what if no file is given",
                "should it read from standard input",
                "can it read stdin with a dash",
                "what name is shown for standard input",
                "does it work in a pipe",
            ],
            "oracle_response": (
                "With no FILE, or for a FILE that is exactly -, standard input is read "
                "instead; its name in count and grep output is -."
            ),
        },
        ("L1", "L2"),
    ),
    (
        {
            "constraint_id": "C008",
            "trigger_keywords": [
                "what is the format of the stop word file",
                "are comments allowed in the stop list",
                "one stop word per line",
                "are stop words case insensitive",
                "what about blank lines in the stop file",
            ],
            "oracle_response": (
                "One word per line; blank lines and lines whose first non-space character is # "
                "are ignored; every other line is split into words by the usual word rules and "
                "lower-cased, so `The` stops the. Stop words are left out of top and vocab."
            ),
        },
        ("L1",),
    ),
    (
        {
            "constraint_id": "C009",
            "trigger_keywords": [
                "can options come after the files",
                "in which order may options and files be given",
                "does -- end the options",
                "what about a file whose name starts with a dash",
                "how are the arguments parsed",
            ],
            "oracle_response": (
                "Options may come before or after the files; `--` ends the options (every later "
                "argument is a file, even one starting with -). An argument that starts with - "
                "and is not exactly - is an option, and every option takes the next argument "
                "as its value."
            ),
        },
        ("L1", "L2", "L3"),
    ),
]

POINTERS: list[tuple[dict, tuple[str, ...]]] = [
    (
        {
            "vague_reference": "like wc does",
            "actual_meaning": (
                "One line per input, `<lines> <words> <distinct words> <name>`, and with more "
                "than one input a last `total` line of the sums (distinct words counted across "
                "all inputs)."
            ),
        },
        ("L1",),
    ),
    (
        {
            "vague_reference": "the usual stop-list format",
            "actual_meaning": (
                "A plain text file with one word per line, where blank lines and lines starting "
                "with # are ignored; the words are matched case-insensitively."
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
            "task_id": "wordfreq",
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
