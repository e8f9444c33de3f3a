"""Shared by the hostile engine tests: a command task whose cases run `tool …`, a pair of
images (oracle, delivery) made from the base image with each side's own files, and the task's
cases judged against them.

A module declares its images as `IMAGES = ToolImages(tag, oracle_tool, delivery_tool)`; the
`images` fixture (tests/integration/conftest.py) builds them once for the module."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

from aiodocker.exceptions import DockerError

from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.differential import Evaluator, Sides
from icae_tui.sandbox.base import CasePath
from icae_tui.sandbox.docker.backend import DockerSandbox
from icae_tui.sandbox.docker.containers import create_container
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import BASE_IMAGE, ensure_base_image

TOOL = "/usr/local/bin/tool"


def command_task(task_id: str, cases: list[Case], *, timeout_s: float) -> Task:
    spec = TaskSpec.model_validate(
        {
            "id": task_id,
            "title": task_id,
            "language": "sh",
            "interface": {"kind": "command", "tool": "tool"},
            "oracle": {"entry": "/opt/tool"},
            "delivery": {"entry": "/opt/tool", "build": "true"},
            "cases": {"timeout_s": timeout_s},
        }
    )
    refs = [
        CaseRef(split=Split.HIDDEN, stem="h", index=i, case=c, pattern=c.pattern or "p")
        for i, c in enumerate(cases)
    ]
    return Task(spec=spec, root="/nonexistent", prd={}, user_agent={}, cases=refs)


@dataclass(frozen=True)
class ToolImages:
    """A module's tool images: each side's `tool` script (at TOOL), more delivery files (path
    → text), and the tag that names them (icae-test-oracle:TAG-tPID, icae-test-delivery:TAG-tPID)."""

    tag: str
    oracle: str
    delivery: str
    delivery_files: dict[str, str] = field(default_factory=dict)

    def files(self) -> dict[str, dict[str, str]]:
        delivery = {TOOL: self.delivery, **self.delivery_files}
        return {"oracle": {TOOL: self.oracle}, "delivery": delivery}


async def build_tool_images(
    tag: str, files: dict[str, dict[str, str]], scripts: dict[str, str] | None = None
) -> Sides:
    """`files`: role (oracle, delivery) → path → text, each written executable; `scripts`: role
    → a shell script run in the image after (it must succeed). The images are this process's
    own (`-t<pid>` ends their tag: another worker, another run of the suite have theirs);
    `remove_tool_images` removes them."""
    tag = own_tag(tag)
    docker = await connect()
    try:
        await ensure_base_image(docker)
        names = {}
        for role, contents in files.items():
            c = await create_container(
                docker, BASE_IMAGE, run_id="test-images", role="build", hardened=False
            )
            try:
                await c.put_files({p: t.encode() for p, t in contents.items()}, mode=0o755)
                await c.exec("mkdir -p /data")
                if scripts and role in scripts:
                    res = await c.exec(scripts[role])
                    assert res.exit_code == 0, res.stderr
                await c.commit(f"icae-test-{role}", tag, {"icae.tool": "icae-tui"})
            finally:
                await c.remove()
            names[role] = f"icae-test-{role}:{tag}"
    finally:
        await docker.close()
    return Sides(oracle_image=names["oracle"], delivery_image=names["delivery"])


def own_tag(tag: str) -> str:
    """A tag of this test process's own: tests/isolation.py finds what is left by it."""
    return f"{tag}-t{os.getpid()}"


async def remove_tool_images(sides: Sides) -> None:
    docker = await connect()
    try:
        for name in (sides.oracle_image, sides.delivery_image):
            with contextlib.suppress(DockerError):
                await docker.images.delete(name, force=True)
    finally:
        await docker.close()


async def evaluate(
    task: Task,
    sides: Sides,
    *,
    run_id: str,
    concurrency: int = 1,
    path: CasePath = CasePath.SUPERVISED,
) -> dict[str, CaseResult]:
    """Every case of `task` judged against `sides` on the real engine: the results by case id,
    in the order they finished."""
    sandbox = await DockerSandbox.open()
    try:
        async with Evaluator(
            sandbox, task, sides, run_id=run_id, concurrency=concurrency, path=path
        ) as ev:
            return {r.case_id: r async for r in ev.run_cases(task.cases)}
    finally:
        await sandbox.close()
