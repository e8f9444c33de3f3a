"""The sandbox protocol (icae_tui/sandbox/base.py) as every registered backend keeps it: a
box's commands (streams apart and byte-exact, stdin, the timeout, the output caps, the
working directory and environment), its files in and out, a case pool's side (its output
and side effects, a fresh state each case), nothing left once removed, and the shell's
command. Parametrized over the registry's backends (conftest.py)."""

from __future__ import annotations

import hashlib
import shutil

from icae_tui.domain.outcome import SideOutcome
from icae_tui.sandbox.base import Box, BoxSpec, CaseCall, Limits, Role, Sandbox


async def _box(sandbox: Sandbox, image: str, run_id: str) -> Box:
    return await sandbox.create_box(BoxSpec(image=image, run_id=run_id, role=Role.TEST))


def sh(line: str) -> list[str]:
    return ["sh", "-c", line]


async def test_exec_keeps_stdout_and_stderr_apart_and_byte_exact(sandbox, image, run_id):
    box = await _box(sandbox, image, run_id)
    try:
        res = await box.exec(sh(r"printf 'out\000\377'; printf 'err\n' >&2; exit 3"))
    finally:
        await box.remove()
    assert (res.exit_code, res.stdout, res.stderr) == (3, b"out\x00\xff", b"err\n")
    assert (res.stdout_bytes, res.stderr_bytes) == (5, 4)
    assert res.stdout_sha256 == hashlib.sha256(b"out\x00\xff").hexdigest()
    assert not (res.timed_out or res.truncated or res.overflowed)


async def test_exec_feeds_stdin_and_closes_it(sandbox, image, run_id):
    box = await _box(sandbox, image, run_id)
    try:
        echoed = await box.exec(["cat"], stdin=b'{"op": "x"}\n\x00tail')
        nothing = await box.exec(["cat"])  # no stdin: an empty one, never a wait
    finally:
        await box.remove()
    assert echoed.stdout == b'{"op": "x"}\n\x00tail' and echoed.exit_code == 0
    assert (nothing.stdout, nothing.exit_code) == (b"", 0)


async def test_exec_runs_in_the_workdir_with_the_env(sandbox, image, run_id):
    box = await _box(sandbox, image, run_id)
    try:
        await box.put_files({"/work/here/marker": b""})
        res = await box.exec(sh('pwd; echo "$GREETING"'), workdir="/work/here",
                             env={"GREETING": "hello there"})  # fmt: skip
    finally:
        await box.remove()
    assert res.stdout == b"/work/here\nhello there\n", res.stderr


async def test_a_command_past_its_timeout_is_stopped_and_says_so(sandbox, image, run_id):
    box = await _box(sandbox, image, run_id)
    try:
        res = await box.exec(sh("echo started; exec sleep 60"), timeout_s=1)
        after = await box.exec(["true"])  # the box still takes commands
    finally:
        await box.remove()
    assert res.timed_out and res.exit_code != 0
    assert res.stdout == b"started\n"
    assert after.exit_code == 0


async def test_output_past_the_cap_is_counted_and_past_the_limit_stopped(sandbox, image, run_id):
    box = await _box(sandbox, image, run_id)
    try:
        capped = await box.exec(sh("head -c 300000 /dev/zero"), cap_bytes=1000)
        flood = await box.exec(sh("exec yes"), kill_after_bytes=200_000, timeout_s=30)
    finally:
        await box.remove()
    assert len(capped.stdout) == 1000 and capped.stdout_bytes == 300_000 and capped.truncated
    assert capped.exit_code == 0
    assert flood.overflowed and not flood.timed_out
    assert flood.stdout_bytes + flood.stderr_bytes > 200_000


async def test_files_put_in_a_box_read_back_the_same(sandbox, image, run_id):
    data = bytes(range(256)) * 4
    box = await _box(sandbox, image, run_id)
    try:
        await box.put_files({"/work/deep/er/blob.bin": data})
        await box.put_files({"/work/run.sh": b"#!/bin/sh\necho ran\n"}, mode=0o755)
        whole = await box.read_file("/work/deep/er/blob.bin", 1 << 20)
        head = await box.read_file("/work/deep/er/blob.bin", 10)
        missing = await box.read_file("/work/none.txt", 100)
        ran = await box.exec(["/work/run.sh"])
        mode = await box.exec(["stat", "-c", "%a", "/work/deep/er/blob.bin", "/work/run.sh"])
    finally:
        await box.remove()
    assert whole == data and head == data[:10] and missing is None
    assert ran.stdout == b"ran\n"
    assert mode.stdout.split() == [b"644", b"755"]


async def test_a_case_pool_side_gives_its_output_and_side_effects(sandbox, image, run_id):
    pool = sandbox.case_pool(image, run_id=run_id, role=Role.TEST, size=1, limits=Limits(),
                             workdir="/work")  # fmt: skip
    await pool.start()
    try:
        call = CaseCall(command="cat input.txt; echo made > added.txt; echo warned >&2",
                        stdin=None, timeout_s=30, workdir="/work",
                        files={"input.txt": "given\n"})  # fmt: skip
        outcome = await pool.run(call)
        # each case in a fresh state: the last case's file is gone
        again = await pool.run(CaseCall(command="test -e added.txt", stdin=None, timeout_s=30,
                                        workdir="/work", files={"input.txt": "given\n"}))  # fmt: skip
    finally:
        await pool.close()
    assert isinstance(outcome, SideOutcome)
    side = outcome.run
    assert (side.exit_code, side.stdout, side.stderr) == (0, "given\n", "warned\n")
    assert outcome.stdout_full == b"given\n"
    changes = {c.path: c for c in side.changes}
    assert set(changes) == {"added.txt"}, changes  # the fixture is the case's, not its effect
    added = changes["added.txt"]
    assert (added.change, added.type, added.size) == ("added", "file", 5)
    assert added.sha256 == hashlib.sha256(b"made\n").hexdigest()
    assert side.changes_total == 1 and side.changes_sha256
    assert again.run.exit_code == 1 and again.run.changes == []


async def test_a_case_past_its_timeout_is_judged_timed_out(sandbox, image, run_id):
    pool = sandbox.case_pool(image, run_id=run_id, role=Role.TEST, size=1, limits=Limits(),
                             workdir="/work")  # fmt: skip
    await pool.start()
    try:
        outcome = await pool.run(CaseCall(command="echo begun; sleep 60", stdin=None,
                                          timeout_s=1, workdir="/work",
                                          files={"input.txt": ""}))  # fmt: skip
    finally:
        await pool.close()
    assert outcome.run.timed_out and outcome.run.stdout == "begun\n"


async def test_removed_boxes_and_closed_pools_leave_nothing(sandbox, image, run_id, leftovers):
    box = await _box(sandbox, image, run_id)
    await box.exec(sh("sleep 60 >/dev/null 2>&1 & echo detached"))  # a process left running
    assert await leftovers(sandbox, run_id) != []  # the probe sees a live box
    await box.remove()
    pool = sandbox.case_pool(image, run_id=run_id, role=Role.TEST, size=1, limits=Limits(),
                             workdir="/work")  # fmt: skip
    await pool.start()
    await pool.run(CaseCall(command="true", stdin=None, timeout_s=30, workdir="/work",
                            files={"input.txt": ""}))  # fmt: skip
    await pool.close()
    assert await leftovers(sandbox, run_id) == []
    assert await sandbox.remove_run_boxes(run_id) == []


async def test_a_frozen_box_is_an_image_boxes_start_from(sandbox, image, run_id):
    frozen = f"icae-contract-{run_id}:frozen"
    box = await _box(sandbox, image, run_id)
    try:
        await box.put_files({"/workspace/kept.txt": b"kept\n"})
        await box.freeze(frozen, run_id=run_id, ttl_s=600)
    finally:
        await box.remove()
    try:
        later = await _box(sandbox, frozen, run_id)
        try:
            assert await later.read_file("/workspace/kept.txt", 100) == b"kept\n"
        finally:
            await later.remove()
    finally:
        await sandbox.remove_image(frozen)


async def test_the_shell_command_starts_with_a_program_on_path(sandbox, image):
    argv = sandbox.shell_argv(image, "/workspace")
    assert argv and all(isinstance(part, str) and part for part in argv)
    assert shutil.which(argv[0]) is not None, argv
