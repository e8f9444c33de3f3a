"""The in-box path (icae_tui/sandbox/docker/inbox.py) on the real engine: our static walker
judges a case from inside its box, as it does on a remote engine.

Its side effects must be the host path's, case by case, on what a delivery does to a file
system — writes, rewrites, deletions, links, odd names, renamed folders, a forged mtime, a
fixture changed; a file whose times alone were set back is no change (the walker, seeing
its ctime move, hashes it and finds the baseline's bytes) — and it must stand up to the case: its tools cannot be read or replaced,
what a case leaves running is stopped and counted, and a box is reused only when the walk
proves it as it started.
"""

from __future__ import annotations

import pytest

from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import Case, Task
from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.base import CasePath
from tests.integration.tool_images import ToolImages, command_task, evaluate

pytestmark = pytest.mark.docker

ORACLE_TOOL = "#!/bin/bash\necho ok\n"
DELIVERY_TOOL = r"""#!/bin/bash
case "$1" in
  write) mkdir -p out/deep && echo a > out/deep/a.txt && echo b > /var/tmp/b ;;
  rewrite) echo changed >> /etc/motd ;;
  delete) rm -f /etc/issue && rm -rf /usr/share/doc/bash ;;
  links) ln -s /etc/passwd lp && ln -s nowhere dangling && ln /etc/hostname hard 2>/dev/null ;;
  names) touch $'\xff\xfe.bin' "with space" $'new\nline' ;;
  rename) mv /etc/apt /tmp/apt-moved ;;
  forged) touch -d 2000-01-01 /etc/passwd ;;
  chmod) chmod 600 /etc/profile && chmod 700 /tmp ;;
  fixture) echo more >> given.txt && rm gone.txt ;;
  writer) (while :; do echo x >> /var/tmp/bg; done) </dev/null >/dev/null 2>&1 & ;;
esac
echo ok
"""

IMAGES = ToolImages("inside", ORACLE_TOOL, DELIVERY_TOOL)

EFFECTS = ["write", "rewrite", "delete", "links", "names", "rename", "forged", "chmod", "fixture"]
FIXTURES = {"given.txt": "given\n", "gone.txt": "gone\n", "sub/kept.txt": "kept\n"}


def _task(cases: list[Case], *, timeout_s: float = 20) -> Task:
    return command_task("inside", cases, timeout_s=timeout_s)


async def _run(task: Task, sides: Sides, path: CasePath) -> list[CaseResult]:
    results = await evaluate(task, sides, run_id="test-inside", concurrency=1, path=path)
    return [results[ref.id] for ref in task.cases]


def _effects(result: CaseResult) -> set[tuple[str, str, str]]:
    return {(c.path, c.change, c.sha256) for c in result.delivery.changes}


async def test_side_effects_are_the_host_paths_case_by_case(images):
    cases = [Case(command=f"tool {e}", files=FIXTURES, pattern=e) for e in EFFECTS]
    host = await _run(_task(cases), images, CasePath.HOST)
    inside = await _run(_task(cases), images, CasePath.INSIDE)
    for name, h, i in zip(EFFECTS, host, inside, strict=True):
        if name == "forged":  # only its times moved (its ctime too): no change of content
            assert h.verdict == "accepted" and not _effects(h), (name, h.reason)
        else:
            assert h.verdict == "side_effects" and _effects(h), (name, h.reason)
        assert (i.verdict, _effects(i)) == (h.verdict, _effects(h)), (name, _effects(i) ^ _effects(h))
        assert i.delivery.state in ("fresh", "reused")
    by_name = dict(zip(EFFECTS, inside, strict=True))
    assert {c.path: c.change for c in by_name["fixture"].delivery.changes} == {
        "given.txt": "modified",
        "gone.txt": "deleted",
    }


async def test_an_untouched_fixture_case_leaves_nothing_and_its_box_serves_again(images):
    cases = [Case(command="cat sub/kept.txt", files=FIXTURES, pattern="read")] * 3
    results = await _run(_task(cases), images, CasePath.INSIDE)
    assert [r.verdict for r in results] == ["accepted"] * 3, [r.reason for r in results]
    assert all(r.delivery.changes == [] and r.delivery.stdout == "kept\n" for r in results)
    assert [r.delivery.state for r in results] == ["fresh", "reused", "reused"]


async def test_the_tools_cannot_be_read_or_replaced(images):
    probe = (
        "for f in walk init busybox; do cat /dev/.icae/$f >/dev/null 2>&1 && echo read $f; "
        "cp /bin/true /dev/.icae/$f 2>/dev/null && echo replaced $f; done; "
        "touch /dev/.icae/new 2>/dev/null && echo added; echo done"
    )
    (result,) = await _run(_task([Case(command=probe, pattern="tools")]), images, CasePath.INSIDE)
    assert result.delivery.stdout == "done\n", result.delivery.stdout
    assert result.verdict == "accepted", result.reason


async def test_a_background_writer_is_stopped_counted_and_its_box_discarded(images):
    cases = [
        Case(command="tool writer", pattern="writer"),
        Case(command="ls /var/tmp; echo end", pattern="after"),
    ]
    writer, after = await _run(_task(cases), images, CasePath.INSIDE)
    assert (writer.oracle.left_running, writer.delivery.left_running) == (0, 1)
    assert "/var/tmp/bg" in {c.path for c in writer.delivery.changes}
    assert after.delivery.state == "fresh"
    assert after.delivery.stdout == "end\n" and after.verdict == "accepted", after.reason
