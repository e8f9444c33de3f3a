"""The ways a local engine runs a case judge it the same, on the real engine.

A case runs by our supervisor in its pooled box (the default: `sandbox/docker/supervisor.py`),
by an engine exec per case (the path before it, still taken by a pool that is not
supervised), or by the fallback: the supervisor is lost mid-case (killed from the host here,
before each case), its box is discarded and the case runs again, by exec, in another box.

Every case of every bundled sample task, against the delivery of each of its solutions (good,
partial, broken: made by a real scripted run), and a set of hostile cases, must get the same
verdict, reason, output, exit, limits and side effects each way. What may differ is how long
a case took and whether its box was fresh or reused.
"""

from __future__ import annotations

import os
import signal

import pytest

from icae_tui.domain.results import CaseResult, SideRun
from icae_tui.domain.task import Case, Level, Task
from icae_tui.evaluation.differential import Evaluator, Sides
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.base import CasePath
from icae_tui.sandbox.docker.backend import DockerSandbox
from icae_tui.sandbox.docker.pool import SidePool, SideStats
from icae_tui.sandbox.docker.supervisor import Supervisor
from tests.integration.tool_images import ToolImages, command_task

pytestmark = pytest.mark.docker

WAYS = ("supervised", "exec", "fallback")
SIDE_FIELDS = tuple(
    name for name in SideRun.model_fields if name not in ("duration_s", "state")
)  # how long it took, and whether its box was fresh: not the case's to decide


def _side(run: SideRun | None) -> tuple | None:
    return None if run is None else tuple(getattr(run, name) for name in SIDE_FIELDS)


def signature(r: CaseResult) -> tuple:
    return (r.verdict, r.reason, r.passed, r.metrics, _side(r.oracle), _side(r.delivery))


def _lose_every_supervisor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each supervisor is killed from the host just before it is handed its case."""
    run = Supervisor.run

    async def lost_then_run(self: Supervisor, *args, **kwargs):
        os.kill(self.host_pid, signal.SIGKILL)
        return await run(self, *args, **kwargs)

    monkeypatch.setattr(Supervisor, "run", lost_then_run)


async def judge(
    task: Task, sides: Sides, way: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, CaseResult], list[SideStats]]:
    """Every case of `task`, one way; the results by case id and each side's pool stats."""
    path = CasePath.HOST if way == "exec" else CasePath.SUPERVISED
    with monkeypatch.context() as patch:
        if way == "fallback":
            _lose_every_supervisor(patch)
        sandbox = await DockerSandbox.open()
        try:
            async with Evaluator(sandbox, task, sides, run_id=f"paths-{way}", path=path) as ev:
                results = {r.case_id: r async for r in ev.run_cases(task.cases)}
                pools = [p for p in (ev.oracle, ev.delivery) if isinstance(p, SidePool)]
                return results, [p.stats for p in pools]
        finally:
            await sandbox.close()


async def judged_every_way(
    task: Task, sides: Sides, monkeypatch: pytest.MonkeyPatch
) -> dict[str, dict[str, CaseResult]]:
    """The three ways' results, each way checked to have been taken for every case."""
    every: dict[str, dict[str, CaseResult]] = {}
    n = len(task.cases)
    for way in WAYS:
        results, stats = await judge(task, sides, way, monkeypatch)
        assert sorted(results) == sorted(ref.id for ref in task.cases)
        for s in stats:
            if way == "supervised":  # a case lost here (a hostile one) ran again by exec
                assert s.supervised + s.supervisor_lost >= n and s.supervised > 0, s
            elif way == "exec":
                assert s.supervised == 0 and s.supervisor_lost == 0, s
            else:
                assert s.supervisor_lost == n and s.supervised == 0, s
        every[way] = results
    return every


def _differences(a: CaseResult, b: CaseResult) -> list[str]:
    """What differs, by name (values may be megabytes of output)."""
    names = [
        n for n in ("verdict", "reason", "passed", "metrics") if getattr(a, n) != getattr(b, n)
    ]
    for side in ("oracle", "delivery"):
        x, y = getattr(a, side), getattr(b, side)
        if (x is None) != (y is None):
            names.append(side)
        elif x is not None:
            names += [f"{side}.{n}" for n in SIDE_FIELDS if getattr(x, n) != getattr(y, n)]
    return names


def assert_same(every: dict[str, dict[str, CaseResult]]) -> None:
    first = every[WAYS[0]]
    for way in WAYS[1:]:
        differ = {
            f"{cid} ({first[cid].command[:40]})": _differences(first[cid], r)
            for cid, r in every[way].items()
            if signature(r) != signature(first[cid])
        }
        assert not differ, f"{way} differs from {WAYS[0]}: {differ}"


@pytest.mark.parametrize("task_id", ["semver", "tidy", "wordfreq"])
async def test_every_case_of_every_solution_agrees(task_id, bundled_catalog, store, monkeypatch):
    task = bundled_catalog.tasks[task_id]
    assert sorted(task.solutions) == ["broken", "good", "partial"]
    passed: dict[str, int] = {}
    for solution in task.solutions:
        config = RunConfig(
            task=task, agent=f"scripted:{solution}", level=Level.L1, pace_s=0, keep_delivery=True
        )
        outcome = await Run(config, store).execute()
        assert outcome.sides is not None, outcome.error
        try:
            every = await judged_every_way(task, outcome.sides, monkeypatch)
        finally:
            sandbox = await DockerSandbox.open()
            try:
                await sandbox.remove_image(outcome.sides.delivery_image)
            finally:
                await sandbox.close()
        assert_same(every)
        passed[solution] = sum(r.passed for r in every["supervised"].values())
    n = len(task.cases)
    assert passed["good"] == n and passed["broken"] < passed["partial"] < n, passed


ORACLE_TOOL = "#!/bin/bash\necho ok\n"

DELIVERY_TOOL = r"""#!/bin/bash
supervisors() {  # our supervisor's pids, as a case can find them
  for d in /proc/[0-9]*; do
    [ "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" = "/dev/.icae/super " ] && echo "${d#/proc/}"
  done
}
case "$1" in
  ok) echo ok ;;
  stdin) cat; echo; echo read ;;
  exit) echo ok; exit 3 ;;
  signal) echo ok; kill -SEGV $$ ;;
  stderr) echo ok; echo "to stderr" >&2 ;;
  bytes) printf 'ok\0\377\033[31m[bold]x[/bold]\n' ;;
  bigline) python3 -c 'print("x" * 3000000)' ;;
  flood) head -c 300000000 /dev/zero ;;
  timeout) echo ok; sleep 60 ;;
  late) (sleep 0.3; echo late) & echo ok ;;
  background) setsid sleep 4242 </dev/null >/dev/null 2>&1 & echo ok ;;
  workdir) echo x > made.txt; rm -f keep.txt; echo ok ;;
  layer) echo x > /tmp/layer.txt; echo ok ;;
  shm) echo mark > /dev/shm/mark; echo ok ;;
  hostname) echo mark >> /etc/hostname; echo ok ;;
  pids) python3 -c '
import os, time
n = 0
while n < 1000:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print("forked", n)' ;;
  killall) echo ok; kill -9 -1 ;;
  kill-supervisor) for p in $(supervisors); do kill -9 "$p"; done; echo ok ;;
  stop-supervisor) for p in $(supervisors); do kill -STOP "$p"; done; echo ok ;;
esac
"""

HOSTILE = [
    Case(command="tool ok"),
    Case(command="tool stdin", input="some\nlines\0 and a NUL"),
    Case(command="tool exit"),
    Case(command="tool signal"),
    Case(command="tool stderr"),
    Case(command="tool bytes"),
    Case(command="tool bigline"),
    Case(command="tool flood"),
    Case(command="tool timeout", timeout_s=2),
    Case(command="tool late"),
    Case(command="tool background"),
    Case(command="tool workdir", files={"keep.txt": "fixture\n"}),
    Case(command="tool layer"),
    Case(command="tool shm"),
    Case(command="tool hostname"),
    Case(command="tool pids"),
    Case(command="tool killall"),
    Case(command="tool kill-supervisor"),
    Case(command="tool stop-supervisor", timeout_s=2),
]

IMAGES = ToolImages("paths", ORACLE_TOOL, DELIVERY_TOOL)


async def test_hostile_cases_agree(images, monkeypatch):
    task = command_task("paths", HOSTILE, timeout_s=20)
    every = await judged_every_way(task, images, monkeypatch)
    assert_same(every)
    by_command = {r.command: r for r in every["supervised"].values()}
    delivery = {cmd.removeprefix("tool "): r.delivery for cmd, r in by_command.items()}
    # each hostile act had the effect it aims at (so agreeing is not agreeing on nothing)
    assert delivery["exit"].exit_code == 3 and delivery["signal"].exit_code == 139
    assert delivery["timeout"].timed_out and delivery["flood"].overflowed
    assert delivery["background"].left_running == 1 and delivery["killall"].box_died
    assert delivery["stdin"].stdout == "some\nlines\0 and a NUL\nread\n"
    assert delivery["late"].stdout == "ok\nlate\n"
    assert delivery["pids"].pids_capped
    assert [c.path for c in delivery["workdir"].changes] == ["keep.txt", "made.txt"]
    for act in ("layer", "shm", "hostname"):
        assert delivery[act].changes, act


PROBE = r"""python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
sup = [p for p in os.listdir("/proc") if p.isdigit()
       and open(f"/proc/{p}/cmdline", "rb").read() == b"/dev/.icae/super\0"]
pid = int(sup[0])
def tried(f):
    try:
        f()
        return "done"
    except OSError:
        return "denied"
print("mem", tried(lambda: open(f"/proc/{pid}/mem", "r+b").close()))
print("channel", tried(lambda: open(f"/proc/{pid}/fd/1", "wb").close()))
print("binary", tried(lambda: open("/dev/.icae/super", "rb").close()))
print("replace", tried(lambda: open("/dev/.icae/super", "wb").close()))
attached = libc.ptrace(16, pid, 0, 0) == 0  # PTRACE_ATTACH
print("ptrace", "done" if attached else "denied")
'"""


async def test_a_case_cannot_reach_into_its_supervisor(images):
    task = command_task("paths", [Case(command=PROBE)], timeout_s=20)
    results, stats = await judge(task, images, "supervised", pytest.MonkeyPatch())
    (result,) = results.values()
    assert result.delivery is not None and all(s.supervised == 1 for s in stats)
    assert result.delivery.stdout.splitlines() == [
        "mem denied",
        "channel denied",
        "binary denied",
        "replace denied",
        "ptrace denied",
    ], result.delivery.stderr
