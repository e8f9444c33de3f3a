"""Reading a text reply of the model agent into actions, pure.

Small models do not keep to "one action per reply": they write a command and a question in
the same reply, several shell blocks, heredocs left open, tool calls as JSON text. So a reply
is read whole, in order, into every action it holds (a ```bash block, an `ASK:` line, a
`SUBMIT:` line, a tool call written as JSON) and the problems found on the way (a fence never
closed, a heredoc never ended, a tool that does not exist), each a short sentence the model is
shown. What is done with them is the loop's (`model_agent`): it takes the actions in order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ActionKind(StrEnum):
    RUN = "run"  # a shell command
    ASK = "ask"  # a clarification question
    SUBMIT = "submit"  # done, with a summary


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    text: str  # the command, the question or the summary
    as_json: bool = False  # written as a JSON tool call in the text


@dataclass
class Reading:
    actions: list[Action] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each told to the model
    other_blocks: list[str] = field(default_factory=list)  # languages of fences not run


SHELL_LANGS = frozenset({"", "bash", "sh", "shell", "console", "zsh"})
TOOL_NAMES = "bash, ask_user, submit"
_OPEN_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.#-]*)[^\n`]*$", re.MULTILINE)
# A question may end a line of prose ("I need to know. ASK: …"): none is missed. A submit
# must start its line (bullets and bold allowed), or prose about submitting would submit.
_ASK = re.compile(r"(?:^|(?<=\s))[*_`]*ASK:[*_`]*[ \t]*(.*)$", re.MULTILINE)
_SUBMIT = re.compile(r"^[ \t*_>-]*SUBMIT:[*_]*[ \t]*(.*)$", re.MULTILINE)
# `<<WORD`, `<<'WORD'`, `<<"WORD"`, `<<-WORD`; not `<<<` (a here-string)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_RUN_NAMES = {"bash": "command", "shell": "command", "run": "command", "execute": "command"}
_ASK_NAMES = {"ask_user": "question", "ask": "question"}
_SUBMIT_NAMES = {"submit": "message", "finish": "message"}


def open_heredoc(command: str) -> str | None:
    """The first heredoc of `command` with no line ending it (`<<'EOF'` with no `EOF`
    line after it), as written; None when every heredoc is closed."""
    pending: list[tuple[str, str, bool]] = []  # (as written, word, strip leading tabs)
    for line in command.split("\n"):
        if pending:
            _, word, strip = pending[0]
            if (line.lstrip("\t") if strip else line).rstrip() == word:
                pending.pop(0)
            continue
        for m in _HEREDOC.finditer(line):
            pending.append((m.group(0), m.group(3), m.group(1) == "-"))
    return pending[0][0] if pending else None


def check_command(command: str) -> str | None:
    """Why `command` is not run as sent, or None."""
    if not command.strip():
        return "the shell block is empty"
    if (opened := open_heredoc(command)) is not None:
        word = _HEREDOC.match(opened[opened.index("<<") :])
        end = word.group(3) if word else "EOF"
        line = next(x for x in command.split("\n") if opened in x).strip()
        where = "" if line == opened else f" (in `{line[:80]}`)"
        return (
            f"the heredoc `{opened}`{where} is never closed: a line holding only `{end}` "
            "must end it, before the block's closing ```; the block was not run"
        )
    return None


def read_reply(text: str) -> Reading:
    """Every action of a text reply, in the order written, and the problems found."""
    out = Reading()
    found: list[tuple[int, Action]] = []
    prose: list[tuple[int, str]] = []  # (offset, text) outside fences
    pos = 0
    while (m := _OPEN_FENCE.search(text, pos)) is not None:
        prose.append((pos, text[pos : m.start()]))
        lang = m.group(1).lower()
        body_start = m.end() + 1
        close = text.find("```", body_start)
        if close < 0:
            body = text[body_start:]
            if lang in SHELL_LANGS:
                out.problems.append(
                    f"the ```{lang} block has no closing ``` (was the reply cut short?); "
                    "it was not run"
                )
            elif lang == "json":
                _json_calls(body, m.start(), found, out)
            else:
                out.other_blocks.append(lang)
            pos = len(text)
            break
        body = text[body_start:close] if body_start <= close else ""
        if lang in SHELL_LANGS:
            command = body.strip("\n")
            if (why := check_command(command)) is not None:
                out.problems.append(why)
            else:
                found.append((m.start(), Action(ActionKind.RUN, command)))
        elif lang == "json":
            _json_calls(body, m.start(), found, out)
        else:
            out.other_blocks.append(lang)
        pos = close + 3
    prose.append((pos, text[pos:]))
    for offset, part in prose:
        for m in _ASK.finditer(part):
            if question := m.group(1).strip().strip("*_`").strip():
                found.append((offset + m.start(), Action(ActionKind.ASK, question)))
        for m in _SUBMIT.finditer(part):
            summary = m.group(1).strip().strip("*_").strip() or "done"
            found.append((offset + m.start(), Action(ActionKind.SUBMIT, summary)))
        _json_calls(part, offset, found, out)
    out.actions = [a for _, a in sorted(found, key=lambda p: p[0])]
    return out


def _json_calls(part: str, offset: int, found: list[tuple[int, Action]], out: Reading) -> None:
    """Tool calls written as JSON objects in the text (`{"name": "bash", "arguments": …}`,
    the json_schema reply `{"action": "bash", "input": …}`), wherever they start."""
    decoder = json.JSONDecoder()
    i = part.find("{")
    while i >= 0:
        try:
            obj, end = decoder.raw_decode(part, i)
        except ValueError:
            i = part.find("{", i + 1)
            continue
        if isinstance(obj, dict) and (action := _json_action(obj, out)) is not None:
            found.append((offset + i, action))
        i = part.find("{", end)


def _json_action(obj: dict[str, Any], out: Reading) -> Action | None:
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        obj = obj["function"]
    args: Any
    if isinstance(obj.get("action"), str) and "input" in obj:  # the json_schema reply
        name, args = obj["action"], {"command": obj["input"], "question": obj["input"],
                                     "message": obj["input"]}  # fmt: skip
    elif isinstance(obj.get("name"), str) and ("arguments" in obj or "parameters" in obj):
        name, args = obj["name"], obj.get("arguments", obj.get("parameters"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = None
    else:
        return None  # JSON that is no tool call: left alone
    name = name.strip().lower()
    for names, kind in ((_RUN_NAMES, ActionKind.RUN), (_ASK_NAMES, ActionKind.ASK),
                        (_SUBMIT_NAMES, ActionKind.SUBMIT)):  # fmt: skip
        if name in names:
            value = args.get(names[name]) if isinstance(args, dict) else None
            if kind is ActionKind.SUBMIT:
                return Action(kind, str(value or "done"), as_json=True)
            if not isinstance(value, str) or not value.strip():
                out.problems.append(
                    f"the tool call {name!r} written as JSON has no {names[name]!r} string"
                )
                return None
            if kind is ActionKind.RUN and (why := check_command(value)) is not None:
                out.problems.append(why)
                return None
            return Action(kind, value.strip() if kind is ActionKind.ASK else value, True)
    out.problems.append(f"the tool call {name!r} written as JSON names no tool ({TOOL_NAMES})")
    return None
