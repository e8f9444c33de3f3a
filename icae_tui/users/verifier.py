"""One candidate record checked against a question by a model: a small job a small model
does well (a 1.5B model, asked to choose among several records, cites one for nearly every
question, answerable or not, and writes hundreds of tokens doing it).

The model sees the question and one record's text, and must reply with JSON naming the part
of the question the record answers and a yes/no; the server is asked to enforce that shape
(`response_format` with a JSON schema), and asked again without it if it refuses the field
(HTTP 400). A yes counts only when the part it names is words of the question: a yes with
no part, or a part the question does not hold, is unsure — and unsure is no. Where the
server gives log-probabilities (llama.cpp, OpenAI), the verdict carries how sure the model
was (`p_yes`: true against false at the answer's token), which the user weighs with the
matcher's score; else a yes is 1 and a no 0. The model's words never reach the agent: only
the verdict is used, the answer is the records verbatim.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

# Four made-up examples (no task's records): without them a 1.5B model says yes to a record
# on the same feature as often as to one that answers (dev half: a yes at p >= 0.7 to 28 of
# 51 right and 28 of 70 wrong candidates; with them, 45 and 36; at p >= 0.9, 33 and 16).
VERIFY_PROMPT = """You check ONE requirement record against a developer's question. The record answers the
question only if it states what the question asks: the behaviour, value or rule asked about.
A record on the same feature that does not settle what is asked does NOT answer it.

Question: What should the tool print when the input file is empty?
Record: An empty input file prints "no rows" and exits 0.
{"part": "when the input file is empty", "answers": true}

Question: What should the tool print when the input file is empty?
Record: Input files are read as UTF-8; a file that is not valid UTF-8 is an error (exit 2).
{"part": "", "answers": false}

Question: Should the output be sorted, and should it include a header line?
Record: Rows are printed in input order.
{"part": "Should the output be sorted", "answers": true}

Question: How many retries should a failed upload get?
Record: Uploads larger than 10 MB are refused with a clear message.
{"part": "", "answers": false}

Reply with JSON only, as above."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "part": {"type": "string", "maxLength": 160},
        "answers": {"type": "boolean"},
    },
    "required": ["part", "answers"],
    "additionalProperties": False,
}
MAX_TOKENS = 80  # the JSON above and nothing else
PART_OVERLAP = 0.5  # of the part's words, at least this share must be the question's

_WORD = re.compile(r"[a-z0-9]+")


class Verdict(StrEnum):
    YES = "yes"  # answers, and the part named is the question's
    NO = "no"
    UNSURE = "unsure"  # unparseable, or a yes whose part is not the question's


class ChatClient(Protocol):
    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Check:
    verdict: Verdict
    part: str = ""
    p_yes: float = 0.0  # how sure of a yes: the log-probabilities', else 1 for a yes

    @property
    def confirmed(self) -> bool:
        return self.verdict is Verdict.YES


def request(model: str, question: str, record_text: str, *, constrained: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
        "messages": [
            {"role": "system", "content": VERIFY_PROMPT},
            # the question first: checks of one question's records share a prompt prefix,
            # which a server's prompt cache (llama.cpp's) then does not evaluate again
            {"role": "user", "content": f"Question: {question}\n\nRecord: {record_text}"},
        ],
    }
    if constrained:  # the shape, and how sure it was; a server refusing either: neither
        body["logprobs"], body["top_logprobs"] = True, 5
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA},
        }
    return body


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def grounded_part(part: str, question: str) -> bool:
    said = _words(part)
    if not said:
        return False
    asked = set(_words(question))
    return sum(w in asked for w in said) >= PART_OVERLAP * len(said)


def p_yes(logprobs: Any) -> float | None:
    """P(true) against P(false) at the token that says which (the first that is either),
    from the choice's `logprobs.content`; None when the server gave none. Spellings of one
    word (" true", "true") add up: each is a way of saying it."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    for token in content if isinstance(content, list) else []:
        if not isinstance(token, dict) or str(token.get("token", "")).strip() not in ("true", "false"):
            continue
        offered = [t for t in token.get("top_logprobs") or [] if isinstance(t, dict)] or [token]
        weight = {"true": 0.0, "false": 0.0}
        for t in offered:
            word, logprob = str(t.get("token", "")).strip(), t.get("logprob")
            if word in weight and isinstance(logprob, int | float):
                weight[word] += math.exp(logprob)
        total = weight["true"] + weight["false"]
        return weight["true"] / total if total else None
    return None


def judge(content: str, question: str, logprobs: Any = None) -> Check:
    """The model's reply as a verdict (see the module's rule for a yes)."""
    start, end = content.find("{"), content.rfind("}")
    try:
        data = json.loads(content[start : end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("answers"), bool):
        return Check(Verdict.UNSURE)
    said = data.get("part")
    part = said if isinstance(said, str) else ""
    sure = p_yes(logprobs)
    if sure is None:
        sure = 1.0 if data["answers"] else 0.0
    if not data["answers"]:
        return Check(Verdict.NO, part, sure)
    if not grounded_part(part, question):
        return Check(Verdict.UNSURE, part, 0.0)
    return Check(Verdict.YES, part, sure)


def refused_field(err: Exception) -> bool:
    """An HTTP 400 — from the openai package or the run's gateway — which a server that does
    not know `response_format` answers."""
    return 400 in (getattr(err, "status_code", None), getattr(err, "status", None))


class Verifier:
    """Asks `endpoint` about one record at a time; remembers a refusal of the constrained
    shape so that each later call goes unconstrained at once."""

    def __init__(self, endpoint: ChatClient, model: str) -> None:
        self.endpoint = endpoint
        self.model = model
        self.constrained = True

    async def check(self, question: str, record_text: str) -> Check:
        body = request(self.model, question, record_text, constrained=self.constrained)
        try:
            completion = await self.endpoint.complete(body)
        except Exception as err:
            if not (self.constrained and refused_field(err)):
                raise
            self.constrained = False
            body = request(self.model, question, record_text, constrained=False)
            completion = await self.endpoint.complete(body)
        choice = completion["choices"][0]
        return judge(choice["message"]["content"] or "", question, choice.get("logprobs"))
