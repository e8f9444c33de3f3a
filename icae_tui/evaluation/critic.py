"""An optional model critic: the delivery's sources read beside the oracle's.

Asked once per run, after the cases, through the run's gateway (role `judge`: recorded in
`model_calls.jsonl`, limited, replayed by `--model-replay`), temperature 0, never without a
configured endpoint (or a recording). It gives three scores in [0, 1], each with a one-line
rationale:

- `semantic_similarity`: does the delivery do what the oracle does;
- `api_similarity`: does it offer the oracle's interface (the golden API signature);
- `design_quality`: is it well made (structure, clarity, error handling).

What it is shown: the golden signature, then the oracle's and the delivery's source files,
each file cut at FILE_CAP characters and each side at SIDE_CAP (said in the prompt). A
failed critic (the endpoint down, an answer without the three scores) is reported with its
reason (`CriticScores.error`), never taken as zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from icae_tui.domain.diagnostics import CriticScore, CriticScores
from icae_tui.evaluation.model_reply import reply_object

PROMPT_VERSION = "critic-1"  # in the system prompt: how a replay tells the critic's calls apart
FILE_CAP = 12_000
SIDE_CAP = 40_000
AXES = ("semantic_similarity", "api_similarity", "design_quality")
SYSTEM = (
    f"[{PROMPT_VERSION}] You review a delivered program against a reference implementation "
    "of the same command-line tool. Answer with one JSON object and nothing else: "
    '{"semantic_similarity": {"score": 0..1, "rationale": "<one sentence>"}, '
    '"api_similarity": {"score": 0..1, "rationale": "..."}, '
    '"design_quality": {"score": 0..1, "rationale": "..."}}. '
    "semantic_similarity: how far the delivery does what the reference does. "
    "api_similarity: how far it offers the reference's interface (the golden API signature: "
    "entry point, commands, options, functions). design_quality: how well it is made "
    "(structure, clarity, error handling), whatever the reference looks like."
)


class Chat(Protocol):
    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...


def _side(files: Mapping[str, str]) -> str:
    parts: list[str] = []
    used = 0
    for path, text in sorted(files.items()):
        shown = text if len(text) <= FILE_CAP else (
            text[:FILE_CAP] + f"\n[… {len(text) - FILE_CAP} more characters not shown]"
        )  # fmt: skip
        block = f"=== {path} ===\n{shown}\n"
        if used + len(block) > SIDE_CAP:
            parts.append(f"[… {len(files) - len(parts)} more file(s) not shown]\n")
            break
        parts.append(block)
        used += len(block)
    return "".join(parts) or "(no source files)\n"


def question(
    signature: str, oracle: Mapping[str, str], delivery: Mapping[str, str]
) -> list[dict[str, str]]:
    user = (
        f"Golden API signature: {signature or '(none given)'}\n\n"
        f"--- reference implementation ---\n{_side(oracle)}"
        f"--- delivery to review ---\n{_side(delivery)}--- end ---"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]




def _axis(value: Any) -> CriticScore | None:
    if isinstance(value, dict):
        score, why = value.get("score"), value.get("rationale", "")
    else:
        score, why = value, ""
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        return None
    return CriticScore(score=round(float(score), 4), rationale=str(why)[:300])


def scores_of(reply: dict[str, Any]) -> dict[str, CriticScore] | None:
    """The three scores from a Chat Completions reply, or None when one is missing."""
    data = reply_object(reply)
    if data is None:
        return None
    out = {axis: _axis(data.get(axis)) for axis in AXES}
    if any(v is None for v in out.values()):
        return None
    return {k: v for k, v in out.items() if v is not None}


async def critique(
    chat: Chat, model: str, signature: str, oracle: Mapping[str, str],
    delivery: Mapping[str, str],
) -> CriticScores:  # fmt: skip
    body = {"model": model, "temperature": 0, "messages": question(signature, oracle, delivery)}
    try:
        reply = await chat.complete(body)
    except Exception as err:  # the endpoint's failure: reported, not zeroed
        return CriticScores(model=model, error=f"{type(err).__name__}: {err}"[:300])
    found = scores_of(reply)
    named = str(reply.get("model") or model)
    if found is None:
        return CriticScores(model=named, error="the critic's answer held no three scores")
    return CriticScores(
        model=named, semantic_similarity=found["semantic_similarity"],
        api_similarity=found["api_similarity"], design_quality=found["design_quality"],
    )  # fmt: skip
