"""How faithfully the simulated user answers real clarification questions.

    python benchmarks/user_fidelity.py [--split test|dev|all] [--sets a,b] [--show-misses]
    python benchmarks/user_fidelity.py --model NAME --base-url URL [--api-key-env VAR]
    python benchmarks/user_fidelity.py --taught [--sets a,b]

The corpus is `benchmarks/fidelity/sets/<set>/`: a record set in ICAE-EVAL's user-agent
format (`user_agent.json`, or `source.txt` naming a task's `user_agent/<level>.json`) and
`questions.jsonl`, one labelled question a line: `expect` lists every record that rightly
answers it (`[]`: the right answer is the fallback), `split` says dev (for tuning) or test
(never tuned on). How the questions were written, and by whom, is in
`benchmarks/fidelity/README.md`.

For each question the user answers with a set of records (none: the fallback):
- right        — answerable, and every record given is in `expect`;
- leak         — a record outside `expect` was given (answerable or not);
- false fallback — answerable, but the fallback was given;
- correct fallback — unanswerable, and the fallback was given.
Printed per set and overall: right-record recall (right / answerable), leak rate (leaks /
all questions), false fallback (/ answerable), correct fallback (/ unanswerable), and the
latency of one answer (median, p95). Then the same matcher's latency against one level of
about 100 records (all sets' records together), the figure the target names. Beside the
matcher, the same figures for a baseline measured in the same run: `process.extractOne`
over all trigger phrases with a cut-off (the least a matcher can do).

With `--model`, the model mode (a model choosing among the matcher's candidates, audited)
is measured instead, through the `openai` package against any OpenAI-compatible endpoint.

With `--taught`, the operator teaching the simulated user (users/teachings.py) is measured:
each dev-half question the matcher answered with the fallback although a record answers it
is taught to that record (of several, the one the matcher scores highest: the one an
operator would pick) as a console does — stored pending in a teachings file, accepted, and
loaded into the level's records as a run loads them — then the simulated user's figures on
the test half (never taught) are printed before and after, side by side, with the dev
half's for comparison: before, the matcher; after, the matcher with the taught phrases as a
run answers with them (`taught_match`: an answer only they give needs a near-exact match),
and beside it the taught phrases as plain trigger phrases (no such bar), for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rapidfuzz import fuzz, process  # noqa: E402

from icae_tui.domain.task import HiddenConstraint, Level, OracleData  # noqa: E402
from icae_tui.users.matching import match, prepare, score_records  # noqa: E402
from icae_tui.users.public_cases import with_public_cases  # noqa: E402
from icae_tui.users.teaching import TaughtLevel, taught_data, taught_match  # noqa: E402
from icae_tui.users.teachings import TeachingStatus, review, teach  # noqa: E402

SETS = Path(__file__).resolve().parent / "fidelity" / "sets"
BASELINE_CUTOFF = 70.0


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    style: str
    expect: frozenset[str]
    split: str


@dataclass
class RecordSet:
    name: str
    data: OracleData
    questions: list[Question]


def load_set(folder: Path) -> RecordSet:
    """A set's records (with TC_<stem> records for its public case files) and questions."""
    source = folder / "source.txt"
    if source.is_file():
        path = ROOT / source.read_text().strip()
        raw = json.loads(path.read_text())
        public_dir = path.parent.parent / "cases" / "public"
        public = {p.name: json.loads(p.read_text()) for p in sorted(public_dir.glob("*.json"))}
    else:
        raw = json.loads((folder / "user_agent.json").read_text())
        public = raw.get("public_test_cases") or {}
    data = with_public_cases(OracleData.model_validate(raw["oracle_data"]), public)
    questions = []
    for line in (folder / "questions.jsonl").read_text().splitlines():
        if line.strip():
            q = json.loads(line)
            questions.append(Question(q["id"], q["text"], q.get("style", ""),
                                      frozenset(q.get("expect") or []), q["split"]))  # fmt: skip
    return RecordSet(folder.name, data, questions)


def load_sets(names: list[str] | None = None) -> list[RecordSet]:
    folders = sorted(p for p in SETS.iterdir() if (p / "questions.jsonl").is_file())
    return [load_set(f) for f in folders if not names or f.name in names]


@dataclass
class Tally:
    answerable: int = 0
    unanswerable: int = 0
    right: int = 0
    leaks: int = 0
    false_fallback: int = 0
    correct_fallback: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def add(self, q: Question, given: list[str], ms: float) -> None:
        self.latencies_ms.append(ms)
        got = set(given)
        leak = bool(got - q.expect)
        self.leaks += leak
        if q.expect:
            self.answerable += 1
            ok = bool(got) and not leak
            self.right += ok
            self.false_fallback += not got
        else:
            self.unanswerable += 1
            ok = not got
            self.correct_fallback += ok
        if not ok:
            self.misses.append(f"  {q.id} [{q.style}] expect {sorted(q.expect) or 'fallback'}, "
                               f"got {sorted(got) or 'fallback'}: {q.text[:110]!r}")  # fmt: skip

    def merge(self, other: Tally) -> None:
        for name in ("answerable", "unanswerable", "right", "leaks", "false_fallback",
                     "correct_fallback"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.latencies_ms += other.latencies_ms
        self.misses += other.misses

    def row(self, name: str) -> str:
        pct = lambda a, b: f"{100 * a / b:5.1f}%" if b else "    —"  # noqa: E731
        lat = sorted(self.latencies_ms) or [0.0]
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        total = self.answerable + self.unanswerable
        return (f"{name:<16} {total:>4} {pct(self.right, self.answerable)} "
                f"{pct(self.leaks, total)} {pct(self.false_fallback, self.answerable)} "
                f"{pct(self.correct_fallback, self.unanswerable)} "
                f"{statistics.median(lat):7.2f} {p95:7.2f}")  # fmt: skip


HEADER = (f"{'set':<16} {'n':>4} {'recall':>6} {'leaks':>6} {'f.fall':>6} {'c.fall':>6} "
          f"{'med ms':>7} {'p95 ms':>7}")  # fmt: skip

Answer = Callable[[str, OracleData], list[str]]


def matcher_answer(question: str, data: OracleData) -> list[str]:
    return [c.record_id for c in match(question, data).chosen]


def baseline_answer(question: str, data: OracleData) -> list[str]:
    """extractOne over every trigger phrase (and context pointer), with a cut-off."""
    choices = [(r.constraint_id, t) for r in data.hidden_constraints for t in r.trigger_keywords]
    choices += [(f"CP{i:03d}", p.vague_reference)
                for i, p in enumerate(data.context_pointers, start=1)]  # fmt: skip
    best = process.extractOne(question, [t for _, t in choices], scorer=fuzz.token_set_ratio,
                              score_cutoff=BASELINE_CUTOFF)  # fmt: skip
    return [choices[best[2]][0]] if best else []


def measure(sets: list[RecordSet], split: str, answer: Answer) -> tuple[list[str], Tally]:
    rows, overall = [], Tally()
    for s in sets:
        prepare(s.data)
        tally = Tally()
        for q in s.questions:
            if split != "all" and q.split != split:
                continue
            t0 = time.perf_counter()
            given = answer(q.text, s.data)
            tally.add(q, given, (time.perf_counter() - t0) * 1000)
        rows.append(tally.row(s.name))
        overall.merge(tally)
    return rows, overall


def merged_level(sets: list[RecordSet]) -> OracleData:
    """Every set's records in one level (ids prefixed by the set), about 100 records."""
    records = [HiddenConstraint(constraint_id=f"{s.name}:{r.constraint_id}",
                                trigger_keywords=r.trigger_keywords,
                                oracle_response=r.oracle_response)
               for s in sets for r in s.data.hidden_constraints]  # fmt: skip
    return OracleData(hidden_constraints=records, fallback_response="unspecified")


def rank_ceiling(sets: list[RecordSet], split: str) -> str:
    """How often the matcher ranks a right record first, over the answerable questions: the
    most recall any bar and margin on this ranking can reach (with no leak at all)."""
    first = answerable = 0
    for s in sets:
        for q in s.questions:
            if q.expect and split in ("all", q.split):
                answerable += 1
                ranked = score_records(q.text, s.data)
                first += bool(ranked) and ranked[0].score > 0 and ranked[0].record_id in q.expect
    share = 100 * first / answerable if answerable else 0.0
    return (f"rank ceiling, matcher: a right record ranked first for {first} of {answerable} "
            f"answerable questions ({share:.1f}%): a bar and margin on this ranking recall no more")  # fmt: skip


def latency_on_merged(sets: list[RecordSet], split: str) -> str:
    level = merged_level(sets)
    prepare(level)
    times = []
    for s in sets:
        for q in s.questions:
            if split == "all" or q.split == split:
                t0 = time.perf_counter()
                match(q.text, level)
                times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return (
        f"one level of {len(level.hidden_constraints)} records: median "
        f"{statistics.median(times):.2f} ms, p95 {p95:.2f} ms over {len(times)} questions"
    )


@dataclass
class ModelAudit:
    """What the model mode's audit must guarantee, checked on every answer: nothing beyond
    the records it offered, and no text beyond the chosen records."""

    answers: int = 0
    outside_candidates: int = 0  # a record it was never offered (must stay 0)
    ungrounded: int = 0  # text not verbatim and not a grounded rephrase (must stay 0)
    failures: int = 0  # the endpoint failed: the deterministic answer stood in

    def line(self) -> str:
        return (f"model audit: {self.answers} answers, {self.outside_candidates} with a record "
                f"never offered, {self.ungrounded} with text beyond their records, "
                f"{self.failures} endpoint failures")  # fmt: skip


def model_answer_factory(args: argparse.Namespace, audit: ModelAudit) -> Answer:
    from icae_tui.users import matching
    from icae_tui.users.model_user import ModelConfig, ModelUser, grounded_rephrase

    key = os.environ.get(args.api_key_env, "") if args.api_key_env else "not-needed"
    config = ModelConfig(model=args.model, base_url=args.base_url, api_key=key or "not-needed")
    users: dict[int, ModelUser] = {}
    loop = asyncio.new_event_loop()

    def answer(question: str, data: OracleData) -> list[str]:
        user = users.setdefault(id(data), ModelUser(data, config))
        reply = loop.run_until_complete(user.reply(0, question))
        offered = matching.candidates(question, data, k=config.candidates)
        by_id = {c.record_id: c for c in offered}
        audit.answers += 1
        audit.failures += reply.responder != "model"
        if reply.responder == "model" and reply.record_ids:
            if not set(reply.record_ids) <= set(by_id):
                audit.outside_candidates += 1
            chosen = [by_id[i] for i in reply.record_ids if i in by_id]
            verbatim = reply.text == "\n\n".join(c.text for c in chosen)
            if not verbatim and not grounded_rephrase(reply.text, chosen):
                audit.ungrounded += 1
        return list(reply.record_ids)

    return answer


TAUGHT_LEVEL = Level.L1  # a set is one level; its teachings are filed under this one
TAUGHT_BY = "benchmark"


@dataclass
class Taught:
    """What `--taught` taught: per set, the dev half's false fallbacks as phrases."""

    sets: list[RecordSet]  # the sets with their accepted teachings loaded
    taught: int = 0  # phrases taught (each accepted)
    dev_answerable: int = 0
    dev_wrong_record: int = 0  # dev misses that gave a wrong record: no fallback, not taught


def teach_dev_misses(sets: list[RecordSet], folder: Path) -> Taught:
    """Each dev question answered with the fallback though a record answers it, taught to
    that record (of several, the one the matcher scores highest) through the teachings file
    a console writes, accepted, and loaded back as a run loads it."""
    out = Taught([])
    for s in sets:
        root = folder / s.name
        (root / "user_agent").mkdir(parents=True)
        ids = []
        for q in s.questions:
            if q.split != "dev" or not q.expect:
                continue
            out.dev_answerable += 1
            given = matcher_answer(q.text, s.data)
            if given:
                out.dev_wrong_record += not set(given) <= q.expect
                continue
            scores = {c.record_id: c.score for c in score_records(q.text, s.data)}
            record = max(sorted(q.expect), key=lambda r: scores.get(r, 0.0))
            t, new = teach(root, level=TAUGHT_LEVEL, record_id=record, phrase=q.text,
                           run_id="user_fidelity", question_id=None, who=TAUGHT_BY)  # fmt: skip
            if new:
                ids.append(t.id)
        if ids:
            review(root, dict.fromkeys(ids, TeachingStatus.ACCEPTED), who=TAUGHT_BY)
        out.taught += len(ids)
        out.sets.append(RecordSet(s.name, taught_data(s.data, root, TAUGHT_LEVEL), s.questions))
    return out


def taught_answer(own: OracleData) -> Answer:
    """The simulated user's answer with the taught records, as a run gives it."""

    def answer(question: str, taught: OracleData) -> list[str]:
        return [c.record_id for c in taught_match(question, TaughtLevel(own, taught)).chosen]

    return answer


def _figures(t: Tally) -> str:
    pct = lambda a, b: f"{100 * a / b:5.1f}%" if b else "    —"  # noqa: E731
    total = t.answerable + t.unanswerable
    return (f"{pct(t.right, t.answerable)} {pct(t.leaks, total)} "
            f"{pct(t.false_fallback, t.answerable)} {pct(t.correct_fallback, t.unanswerable)}")  # fmt: skip


def compare_taught(sets: list[RecordSet]) -> dict[str, tuple[Tally, Tally]]:
    """The matcher before and after the dev half's false fallbacks are taught, per set and
    overall, on the test half (and on the dev half, which was taught), printed; returned:
    split -> (before, after) overall."""
    with tempfile.TemporaryDirectory(prefix="icae-taught-") as tmp:
        taught = teach_dev_misses(sets, Path(tmp))
    print(f"== taught: {taught.taught} dev-half questions the matcher fell back on, of "
          f"{taught.dev_answerable} answerable, taught to their record and accepted "
          f"({taught.dev_wrong_record} dev misses gave a wrong record: no fallback, so no "
          f"teaching offered)")  # fmt: skip
    cols = f"{'recall':>6} {'leaks':>6} {'f.fall':>6} {'c.fall':>6}"
    overall: dict[str, tuple[Tally, Tally]] = {}
    for split in ("test", "dev"):
        note = "never taught" if split == "test" else "its fallbacks taught"
        print(f"\n{split} half ({note})")
        print(f"{'set':<16} {'n':>4}   before: {cols}   after: {cols}   plain: {cols}")
        before_all, after_all, plain_all = Tally(), Tally(), Tally()

        def row(name: str, before: Tally, after: Tally, plain: Tally) -> str:
            n = before.answerable + before.unanswerable
            return (f"{name:<16} {n:>4}   before: {_figures(before)}   after: {_figures(after)}"
                    f"   plain: {_figures(plain)}")  # fmt: skip

        for old, new in zip(sets, taught.sets, strict=True):
            _, before = measure([old], split, matcher_answer)
            _, after = measure([new], split, taught_answer(old.data))
            _, plain = measure([new], split, matcher_answer)  # taught phrases, no bar
            before_all.merge(before)
            after_all.merge(after)
            plain_all.merge(plain)
            print(row(old.name, before, after, plain))
        print(row("ALL", before_all, after_all, plain_all))
        overall[split] = (before_all, after_all)
    print()
    return overall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", choices=["dev", "test", "all"], default="test")
    p.add_argument("--sets", help="comma-separated set names (default: all)")
    p.add_argument("--show-misses", action="store_true", help="list every question missed")
    p.add_argument("--model", help="measure the model mode with this model")
    p.add_argument("--base-url", help="the model's OpenAI-compatible endpoint")
    p.add_argument("--api-key-env", default="", help="NAME of the variable holding its key")
    p.add_argument("--taught", action="store_true",
                   help="teach the dev half's false fallbacks; the test half before and after")  # fmt: skip
    args = p.parse_args(argv)
    sets = load_sets(args.sets.split(",") if args.sets else None)
    if args.taught:
        if args.model:
            p.error("--taught measures the matcher: not with --model")
        compare_taught(sets)
        return 0
    n = sum(1 for s in sets for q in s.questions if args.split in ("all", q.split))
    print(f"{len(sets)} record sets, {n} questions ({args.split} half)\n")
    contenders: list[tuple[str, Answer]] = [("matcher", matcher_answer)]
    audit = ModelAudit()
    if args.model:
        if not args.base_url:
            p.error("--model needs --base-url")
        contenders = [(f"model {args.model}", model_answer_factory(args, audit))]
    contenders.append(("baseline", baseline_answer))
    for name, answer in contenders:
        rows, overall = measure(sets, args.split, answer)
        print(f"== {name}")
        print(HEADER)
        print("\n".join(rows))
        print(overall.row("ALL"))
        if args.show_misses and name != "baseline":
            print("\n".join(overall.misses))
        print()
    if args.model:
        print(audit.line())
    print(rank_ceiling(sets, args.split))
    print("latency, matcher, " + latency_on_merged(sets, args.split))
    return 1 if audit.outside_candidates or audit.ungrounded else 0


if __name__ == "__main__":
    raise SystemExit(main())
