"""Would sentence embeddings lift the simulated user past lexical matching? A ceiling study.

    pip install sentence-transformers   # not a dependency of icae-tui
    python benchmarks/fidelity_embeddings.py --model-dir DIR [--sets a,b]

DIR is any sentence-transformers model folder (all-MiniLM-L6-v2 was measured; it must be on
disk: no hub is reachable at run time). On the fidelity corpus (`benchmarks/fidelity/`) each
record is embedded from its trigger phrases and its response (a context pointer: its vague
reference and its meaning), the question whole and by sentence; a record scores its best
cosine. Three rankings are compared, per half:
  lexical   — the matcher's own scores (`matching.score_records`), / 100;
  embedding — the cosine above;
  hybrid    — their mean.
For each: the rank ceiling (a right record ranked first, over the answerable questions: no
bar can recall more), then a bar and margin chosen on the dev half as the best recall with
leaks at most `--max-leaks` %, and the recall, leaks and correct fallback they give on the
test half (never tuned on). Nothing here is used by the console; it is the evidence for what
a deterministic matcher can reach on this corpus.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from user_fidelity import Question, load_sets  # noqa: E402

from icae_tui.users.matching import GENERIC_PREFIXES, prepare, score_records  # noqa: E402

BARS = [b / 100 for b in range(30, 92, 2)]
MARGINS = [0.0, 0.02, 0.04, 0.06, 0.08, 0.1]
GENERIC_EXTRA = [0.0, 0.05, 0.1, 0.15]


@dataclass
class Scored:
    question: Question
    rankings: dict[str, dict[str, float]]  # ranking name -> record id -> score in [0, 1]


def question_parts(text: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"(?<=[?.!;])\s+", text) if len(p.strip()) > 3]
    return [text] + (parts if len(parts) > 1 else [])


def score_corpus(model_dir: str, names: list[str] | None) -> list[Scored]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    out = []
    for s in load_sets(names):
        prepare(s.data)
        records = [(r.constraint_id, [*r.trigger_keywords, r.oracle_response])
                   for r in s.data.hidden_constraints]  # fmt: skip
        records += [(f"CP{i:03d}", [p.vague_reference, p.actual_meaning])
                    for i, p in enumerate(s.data.context_pointers, start=1)]  # fmt: skip
        texts = [t for _, ts in records for t in ts]
        vectors = model.encode(texts, normalize_embeddings=True)
        for q in s.questions:
            sims = model.encode(question_parts(q.text), normalize_embeddings=True) @ vectors.T
            embedding, j = {}, 0
            for record_id, ts in records:
                embedding[record_id] = float(sims[:, j : j + len(ts)].max())
                j += len(ts)
            lexical = {c.record_id: c.score / 100 for c in score_records(q.text, s.data)}
            hybrid = {k: (v + lexical.get(k, 0.0)) / 2 for k, v in embedding.items()}
            out.append(Scored(q, {"lexical": lexical, "embedding": embedding, "hybrid": hybrid}))
    return out


def answer(scores: dict[str, float], bar: float, margin: float, generic: float) -> set[str]:
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    if not ranked:
        return set()
    best, top = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    need = bar + (generic if best.startswith(GENERIC_PREFIXES) else 0.0)
    return {best} if top >= need and top - second >= margin else set()


def figures(rows: list[Scored], name: str, setting: tuple[float, float, float]) -> tuple:
    right = leaks = correct = answerable = 0
    for row in rows:
        got = answer(row.rankings[name], *setting)
        leak = bool(got - row.question.expect)
        leaks += leak
        if row.question.expect:
            answerable += 1
            right += bool(got) and not leak
        else:
            correct += not got
    n, unanswerable = len(rows), len(rows) - answerable
    return (100 * right / max(answerable, 1), 100 * leaks / max(n, 1),
            100 * correct / max(unanswerable, 1))  # fmt: skip


def ceiling(rows: list[Scored], name: str) -> float:
    answerable = [r for r in rows if r.question.expect]
    first = sum(max(r.rankings[name].items(), key=lambda kv: kv[1])[0] in r.question.expect
                for r in answerable if r.rankings[name])  # fmt: skip
    return 100 * first / max(len(answerable), 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-dir", required=True, help="a sentence-transformers model folder")
    p.add_argument("--sets", help="comma-separated set names (default: all)")
    p.add_argument("--max-leaks", type=float, default=2.0, help="leak budget on dev, %%")
    args = p.parse_args(argv)
    rows = score_corpus(args.model_dir, args.sets.split(",") if args.sets else None)
    dev = [r for r in rows if r.question.split == "dev"]
    test = [r for r in rows if r.question.split == "test"]
    print(f"{len(dev)} dev and {len(test)} test questions; bar and margin chosen on dev with "
          f"leaks <= {args.max_leaks:g}%, reported on test\n")  # fmt: skip
    print(f"{'ranking':<10} {'ceil dev':>8} {'ceil test':>9}  {'bar':>5} {'margin':>6} "
          f"{'+gen':>5}  {'recall':>6} {'leaks':>6} {'c.fall':>6}")  # fmt: skip
    for name in ("lexical", "embedding", "hybrid"):
        settings = [(b, m, g) for b in BARS for m in MARGINS for g in GENERIC_EXTRA]
        allowed = [s for s in settings if figures(dev, name, s)[1] <= args.max_leaks]
        chosen = max(allowed, key=lambda s: (figures(dev, name, s)[0], -s[0]))
        recall, leaks, correct = figures(test, name, chosen)
        print(f"{name:<10} {ceiling(dev, name):7.1f}% {ceiling(test, name):8.1f}%  "
              f"{chosen[0]:5.2f} {chosen[1]:6.2f} {chosen[2]:5.2f}  "
              f"{recall:5.1f}% {leaks:5.1f}% {correct:5.1f}%")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
