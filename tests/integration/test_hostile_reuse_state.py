"""A reused case box keeps no state of the processes a case cannot end, nor of the metadata
the proof once skipped, on the real engine (issue 39, items 2 and 3).

A case runs as the uid of the box's own processes (its init, the keepalive and, on the
supervised path, the supervisor every later case is forked from), so it can lower their
limits and priority, narrow their affinity and raise their OOM score. It can also set the
mode, times and user xattrs of `/`, `/dev`, `/dev/shm` and `/dev/null`, and leave the
memory cgroup's peak high. The delivery's tool plants one such mark per case, and the next
case probes for every mark: it must see nothing (as on a fresh box), and agree with the
oracle's. Marks that are side effects (the mode of `/`) must show in the planting case's.
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

# ioprio_set and ioprio_get, by the box's architecture (the host's)
IOPRIO = """{"x86_64": (251, 252), "aarch64": (30, 31)}.get(os.uname().machine)"""

# Distinctive values, so a probe tells a planted one from the box's own.
PLANT_PY = r"""
import ctypes, os, resource, sys
libc = ctypes.CDLL(None, use_errno=True)
ioprio = """ + IOPRIO + r"""
cpus = os.sched_getaffinity(0)
pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
whats = [sys.argv[1]]
if whats == ["init"]:  # the init alone: no case is forked from it, it must count all the same
    pids, whats = [1], ["rlimits", "oom"]
for pid in pids:
    for what in whats:
        try:
            if what == "rlimits":
                for res, soft in ((resource.RLIMIT_AS, 3 << 30 | 4096),
                                  (resource.RLIMIT_FSIZE, 7777777),
                                  (resource.RLIMIT_CPU, 4242)):
                    resource.prlimit(pid, res, (soft, resource.prlimit(pid, res)[1]))
            elif what == "nice":
                os.setpriority(os.PRIO_PROCESS, pid, 7)
            elif what == "policy":
                os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))
            elif what == "affinity" and len(cpus) > 1:
                os.sched_setaffinity(pid, {min(cpus)})
            elif what == "oom":
                with open(f"/proc/{pid}/oom_score_adj", "w") as f:
                    f.write("777")
            elif what == "ioprio" and ioprio:  # (IOPRIO_WHO_PROCESS, pid, the idle class)
                libc.syscall(ioprio[0], 1, pid, 3 << 13)
        except OSError:
            pass  # gone meanwhile
"""

DELIVERY_TOOL = f"""#!/bin/bash
case "$1" in
  rlimits|init|nice|policy|affinity|oom|ioprio) python3 -c '{PLANT_PY}' "$1" ;;
  rootmode) chmod 700 / ;;
  rootmtime) touch -d @0 / ;;
  rootxattr) python3 -c 'import os; os.setxattr("/", "user.mark", b"mark")' ;;
  devxattr) python3 -c 'import os; os.setxattr("/dev", "user.mark", b"mark")' ;;
  shmxattr) python3 -c 'import os; os.setxattr("/dev/shm", "user.mark", b"mark")' ;;
  devnullmtime) touch -d @0 /dev/null ;;
  shmmtime) touch -d @0 /dev/shm ;;
  peak) python3 -c 'b = b"x" * (300 << 20)' ;;
esac
echo ok
"""

PROBE_PY = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
ioprio = """ + IOPRIO + r"""
seen = set()
def cpu_set(text):
    out = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out
online = cpu_set(open("/sys/devices/system/cpu/online").read())
for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
    try:
        limits = open(f"/proc/{pid}/limits").read()
        stat = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
        oom = open(f"/proc/{pid}/oom_score_adj").read().strip()
        cpus = os.sched_getaffinity(pid)
    except OSError:
        continue  # gone meanwhile
    for line in limits.splitlines():
        name, soft = line[:26].strip(), line[26:47].strip()
        if (name, soft) in (("Max address space", str(3 << 30 | 4096)),
                            ("Max file size", "7777777"), ("Max cpu time", "4242")):
            seen.add("rlimits")
    if stat[16] == "7":
        seen.add("nice")
    if stat[38] != "0":
        seen.add("policy")
    if oom == "777":
        seen.add("oom")
    if cpus != online:
        seen.add("affinity")
    if ioprio and libc.syscall(ioprio[1], 1, pid) >> 13 == 3:
        seen.add("ioprio")
if os.stat("/").st_mode & 0o777 == 0o700:
    seen.add("rootmode")
for path, name in (("/", "root"), ("/dev/null", "devnull"), ("/dev/shm", "shm")):
    if os.stat(path).st_mtime == 0:
        seen.add(name + "mtime")
for path, name in (("/", "root"), ("/dev", "dev"), ("/dev/shm", "shm")):
    if "user.mark" in os.listxattr(path):
        seen.add(name + "xattr")
if int(open("/sys/fs/cgroup/memory/memory.max_usage_in_bytes").read()) > 200 << 20:
    seen.add("peak")
print("seen:", " ".join(sorted(seen)) or "nothing")
"""

PROBE = f"python3 -c '{PROBE_PY}'"

IMAGES = ToolImages("reuse-state", ORACLE_TOOL, DELIVERY_TOOL)


@pytest.fixture(params=[CasePath.SUPERVISED, CasePath.HOST], ids=["supervised", "exec"])
def path(request: pytest.FixtureRequest) -> CasePath:
    """Both ways a local engine runs a case: by the box's supervisor, and by an exec."""
    return CasePath(request.param)


async def _run(cases: list[Case], sides: Sides, path: CasePath) -> list[CaseResult]:
    # One case at a time: a box judged clean serves the next case.
    task: Task = command_task("reuse-state", cases, timeout_s=30)
    results = await evaluate(task, sides, run_id="test-reuse-state", concurrency=1, path=path)
    return [results[ref.id] for ref in task.cases]


# vector → the paths its planting case must report as side effects
VECTORS = {
    # item 2: the box's own processes (on the supervised path, every later case's parent)
    "rlimits": {},
    "init": {},  # its limits and OOM score, on the init alone
    "nice": {},
    "policy": {},
    "affinity": {},
    "oom": {},
    "ioprio": {},
    # item 3: metadata the proof did not compare
    "rootmode": {"/": "modified"},
    "rootmtime": {},
    "rootxattr": {},
    "devxattr": {},
    "shmxattr": {},
    "devnullmtime": {},
    "shmmtime": {},
    "peak": {},
}


@pytest.mark.parametrize("vector", list(VECTORS))
async def test_a_planted_state_never_reaches_the_next_case(
    images: Sides, vector: str, path: CasePath
) -> None:
    warm, plant, probe = await _run(
        [
            Case(command="echo ok", pattern="warm"),
            Case(command=f"tool {vector}", pattern="plant"),
            Case(command=PROBE, pattern="probe"),
        ],
        images,
        path,
    )
    assert warm.verdict == "accepted", warm.reason
    assert plant.delivery is not None and plant.oracle is not None
    assert plant.delivery.stdout == "ok\n", plant.delivery
    assert plant.delivery.state == "reused"  # served by the warm-up case's box
    assert probe.oracle is not None and probe.delivery is not None
    assert probe.oracle.stdout == "seen: nothing\n", probe.oracle
    assert probe.delivery.stdout == "seen: nothing\n", (probe.delivery.stdout, probe.delivery.state)
    assert probe.verdict == "accepted", probe.reason
    # A box keeps a peak only until it is reset (it is then as fresh); every other mark
    # costs the box.
    assert probe.delivery.state == ("reused" if vector == "peak" else "fresh")
    reported = {c.path: c.change for c in plant.delivery.changes}
    assert reported == VECTORS[vector]
    if reported:
        assert plant.verdict == "side_effects", plant.reason  # the oracle planted nothing
        assert plant.oracle.changes == []
