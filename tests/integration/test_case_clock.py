"""The case's clock and its timeout verdicts, on the real engine (issue 39, items 1, 4, 5).

- A delivery that stops its supervisor, hands its output to a detached worker over a
  socketpair, lets the worker do the slow work and continue the supervisor, must get
  `time_limit` on both paths: the host's clock is the case's, and a case whose supervisor
  was stopped is run again by exec (its box discarded), without waiting for the watchdog.
- Processes already killed by `timeout` (still exiting when the host looks) are not "left
  running": a delivery that ignores SIGTERM, and one that forks into the process limit, get
  one verdict and one reason on every run.
- Exit 124 is an exit code like any other: only a timeout that fired is `time_limit`.

The oracle's tool prints `ok`; the delivery's misbehaves as its first argument says.
"""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.domain.task import Case, Task
from icae_tui.sandbox.base import CasePath
from tests.integration.tool_images import ToolImages, command_task, evaluate

pytestmark = pytest.mark.docker

PATHS = [CasePath.SUPERVISED, CasePath.HOST]

ORACLE_TOOL = "#!/bin/bash\necho ok\n"

# `bypass SLOW`: run under our supervisor (an ancestor: its `timeout`'s parent), it stops
# the supervisor and passes its stdout and stderr over a socketpair to a detached worker,
# which does the slow work, writes the answer, continues the supervisor and exits: the case
# "ends" at once with exit 0. Anywhere else it does the slow work itself. `handoff SLOW`:
# the worker without the stop, on any path (its output held open until the answer).
BYPASS_PY = r"""
import os, signal, socket, sys, time

SLOW_S, STOP = float(sys.argv[1]), sys.argv[2] == "stop"

def supervisor():  # ours, when it is an ancestor (its `timeout`'s parent)
    pid = os.getppid()
    try:
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == b"/dev/.icae/super\0":
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError):
        pass
    return None

sup = supervisor() if STOP else None
if STOP and sup is None:
    time.sleep(SLOW_S)
    print("ok", flush=True)
    sys.exit(0)
if sup is not None:
    os.kill(sup, signal.SIGSTOP)
mine, theirs = socket.socketpair()
if os.fork() == 0:
    os.setsid()
    if os.fork():
        os._exit(0)
    mine.close()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _, fds, _, _ = socket.recv_fds(theirs, 1, 2)
    time.sleep(SLOW_S)
    os.write(fds[0], b"ok\n")
    for fd in fds:
        os.close(fd)
    if sup is not None:
        os.kill(sup, signal.SIGCONT)
    os._exit(0)
theirs.close()
socket.send_fds(mine, [b"x"], [1, 2])
mine.close()
os._exit(0)
"""

# `ignore-term`: every process ignores SIGTERM (a shell's ignored signals stay ignored in
# its subshells and the programs they run), two of them busy: `timeout` has to SIGKILL the
# group, and the killed wait their turn on the CPU to exit. `fork`: a thousand subshells (a
# fork each, no exec: the limit is soon reached) waiting on a FIFO no one writes, cut at the
# process limit; SIGTERM ends them all.
DELIVERY_TOOL = r"""#!/bin/bash
case "$1" in
  bypass) exec python3 /opt/bypass.py "$2" stop ;;
  handoff) exec python3 /opt/bypass.py "$2" keep ;;
  ignore-term) trap '' TERM
    for i in $(seq 12); do sleep 60 & done
    (while :; do :; done) & (while :; do :; done) &
    wait ;;
  fork) mkfifo /tmp/never; for i in $(seq 1000); do { read _ < /tmp/never; } & done; wait ;;
  exit124) echo ok; exit 124 ;;
  ok) echo ok ;;
esac
"""

IMAGES = ToolImages(
    "case-clock", ORACLE_TOOL, DELIVERY_TOOL, delivery_files={"/opt/bypass.py": BYPASS_PY}
)


def _task(commands: list[str], *, timeout_s: float) -> Task:
    return command_task(
        "case-clock", [Case(command=c, pattern=c) for c in commands], timeout_s=timeout_s
    )


def _verdicts(results: dict[str, CaseResult]) -> Counter[tuple[str, str]]:
    return Counter((r.verdict.value, r.reason) for r in results.values())


@pytest.mark.parametrize("path", PATHS)
async def test_a_stopped_supervisor_and_a_worker_do_not_beat_the_clock(images, path, caplog):
    """2 s of time, 3 s of work: on the supervisor's path the stop is seen at once (the case
    runs again by exec), never when the watchdog fires."""
    task = _task([f"tool bypass 3 {i}" for i in range(4)] + ["tool ok"], timeout_s=2)
    with caplog.at_level(logging.INFO, logger="icae_tui.sandbox.docker.cases"):
        results = await evaluate(task, images, run_id=f"test-clock-bypass-{path}", path=path)
    for r in results.values():
        if r.command == "tool ok":
            assert r.verdict is Verdict.ACCEPTED, r.reason
        else:
            assert (r.verdict, r.reason) == (Verdict.TIME_LIMIT, "no exit within 2 s"), r
    lost = [m for m in caplog.messages if "supervisor lost" in m]
    if path is CasePath.SUPERVISED:
        assert len(lost) == 4 and all("stopped by its case" in m for m in lost), lost
    else:
        assert lost == []


@pytest.mark.parametrize("path", PATHS)
async def test_output_held_past_the_limit_is_a_timeout_whatever_the_exit_code(images, path):
    """`timeout` exits 0 at once; the worker it cannot see holds the case's output 1.5 s
    (within the supervisor's 2 s window for late output) and then ends: the case's end is
    when the host saw it, past its 1 s."""
    task = _task(["tool handoff 1.5 1", "tool handoff 1.5 2", "tool ok"], timeout_s=1)
    results = await evaluate(task, images, run_id=f"test-clock-handoff-{path}", path=path)
    for r in results.values():
        if r.command == "tool ok":
            assert r.verdict is Verdict.ACCEPTED, r.reason
        else:
            assert (r.verdict, r.reason) == (Verdict.TIME_LIMIT, "no exit within 1 s"), r.reason
            assert r.delivery is not None and r.delivery.exit_code == 0


@pytest.mark.parametrize("path", PATHS)
async def test_processes_already_killed_are_not_left_running_on_ten_runs(images, path):
    """SIGTERM ignored by `timeout`'s own child (`exec`: whatever shell runs the case line),
    so `timeout` SIGKILLs the group at 3 + 2 s. The fork case has 3 s to reach the process
    limit (a loaded machine forks slowly) before SIGTERM ends it; a fork of its shell in
    flight then may outlive it (verdict.py: the limit is the verdict)."""
    # 3 s, not 1: the oracle's `echo ok` must finish within it on a loaded machine too
    ignoring = [Case(command=f"exec tool ignore-term {i}", timeout_s=3) for i in (1, 2)]
    forking = [Case(command=f"tool fork {i}", timeout_s=3) for i in (1, 2)]
    task = command_task("case-clock", ignoring + forking, timeout_s=10)
    seen: Counter[tuple[str, str, str]] = Counter()
    for attempt in range(10):
        results = await evaluate(
            task, images, run_id=f"test-clock-dying-{path}-{attempt}", concurrency=2, path=path
        )
        for r in results.values():
            kind = "ignore-term" if "ignore-term" in r.command else "fork"
            seen[(kind, r.verdict.value, r.reason)] += 1
    assert seen == Counter(
        {
            ("ignore-term", "time_limit", "no exit within 3 s"): 20,
            ("fork", "runtime_error", "hit the process limit (fork bomb?), no exit within 3 s"): 20,
        }
    )


@pytest.mark.parametrize("path", PATHS)
async def test_exit_124_is_an_exit_code_not_a_timeout(images, path):
    task = _task(["tool exit124", "tool ok"], timeout_s=10)
    results = await evaluate(task, images, run_id=f"test-clock-124-{path}", path=path)
    by_command = {r.command: r for r in results.values()}
    r = by_command["tool exit124"]
    assert (r.verdict, r.reason) == (Verdict.WRONG_ANSWER, "exit code 124, oracle 0"), r.reason
    assert r.delivery is not None and not r.delivery.timed_out and r.delivery.exit_code == 124
    assert by_command["tool ok"].verdict is Verdict.ACCEPTED
