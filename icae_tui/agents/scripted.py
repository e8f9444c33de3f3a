"""The scripted agent: plays a solution YAML step by step, deterministically."""

from __future__ import annotations

import asyncio
from pathlib import Path

from icae_tui.agents.base import AgentContext, AgentError, AgentNeeds, Limits
from icae_tui.catalog.loader import TaskError, load_solution, solution_path
from icae_tui.domain.solution import Ask, RunCommand, Say, Solution, Submit, Write
from icae_tui.domain.task import Task


class ScriptedAgent:
    def __init__(self, name: str, solution: Solution, *, pace_s: float | None = None) -> None:
        self.name = name
        self.solution = solution
        self.pace_s = solution.pace_s if pace_s is None else pace_s
        self.limits = Limits()
        self.needs = AgentNeeds()  # no model, no image of its own, paused between steps

    @classmethod
    def for_task(
        cls, task: Task, solution_name: str, *, pace_s: float | None = None
    ) -> ScriptedAgent:
        path = solution_path(Path(task.root), solution_name)
        if path is None:
            known = ", ".join(task.solutions) or "none"
            raise AgentError(
                f"scripted:{solution_name}: no such solution "
                f"{task.root}/solutions/{solution_name}.yaml for task {task.id} "
                f"(solutions are file names in that folder; known: {known})"
            )
        try:
            solution = load_solution(path)
        except TaskError as err:
            raise AgentError(str(err)) from None
        return cls(f"scripted:{solution_name}", solution, pace_s=pace_s)

    async def build(self, prd: str, ctx: AgentContext) -> str:
        final = "done"
        for step in self.solution.steps:
            await ctx.step()
            if self.pace_s:
                await asyncio.sleep(self.pace_s)
            match step:
                case Say(say=text):
                    await ctx.say(text)
                case Ask(ask=question):
                    await ctx.ask(question)
                case Write(write=w):
                    path = w.path if w.path.startswith("/") else f"{ctx.workspace}/{w.path}"
                    await ctx.write(path, w.content, w.mode)
                case RunCommand(run=command, timeout_s=timeout):
                    await ctx.run(command, timeout)
                case Submit(submit=message):
                    final = message
                    break
        return final
