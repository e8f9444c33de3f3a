"""A generated catalog of many tasks, built in memory (no task folders), for the task browser.

Deterministic: task `i` has a topic, a kind and a language picked by `i`, and `1 + i % 150`
cases spread over the three splits — so every size bucket and language is populated. Every
case's content carries `SECRET` (the hidden ones `HIDDEN_SECRET`), and so does every
user-agent record: a preview that shows a case or a record shows one of them.
"""

from __future__ import annotations

from icae_tui.catalog.loader import Catalog
from icae_tui.domain.task import (
    Case,
    CaseRef,
    Level,
    Split,
    Task,
    TaskSpec,
    UserAgentData,
)

TOPICS = ["csv", "json", "ini", "semver", "todo", "markdown", "duration", "ratelimit", "log",
          "cron", "diff", "yaml", "toml", "url", "base64", "uuid", "hash", "tar", "zip", "env"]  # fmt: skip
KINDS = ["parser", "formatter", "validator", "converter", "stats", "linter", "query",
         "router", "cache", "scheduler"]  # fmt: skip
LANGUAGES = ["python", "go", "rust", "javascript", "java", "c"]
PATTERNS = ["parse", "format", "errors", "edge"]

SECRET = "zq-case-content-7f3a"
HIDDEN_SECRET = "zq-hidden-only-91bd"
RECORD_SECRET = "zq-record-c0de"


def make_task(
    task_id: str,
    title: str,
    language: str,
    summary: str = "",
    cases: int = 6,
    prd: dict[Level, str] | None = None,
) -> Task:
    """One task in memory: `cases` cases, about a sixth public, half hidden, the rest enhanced
    (at least one hidden), over four patterns."""
    spec = TaskSpec.model_validate(
        {
            "id": task_id,
            "title": title,
            "language": language,
            "summary": summary,
            "interface": {"kind": "dispatcher", "tool": "tool"},
            "oracle": {"entry": "true"},
            "delivery": {"entry": "true", "build": "true"},
        }
    )
    public = max(0, cases // 6)
    hidden = max(1, cases // 2)
    refs = []
    for i in range(cases):
        split = (
            Split.PUBLIC if i < public else Split.HIDDEN if i < public + hidden else Split.ENHANCED
        )
        secret = HIDDEN_SECRET if split is Split.HIDDEN else SECRET
        case = Case(
            input={"op": "x", "text": f"{secret} input {i}"},
            expected_output=f"{secret} output {i}\n",
            files={"fixture.txt": f"{secret} file"},
            command=None,
        )
        refs.append(
            CaseRef(split=split, stem=f"c{i % 3}", index=i, case=case,
                    pattern=PATTERNS[i % len(PATTERNS)])
        )  # fmt: skip
    record = {
        "oracle_data": {
            "hidden_constraints": [
                {"constraint_id": "C001", "trigger_keywords": [RECORD_SECRET],
                 "oracle_response": f"{RECORD_SECRET} answer"}
            ],
            "fallback_response": f"{RECORD_SECRET} fallback",
        },
        "fuzzy_prd": f"{RECORD_SECRET} fuzzy",
    }  # fmt: skip
    prd = prd or {level: f"# {title}\n\nThe {level.value} PRD of {task_id}.\n" for level in Level}
    return Task(
        spec=spec,
        root=f"tasks/{task_id}",
        prd=prd,
        user_agent={level: UserAgentData.model_validate(record) for level in Level},
        cases=refs,
        solutions=["good"],
    )


def generated(n: int = 500) -> list[Task]:
    tasks = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        kind = KINDS[(i // len(TOPICS)) % len(KINDS)]
        language = LANGUAGES[i % len(LANGUAGES)]
        tasks.append(
            make_task(
                f"{topic}-{kind}-{i:03d}",
                f"{topic.upper()} {kind} number {i}",
                language,
                f"a small {kind} for {topic} input, written in {language}",
                cases=1 + i % 150,
            )
        )
    return tasks


def catalog_of(tasks: list[Task]) -> Catalog:
    return Catalog(tasks={t.id: t for t in tasks})
