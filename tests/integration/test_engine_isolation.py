"""The differential engine against hostile deliveries, with the real engine.

The oracle's tool prints `ok`; the delivery's tool misbehaves in the way its first argument
names. Each misbehaviour must end in its own verdict, and the next case must run normally.
"""

from __future__ import annotations

import pytest

from icae_tui.domain.task import Case, Task
from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.base import CasePath
from tests.integration.tool_images import ToolImages, command_task, evaluate

pytestmark = pytest.mark.docker

ORACLE_TOOL = """#!/bin/bash
echo ok
"""

DELIVERY_TOOL = r"""#!/bin/bash
case "$1" in
  forkbomb) f() { f | f & }; f; sleep 30 ;;
  membomb) python3 -c "a = [bytearray(64 << 20) for _ in range(64)]" ;;
  loop) while :; do :; done ;;
  flood) head -c 1G /dev/zero ;;
  etc) echo x > /etc/leaked; echo y > "$HOME/.leaked"; echo ok ;;
  churn) mkdir -p d /tmp/t; touch d/f /tmp/t/f; rm -r d /tmp/t; echo ok ;;
  *) echo ok ;;
esac
"""

PROBE = r"""
found=""
for p in /var/tmp/leak /root/leak /data/leak /data/fixture.txt /dev/shm/leak /dev/leak /tmp/leak; do
  [ -e "$p" ] && found="$found $p"
done
for d in /proc/[0-9]*; do
  if tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -q '^sleep 4242'; then found="$found process"; fi
done
[ "$(wc -l < /proc/sysvipc/shm)" -gt 1 ] && found="$found sysv-shm"
echo "seen:${found:- nothing}"
"""

# Leaves nothing on disk and no process: only a SysV shared-memory segment.
SYSV_PLANT = (
    """python3 -c "import ctypes; print(ctypes.CDLL(None).shmget(0x4242, 4096, 0o1666) >= 0)" """
)

PLANT = r"""
echo 1 > /var/tmp/leak; echo 1 > /root/leak; echo 1 > /data/leak; echo 1 > /dev/shm/leak
echo 1 > /dev/leak 2>/dev/null; echo 1 > /tmp/leak
setsid nohup sleep 4242 >/dev/null 2>&1 &
echo planted
"""


IMAGES = ToolImages("hostile", ORACLE_TOOL, DELIVERY_TOOL)


def _task(cases: list[Case], *, timeout_s: float = 3) -> Task:
    return command_task("hostile", cases, timeout_s=timeout_s)


async def _run(task: Task, sides: Sides, *, path: CasePath = CasePath.HOST, concurrency: int = 1):
    return await evaluate(task, sides, run_id="test-engine", concurrency=concurrency, path=path)


BOUNDED = ("membomb", "flood")  # bombs judged by a limit of their box, not by the clock


async def test_each_bomb_has_its_own_verdict_and_the_next_case_runs(images):
    names = ["forkbomb", "ok", "membomb", "ok", "loop", "ok", "flood", "ok"]
    # the memory and output bombs' own time: filling a limit may take more than 3 s on a busy
    # machine (the suite's other workers), and the verdict, not the speed, is what is checked
    task = _task([Case(command=f"tool {n}", pattern=n, timeout_s=15 if n in BOUNDED else None)
                  for n in names])  # fmt: skip
    # One case at a time: a fork bomb starves whatever shares its cores, and that is not
    # what this test measures.
    results = await _run(task, images, concurrency=1)
    verdicts = [results[f"hidden/h#{i}"].verdict.value for i in range(len(names))]
    assert verdicts[0] == "runtime_error", results["hidden/h#0"].reason
    # the bomb outlives its command (cut at the timeout): that comes first; if the timeout's
    # kill of its process group took every process, the pids limit it hit says it
    reason = results["hidden/h#0"].reason
    assert reason.startswith(("left processes running", "hit the process limit")), reason
    assert verdicts[2] == "memory_limit", results["hidden/h#2"].reason
    assert verdicts[4] == "time_limit"
    assert verdicts[6] == "output_limit"
    assert verdicts[1::2] == ["accepted"] * 4
    flood = results["hidden/h#6"].delivery
    assert flood.overflowed and flood.stdout_bytes > 64 << 20 and len(flood.stdout) <= 64 * 1024


@pytest.mark.parametrize("path", list(CasePath), ids=[p.value for p in CasePath])
async def test_side_effects_anywhere_and_no_false_diff(images, path):
    task = _task(
        [Case(command="tool etc", pattern="etc"), Case(command="tool churn", pattern="churn")]
    )
    results = await _run(task, images, path=path)
    etc = results["hidden/h#0"]
    assert etc.verdict == "side_effects"
    paths = {c.path: c.change for c in etc.delivery.changes}
    assert paths == {"/etc/leaked": "added", "/root/.leaked": "added"}
    assert "/etc/leaked" in etc.reason
    churn = results["hidden/h#1"]
    assert churn.verdict == "accepted", churn.reason
    assert churn.delivery.changes == []


@pytest.mark.parametrize("path", list(CasePath), ids=[p.value for p in CasePath])
async def test_no_state_leaks_between_cases(images, path):
    cases = [
        Case(command="echo ok", pattern="warm"),
        Case(command=PLANT, files={"fixture.txt": "left behind?"}, pattern="plant"),
        Case(command=PROBE, pattern="probe"),
        Case(command=PROBE, pattern="probe"),
        Case(command=SYSV_PLANT, pattern="sysv"),
        Case(command=PROBE, pattern="probe"),
    ]
    results = await _run(_task(cases, timeout_s=10), images, path=path)
    assert results["hidden/h#4"].delivery.stdout == "True\n"
    for case_id in ("hidden/h#2", "hidden/h#3", "hidden/h#5"):
        r = results[case_id]
        assert r.oracle.stdout == "seen: nothing\n", (case_id, r.oracle.stdout)
        assert r.delivery.stdout == "seen: nothing\n", (case_id, r.delivery.stdout)
    planted = results["hidden/h#1"]
    assert planted.oracle.stdout == "planted\n"
    if path is not CasePath.CHANGES:
        # the untouched containers were reused, the planted ones were not
        assert results["hidden/h#1"].delivery.state == "reused"  # after the warm-up case
        assert results["hidden/h#2"].delivery.state == "fresh"
        assert results["hidden/h#3"].delivery.state == "reused"
        assert results["hidden/h#4"].delivery.state == "reused"
        assert results["hidden/h#5"].delivery.state == "fresh"  # the segment made it dirty
    else:
        assert {r.delivery.state for r in results.values()} == {"fallback"}


async def test_names_that_are_not_utf8_and_the_hostname_are_fair_to_both_sides(images):
    """A case that makes a file whose name is not UTF-8 is judged (the name shown escaped),
    and `hostname` prints the same on both sides, not each container's id."""
    cases = [
        Case(command=r"""touch "$(printf '\377\376.bin')"; ln -s "$(printf '\376')" link; echo ok""",
             pattern="bytes"),  # sh: printf's octal escapes, not bash's $'...'
        Case(command="hostname; cat /etc/hostname", pattern="hostname"),
    ]
    results = await _run(_task(cases), images)
    named = results["hidden/h#0"]
    assert named.verdict == "accepted", named.reason
    assert {(c.path, c.target) for c in named.delivery.changes} == {
        ("\\xff\\xfe.bin", ""),  # in the work directory: relative
        ("link", "\\xfe"),
    }
    host = results["hidden/h#1"]
    assert host.verdict == "accepted", host.reason
    assert host.delivery.stdout == "sandbox\nsandbox\n"
