"""Issue 38 (CLI-Tool-Bench items 1 and 3) on the real engine: a task of an imported tool's
shape (its cases in /test_data, `[cases] compare_roots`, `stderr = "merge"`,
`oracle_at_delivery_path`), whose oracle is a Python package with a launcher that makes its
bundled binary executable on every run (it was installed `rw-r--r--`) and crashes with a
traceback on one case. The real program as the delivery scores 100 %: the chmod is outside
what is compared, and the traceback names `/workspace/tool` on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from icae_tui.domain.results import Verdict
from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.base import wrapper_script
from icae_tui.sandbox.docker.containers import create_container
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import ensure_task_images
from tests.integration.tool_images import evaluate, own_tag, remove_tool_images

pytestmark = pytest.mark.docker

SITE = "$(python3 -c 'import sysconfig; print(sysconfig.get_path(\"purelib\"))')"
CLI = """\
import os, stat, subprocess, sys
from pathlib import Path

BIN = Path(__file__).parent / "bin" / "tool-bin"


def main() -> int:
    # what the real tool does: make its bundled binary executable, every run
    BIN.chmod(BIN.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    cmd, *rest = sys.argv[1:] or ["hello"]
    if cmd == "write":
        Path(rest[0]).write_text("written\\n")
        return 0
    if cmd == "err":
        print("error: bad input", file=sys.stderr)
        return 2
    if cmd == "crash":
        return {}["missing"]
    return subprocess.run([str(BIN), cmd, *rest]).returncode
"""
LAUNCHER = "#!/usr/bin/python3\nimport sys\nfrom tooldemo.cli import main\nsys.exit(main())\n"
BUNDLED = '#!/bin/sh\necho "bin: $*"\n'
INSTALL = f'cp -a /opt/oracle/tooldemo "{SITE}/" && chmod 644 "{SITE}/tooldemo/bin/tool-bin"'
DELIVER = (
    f'cp -a /tmp/src/tooldemo "{SITE}/" && chmod 755 "{SITE}/tooldemo/bin/tool-bin" '
    "&& install -m 755 /tmp/src/launcher /workspace/tool && rm -rf /tmp/src"
)


def _task(root: Path) -> Task:
    oracle = root / "oracle" / "tooldemo"
    (oracle / "bin").mkdir(parents=True)
    (oracle / "__init__.py").write_text("")
    (oracle / "cli.py").write_text(CLI)
    (oracle / "bin" / "tool-bin").write_text(BUNDLED)
    (root / "oracle" / "launcher").write_text(LAUNCHER)
    spec = TaskSpec.model_validate({
        "id": "scope-demo", "title": "scope-demo", "language": "python",
        "image": {"runtime": "none"},
        "interface": {"kind": "command", "tool": "tool"},
        "oracle": {"entry": "/opt/icae-oracle-bin/tool", "install": [
            INSTALL, "mkdir -p /opt/icae-oracle-bin && "
            "install -m 755 /opt/oracle/launcher /opt/icae-oracle-bin/tool"]},
        "delivery": {"entry": "/workspace/tool", "build": "test -x /workspace/tool"},
        "cases": {"timeout_s": 20, "workdir": "/test_data", "compare_roots": ["/test_data"],
                  "stderr": "merge", "oracle_at_delivery_path": True},
    })  # fmt: skip
    commands = ["tool hello there", "tool write out.txt", "tool err", "tool crash"]
    refs = [CaseRef(split=Split.HIDDEN, stem="h", index=i, case=Case(command=c), pattern=c)
            for i, c in enumerate(commands)]  # fmt: skip
    return Task(spec=spec, root=str(root), prd={}, user_agent={}, cases=refs)


async def _delivery(agent: str, task: Task) -> str:
    """The real program delivered as an agent would: its package installed in the box (its
    binary left executable by pip, as a wheel's scripts are), its launcher the tool."""
    docker = await connect()
    try:
        c = await create_container(
            docker, agent, run_id="test-images", role="build", hardened=False
        )
        try:
            root = Path(task.root) / "oracle"
            files = {f"/tmp/src/{p.relative_to(root)}": p.read_bytes()
                     for p in root.rglob("*") if p.is_file()}  # fmt: skip
            await c.put_files(files)
            await c.put_files(
                {"/usr/local/bin/tool": wrapper_script("/workspace/tool")}, mode=0o755
            )
            res = await c.exec(DELIVER)
            assert res.exit_code == 0, res.stderr
            await c.commit("icae-test-delivery", own_tag("scope-demo"), {"icae.tool": "icae-tui"})
        finally:
            await c.remove()
    finally:
        await docker.close()
    return f"icae-test-delivery:{own_tag('scope-demo')}"


async def test_the_real_program_as_the_delivery_scores_every_case(tmp_path: Path) -> None:
    task = _task(tmp_path / "task")
    docker = await connect()
    try:
        images = await ensure_task_images(docker, task)
    finally:
        await docker.close()
    delivery = await _delivery(images.agent, task)
    sides = Sides(oracle_image=images.oracle, delivery_image=delivery)
    try:
        results = await evaluate(task, sides, run_id="scope-demo", concurrency=2)
    finally:
        await remove_tool_images(Sides(oracle_image=delivery, delivery_image=delivery))
    by_command = {r.command: r for r in results.values()}
    assert {c: (r.verdict, r.reason) for c, r in by_command.items()} == {
        c: (Verdict.ACCEPTED, "identical") for c in by_command
    }
    crash = by_command["tool crash"]
    assert crash.oracle is not None and crash.delivery is not None
    assert 'File "/workspace/tool"' in crash.oracle.stderr  # run from the delivery's path
    assert crash.oracle.stderr == crash.delivery.stderr
    # the chmod of the oracle's bundled binary is outside /test_data: not even collected
    assert by_command["tool hello there"].oracle.changes == []  # type: ignore[union-attr]
    written = by_command["tool write out.txt"]
    assert [c.path for c in written.oracle.changes] == ["out.txt"]  # type: ignore[union-attr]
