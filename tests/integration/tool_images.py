"""Shared by the hostile engine tests: a command task whose cases run `tool …`, and a pair of
images (oracle, delivery) made from the base image with each side's own files."""

from __future__ import annotations

from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.differential import Sides
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


async def build_tool_images(tag: str, files: dict[str, dict[str, str]]) -> Sides:
    """`files`: role (oracle, delivery) → path → text, each written executable."""
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
                await c.commit(f"icae-test-{role}", tag, {"icae.tool": "icae-tui"})
            finally:
                await c.remove()
            names[role] = f"icae-test-{role}:{tag}"
    finally:
        await docker.close()
    return Sides(oracle_image=names["oracle"], delivery_image=names["delivery"])
