"""Replies constrained by the server to one well-formed action (opt-in: `constrain_reply`).

Two ways, for the servers that have them, both sent as extra keys of the request body (what
the openai package's `extra_body` does):
- `gbnf`: llama.cpp's `grammar` field. The reply is at most one line of thought, then
  exactly one action: a ```bash block (a heredoc in it is `<<'EOF'` … a line `EOF`, so
  it cannot be left open), an `ASK:` line or a `SUBMIT:` line, and nothing after it.
- `json_schema`: OpenAI's `response_format` (also llama.cpp, vLLM, Ollama): the reply is
  `{"thought": …, "action": "bash" | "ask" | "submit", "input": …}`.
Either way the request carries no `tools` (servers refuse tools beside a grammar), and the
reply is read by `replies.read_reply` like any other.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ReplyConstraint(StrEnum):
    GBNF = "gbnf"  # llama.cpp's `grammar`
    JSON_SCHEMA = "json_schema"  # OpenAI's `response_format`


# Not recursive, so regular: a heredoc's body lines are any line but `EOF` that starts with
# no backtick (else a model closes the fence inside an open heredoc, and then writes blank
# lines forever: seen with Qwen2.5-Coder-1.5B); a plain command line holds no `<<` (a heredoc
# line opens one), and no line of the block starts with a backtick, so only the closing
# fence ends it.
GBNF = r"""root ::= (note "\n")? action
note ::= [^`\n] [^\n]*
action ::= bash | ask | submit
ask ::= "ASK: " [^\n]+ "\n"?
submit ::= "SUBMIT: " [^\n]+ "\n"?
bash ::= "```bash\n" line+ "```"
line ::= heredoc | plain
plain ::= (pfirst pchar*)? "\n"
pfirst ::= [^`<\n] | "<" [^<\n]
pchar ::= [^<\n] | "<" [^<\n]
heredoc ::= hchar+ "<<" "-"? ("'EOF'" | "\"EOF\"" | "EOF") pchar* "\n" body* "EOF\n"
hchar ::= [^`<\n] | "<" [^<`\n]
body ::= ([^E`\n] [^\n]* | "E" ([^O\n] [^\n]*)? | "EO" ([^F\n] [^\n]*)? | "EOF" [^\n]+)? "\n"
"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "action": {"type": "string", "enum": ["bash", "ask", "submit"]},
        "input": {"type": "string"},
    },
    "required": ["thought", "action", "input"],
    "additionalProperties": False,
}


# Once the model asks again what it asked before, questions are closed: the reply must act.
GBNF_NO_ASK = "".join(
    line.replace(" | ask", "")
    for line in GBNF.splitlines(keepends=True)
    if not line.startswith("ask ::=")
)
SCHEMA_NO_ASK: dict[str, Any] = {
    **SCHEMA,
    "properties": {**SCHEMA["properties"], "action": {"type": "string", "enum": ["bash", "submit"]}},
}


def extra_body(constraint: ReplyConstraint, may_ask: bool = True) -> dict[str, Any]:
    """The request keys that constrain the reply (with no `ASK:` once questions are closed)."""
    if constraint is ReplyConstraint.GBNF:
        return {"grammar": GBNF if may_ask else GBNF_NO_ASK}
    schema = SCHEMA if may_ask else SCHEMA_NO_ASK
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "action", "strict": True, "schema": schema},
        }
    }


REPLY_TEMPLATES = {
    None: "reply-tools.md",
    ReplyConstraint.GBNF: "reply-text.md",
    ReplyConstraint.JSON_SCHEMA: "reply-json.md",
}
