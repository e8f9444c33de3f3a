"""How faithfully the simulated user answers real clarification questions.

    python benchmarks/user_fidelity.py [--split test|dev|all] [--sets a,b] [--show-misses]
    python benchmarks/user_fidelity.py --model NAME --base-url URL [--api-key-env VAR]
    python benchmarks/user_fidelity.py --model local [--user-mode verify,hybrid] [--tune]
                                       [--verify-k 3] [--sample N] [--cache FILE]
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

With `--model`, the model-mode user is measured beside the matcher and the baseline, in the
same run, through the `openai` package against any OpenAI-compatible endpoint (`--base-url`),
or `--model local`: the default `icae models` model, found serving or started and stopped.
`--user-mode` lists the modes (choose: the model picks among the matcher's candidates;
verify: each of the top `--verify-k` candidates checked with a constrained yes/no; hybrid:
the matcher's answer vetoed or confirmed, verify where it fell back), each audited (no
record outside the candidates, none ungrounded). `--tune` first asks every check the dev
half needs once, then picks each mode's bars over a grid on the dev half (within the 2 %
leak goal the most recall, else the fewest leaks) and reports the chosen point on `--split`.
`--cache FILE` keeps every reply (keyed by the request's body; its first latency charged
again), so a run cut off resumes cheaply; `--sample N` takes every Nth question of each
set's split, for a slow model: say so beside its figures.

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
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


SAMPLE = 1  # `--sample N`: every Nth question of a split, in each set (a model's are slow)


def in_split(s: RecordSet, split: str) -> list[Question]:
    """The set's questions of `split`, every SAMPLE-th of them."""
    return [q for q in s.questions if split in ("all", q.split)][::SAMPLE]


def measure(sets: list[RecordSet], split: str, answer: Answer) -> tuple[list[str], Tally]:
    rows, overall = [], Tally()
    for s in sets:
        prepare(s.data)
        tally = Tally()
        for q in in_split(s, split):
            t0 = time.perf_counter()
            given = answer(q.text, s.data)
            ms = (time.perf_counter() - t0) * 1000
            tally.add(q, given, getattr(answer, "last_ms", ms))  # a model's: calls charged
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
        for q in in_split(s, split):
            if q.expect:
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
    the records it may give, and no text beyond the chosen records."""

    answers: int = 0
    outside_candidates: int = 0  # a record it may not give (must stay 0)
    ungrounded: int = 0  # text not verbatim and not a grounded rephrase (must stay 0)
    failures: int = 0  # the endpoint failed: the deterministic answer stood in

    def line(self, name: str) -> str:
        return (f"audit, {name}: {self.answers} answers, {self.outside_candidates} with a "
                f"record it may not give, {self.ungrounded} with text beyond their records, "
                f"{self.failures} endpoint failures")  # fmt: skip


class RecordedChat:
    """The endpoint's replies kept by request (in `path`, when given, one JSON line each),
    so that another mode, another bar or another run asks only what is new; a kept reply is
    charged the latency first measured, so figures do not depend on what was kept."""

    def __init__(self, endpoint: Any, path: Path | None) -> None:
        self.endpoint = endpoint
        self.path = path
        self.replies: dict[str, tuple[dict[str, Any], float]] = {}
        self.asked = self.kept = 0
        self.charged_ms = 0.0  # since the last `take_charge`
        if path is not None and path.is_file():
            for line in path.read_text().splitlines():
                row = json.loads(line)
                self.replies[row["key"]] = (row["reply"], row["ms"])

    @staticmethod
    def key(body: dict[str, Any]) -> str:
        return json.dumps(body, sort_keys=True)

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        key = self.key(body)
        if key in self.replies:
            self.kept += 1
            reply, ms = self.replies[key]
        else:
            self.asked += 1
            t0 = time.perf_counter()
            reply = await self.endpoint.complete(body)
            ms = (time.perf_counter() - t0) * 1000
            self.replies[key] = (reply, ms)
            if self.path is not None:
                with self.path.open("a") as f:
                    f.write(json.dumps({"key": key, "reply": reply, "ms": ms}) + "\n")
        self.charged_ms += ms
        return reply

    def take_charge(self) -> float:
        ms, self.charged_ms = self.charged_ms, 0.0
        return ms


def may_give(config: Any, question: str, data: OracleData) -> dict[str, str]:
    """The records (id → text) a model user in `config.mode` may answer with."""
    from icae_tui.domain.states import UserMode
    from icae_tui.users import matching

    k = config.candidates if config.mode is UserMode.CHOOSE else config.verify_k
    allowed = {c.record_id: c.text for c in matching.candidates(question, data, k=k)}
    if config.mode is UserMode.HYBRID:
        wide = {c.record_id: c.text for c in matching.candidates(question, data, k=50)}
        allowed |= {c.record_id: wide[c.record_id] for c in match(question, data).chosen
                    if c.record_id in wide}  # fmt: skip
    return allowed


class ModelAnswer:
    """A model user's answers, audited; `last_ms` is one answer's latency with its model
    calls charged as first measured."""

    def __init__(self, config: Any, chat: RecordedChat, loop: asyncio.AbstractEventLoop) -> None:
        self.config, self.chat, self.loop = config, chat, loop
        self.audit = ModelAudit()
        self.users: dict[int, Any] = {}
        self.last_ms = 0.0

    def __call__(self, question: str, data: OracleData) -> list[str]:
        from icae_tui.domain.states import AnsweredBy, UserMode
        from icae_tui.users.model_user import ModelUser, grounded_rephrase

        user = self.users.setdefault(id(data), ModelUser(data, self.config, endpoint=self.chat))
        self.chat.take_charge()
        t0 = time.perf_counter()
        reply = self.loop.run_until_complete(user.reply(0, question))
        own_ms = (time.perf_counter() - t0) * 1000
        self.last_ms = own_ms + self.chat.take_charge()
        self.audit.answers += 1
        self.audit.failures += reply.responder is not AnsweredBy.MODEL
        if reply.responder is AnsweredBy.MODEL and reply.record_ids:
            allowed = may_give(self.config, question, data)
            if not set(reply.record_ids) <= set(allowed):
                self.audit.outside_candidates += 1
            texts = [allowed[i] for i in reply.record_ids if i in allowed]
            verbatim = reply.text == "\n\n".join(texts)
            rephrased = self.config.mode is UserMode.CHOOSE and grounded_rephrase(
                reply.text, [c for c in matching_candidates(question, data, self.config)
                             if c.record_id in reply.record_ids])  # fmt: skip
            if not verbatim and not rephrased:
                self.audit.ungrounded += 1
        return list(reply.record_ids)


def matching_candidates(question: str, data: OracleData, config: Any) -> list[Any]:
    from icae_tui.users import matching

    return matching.candidates(question, data, k=config.candidates)


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


VERIFY_GRID = [{"yes_bar": y / 10, "lexical_weight": w}
               for y in range(3, 10) for w in (0.0, 0.5, 1.0, 2.0)]  # fmt: skip
HYBRID_GRID = [{"veto_bar": v, "yes_bar": y / 10, "lexical_weight": w}
               for v in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5) for y in range(5, 10)
               for w in (0.0, 1.0)]  # fmt: skip
LEAK_GOAL = 2.0  # %, the target's


def prefill(sets: list[RecordSet], split: str, config: Any, chat: RecordedChat,
            loop: asyncio.AbstractEventLoop) -> None:  # fmt: skip
    """Every check any point of the grids makes (the top candidates and the matcher's
    answer, each against its question), asked once, so that each point is answered from
    the kept replies."""
    from icae_tui.domain.states import UserMode
    from icae_tui.users.verifier import Verifier

    verifier = Verifier(chat, config.model)
    wide = dataclasses.replace(config, mode=UserMode.HYBRID)
    todo = [(q, s.data) for s in sets for q in in_split(s, split)]
    t0 = time.perf_counter()
    for n, (q, data) in enumerate(todo, start=1):
        for text in may_give(wide, q.text, data).values():
            loop.run_until_complete(verifier.check(q.text, text))
        if n % 25 == 0 or n == len(todo):
            print(f"  checked {n}/{len(todo)} questions: {chat.asked} calls asked, "
                  f"{chat.kept} kept, {time.perf_counter() - t0:.0f} s", file=sys.stderr)  # fmt: skip


def rates(t: Tally) -> tuple[float, float]:
    total = t.answerable + t.unanswerable
    return (100 * t.right / t.answerable if t.answerable else 0.0,
            100 * t.leaks / total if total else 0.0)  # fmt: skip


def better(a: Tally, b: Tally) -> bool:
    """Whether `a` is nearer the target than `b`: within the leak goal, more recall; else
    fewer leaks (then more recall)."""
    (ra, la), (rb, lb) = rates(a), rates(b)
    if (la <= LEAK_GOAL) != (lb <= LEAK_GOAL):
        return la <= LEAK_GOAL
    return ra > rb if la <= LEAK_GOAL else (la, -ra) < (lb, -rb)


def tune(sets: list[RecordSet], config: Any, chat: RecordedChat,
         loop: asyncio.AbstractEventLoop) -> Any:  # fmt: skip
    """The mode's bars with the best figures on the dev half (see `better`), printed with
    the grid's best few."""
    from icae_tui.domain.states import UserMode

    grid = HYBRID_GRID if config.mode is UserMode.HYBRID else VERIFY_GRID
    tried = []
    for point in grid:
        candidate = dataclasses.replace(config, **point)
        _, tally = measure(sets, "dev", ModelAnswer(candidate, chat, loop))
        tried.append((point, tally))
    best = tried[0]
    for t in tried[1:]:
        if better(t[1], best[1]):
            best = t
    ranked = sorted(tried, key=lambda t: (rates(t[1])[1] > LEAK_GOAL, -rates(t[1])[0], rates(t[1])[1]))
    print(f"== tuning {config.mode} on the dev half: {len(grid)} points; the best few")
    print(f"{'point':<48} {'recall':>6} {'leaks':>6} {'f.fall':>6} {'c.fall':>6}")
    for point, tally in ranked[:5]:
        label = " ".join(f"{k}={v:g}" for k, v in point.items())
        mark = "  <- chosen" if point is best[0] else ""
        print(f"{label:<48} {_figures(tally)}{mark}")
    print()
    return dataclasses.replace(config, **best[0])


@contextmanager
def model_endpoint(args: argparse.Namespace, loop: asyncio.AbstractEventLoop) -> Iterator[tuple[str, str, str]]:
    """(model, base_url, key): `--base-url`'s, or an `icae models` model found serving or
    started for the benchmark (and stopped after it)."""
    if args.base_url:
        key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
        yield args.model, args.base_url, key or "not-needed"
        return
    from icae_tui.local_models.catalog import DEFAULT_MODEL
    from icae_tui.local_models.server import SERVERS

    name = DEFAULT_MODEL if args.model == "local" else args.model
    lease = SERVERS.lease(name, owner="benchmarks/user_fidelity.py")
    served = loop.run_until_complete(lease.__aenter__())
    try:
        yield served.model, served.base_url, served.api_key
    finally:
        loop.run_until_complete(lease.__aexit__(None, None, None))


def measure_models(args: argparse.Namespace, sets: list[RecordSet]) -> int:
    """The model user in each `--user-mode` (tuned on the dev half with `--tune`), beside
    the matcher and the baseline, on `--split`."""
    from icae_tui.domain.states import UserMode
    from icae_tui.users.model_user import DirectChat, ModelConfig

    modes = [UserMode(m) for m in args.user_mode.split(",")]
    loop = asyncio.new_event_loop()
    audits: list[tuple[str, ModelAudit]] = []
    with model_endpoint(args, loop) as (model, base_url, key):
        config = ModelConfig(model=model, base_url=base_url, api_key=key, timeout_s=args.timeout,
                             verify_k=args.verify_k)  # fmt: skip
        chat = RecordedChat(DirectChat(config), Path(args.cache) if args.cache else None)
        contenders: list[tuple[str, Answer]] = [("matcher", matcher_answer)]
        if args.tune and set(modes) - {UserMode.CHOOSE}:
            print(f"== asking {model} every check of the dev half once", file=sys.stderr)
            prefill(sets, "dev", config, chat, loop)
        for mode in modes:
            chosen = dataclasses.replace(config, mode=mode)
            if args.tune and mode is not UserMode.CHOOSE:
                chosen = tune(sets, chosen, chat, loop)
            bars = "" if mode is UserMode.CHOOSE else (
                f" (yes {chosen.yes_bar:g}, veto {chosen.veto_bar:g}, lexical "
                f"{chosen.lexical_weight:g}, k {chosen.verify_k})")  # fmt: skip
            answer = ModelAnswer(chosen, chat, loop)
            contenders.append((f"model {model}, {mode}{bars}", answer))
            audits.append((str(mode), answer.audit))
        contenders.append(("baseline", baseline_answer))
        report(sets, args, contenders)
    for name, audit in audits:
        print(audit.line(name))
    print(f"model calls: {chat.asked} asked, {chat.kept} answered from the kept replies"
          f"{f' ({args.cache})' if args.cache else ''}")  # fmt: skip
    print(rank_ceiling(sets, args.split))
    print("latency, matcher, " + latency_on_merged(sets, args.split))
    return 1 if any(a.outside_candidates or a.ungrounded for _, a in audits) else 0


def report(sets: list[RecordSet], args: argparse.Namespace, contenders: list[tuple[str, Answer]]) -> None:
    for name, answer in contenders:
        rows, overall = measure(sets, args.split, answer)
        print(f"== {name}")
        print(HEADER)
        print("\n".join(rows))
        print(overall.row("ALL"))
        if args.show_misses and name != "baseline":
            print("\n".join(overall.misses))
        print()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", choices=["dev", "test", "all"], default="test")
    p.add_argument("--sets", help="comma-separated set names (default: all)")
    p.add_argument("--show-misses", action="store_true", help="list every question missed")
    p.add_argument("--model", help="measure the model user with this model ('local': the "
                   "default `icae models` model, found serving or started)")  # fmt: skip
    p.add_argument("--base-url", help="the model's OpenAI-compatible endpoint (default: a "
                   "local model's server)")  # fmt: skip
    p.add_argument("--api-key-env", default="", help="NAME of the variable holding its key")
    p.add_argument("--user-mode", default="verify,hybrid",
                   help="comma-separated: choose, verify, hybrid (default: verify,hybrid)")  # fmt: skip
    p.add_argument("--tune", action="store_true",
                   help="choose verify's and hybrid's bars on the dev half first")  # fmt: skip
    p.add_argument("--verify-k", type=int, default=3, help="candidates verified per question")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per model call")
    p.add_argument("--cache", help="keep the model's replies in this file (JSON lines), for "
                   "the next run")  # fmt: skip
    p.add_argument("--taught", action="store_true",
                   help="teach the dev half's false fallbacks; the test half before and after")  # fmt: skip
    p.add_argument("--sample", type=int, default=1,
                   help="every Nth question of each set's split (a local model is slow)")  # fmt: skip
    args = p.parse_args(argv)
    global SAMPLE
    SAMPLE = max(1, args.sample)
    sets = load_sets(args.sets.split(",") if args.sets else None)
    if args.taught:
        if args.model:
            p.error("--taught measures the matcher: not with --model")
        compare_taught(sets)
        return 0
    n = sum(len(in_split(s, args.split)) for s in sets)
    every = f", every {SAMPLE}th" if SAMPLE > 1 else ""
    print(f"{len(sets)} record sets, {n} questions ({args.split} half{every})\n")
    if args.model:
        return measure_models(args, sets)
    report(sets, args, [("matcher", matcher_answer), ("baseline", baseline_answer)])
    print(rank_ceiling(sets, args.split))
    print("latency, matcher, " + latency_on_merged(sets, args.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
