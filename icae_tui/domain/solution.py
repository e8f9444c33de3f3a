"""Scripted agent solutions (`tasks/<id>/solutions/*.yaml`): a deterministic agent run.

Each step is a one-key mapping:
  - say: "text"                      the agent narrates (trace only)
  - ask: "question"                  a clarification question to the responder
  - write: {path: rel/or/abs, content: "..."}   a file in the workspace
  - run: "shell command"             runs in the agent container (cwd = workspace)
  - submit: "final message"          ends the generation phase
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Say(_Step):
    say: str


class Ask(_Step):
    ask: str


class WriteFile(_Step):
    path: str
    content: str
    mode: int = 0o644


class Write(_Step):
    write: WriteFile


class RunCommand(_Step):
    run: str
    timeout_s: float = Field(default=60.0, gt=0, le=3600)


class Submit(_Step):
    submit: str = "done"


Step = Annotated[Say | Ask | Write | RunCommand | Submit, Field(union_mode="left_to_right")]


class Solution(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    pace_s: float = Field(default=0.0, ge=0, le=10)
    steps: list[Step] = Field(min_length=1)
