"""One case on one side, in a fresh box from the side's pool (`pool.py`): fixtures, `prep`,
a snapshot, the case under its timeout and output cap, then what it left — processes, the
limits it hit, its box's death, a full disk — and its side effects.

With a local engine the case is run by the box's supervisor (`supervisor.py`: one request on
a stream opened when the box was made) where the pool is supervised, else by an engine exec.
A supervisor that loses the case (killed, stopped, silent, unable to start it) costs its box,
and the case runs again from the start, by exec, in another.

With a host view (a local engine) everything after the case is read from the host, off the
event loop; without one (a remote engine) our own walker reports from inside the box
(`inbox.py`), and where it cannot serve, side effects come from the engine's `/changes`
plus a manifest made in the box. What the engine could not run or inspect comes back as a
`BoxError`; anything else raised here is a bug of ours and is left to fail the run.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Protocol

import aiodocker
import aiohttp

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import BoxState, SideRun
from icae_tui.errors import BoxError
from icae_tui.sandbox.base import DISPLAY_CAP, CaseCall, ExecResult, Role, prep_failure
from icae_tui.sandbox.docker.containers import Container, case_argv
from icae_tui.sandbox.docker.disk import LayerWatch, full_bytes
from icae_tui.sandbox.docker.hostview import ENGINE_NOISE, HostView, State
from icae_tui.sandbox.docker.inbox import (
    Inside,
    Look,
    fixtures_failed,
    fixtures_prefix,
    fold_deletions,
    unpack,
)
from icae_tui.sandbox.docker.manifest import fallback_diff, fallback_snapshot
from icae_tui.sandbox.docker.procs import let_dying_end
from icae_tui.sandbox.docker.proof import (
    Box,
    hold_still,
    host_effects,
    host_snapshot,
    kill_extras,
    left_running,
    settle,
    walk_work,
    write_fixtures,
)
from icae_tui.sandbox.docker.supervisor import SupervisorLost
from icae_tui.sandbox.effects import Change, Entry, FileChanges, to_file_changes

log = logging.getLogger(__name__)

# What the engine or a box can do to one side of a case: a refused or failed call, a box
# gone, a freeze that did not take, a host view that could not be read.
ENGINE_TROUBLE = (aiodocker.DockerError, aiohttp.ClientError, OSError, TimeoutError, BoxError)


class Counts(Protocol):
    """What a pool counts of the cases run here (`pool.py`'s `SideStats`)."""

    supervised: int  # cases run by a box's supervisor
    supervisor_lost: int  # cases its supervisor failed, run again by exec


class Boxes(Protocol):
    """What a case takes of its side's pool (`pool.py`'s `SidePool`, which runs its cases
    here): a box to run on, given back with what the case left."""

    docker: aiodocker.Docker
    role: Role

    @property
    def stats(self) -> Counts: ...

    async def take(self) -> Box: ...

    async def release(
        self,
        box: Box,
        *,
        after: dict[str, Entry] | None,
        result: ExecResult,
        look: Look | None = None,
    ) -> bool: ...


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[:DISPLAY_CAP]


@dataclass
class _Aftermath:
    """What a case left, beside its output."""

    oom: bool = False
    pids_capped: bool = False
    left: int = 0  # processes alive after its command ended
    box_died: bool = False
    disk_full: bool = False
    changes: FileChanges = field(default_factory=FileChanges)
    after: dict[str, Entry] | None = None  # the writable layer, when the box can be reused


async def run_case(pool: Boxes, call: CaseCall) -> SideOutcome:
    """The case on a box of `pool`; BoxError when the engine could not run or inspect it."""
    try:
        return await _run(pool, call)
    except BoxError:
        raise
    except ENGINE_TROUBLE as err:
        raise BoxError(f"{type(err).__name__}: {err}") from err


async def _run(pool: Boxes, call: CaseCall) -> SideOutcome:
    box: Box = await pool.take()
    if box.inside is not None:
        return await _run_inside(pool, box, box.inside, call)
    try:
        return await _run_host(pool, box, call, supervised=True)
    except SupervisorLost as err:
        # its box is discarded (the case did not end normally); a fresh one runs the case
        # from the start by the engine's exec, the path every proof was made for first
        log.info("%s case on %s: supervisor lost (%s): run again by exec",
                 pool.role, box.container.id[:12], err)  # fmt: skip
        pool.stats.supervisor_lost += 1
        return await _run_host(pool, await pool.take(), call, supervised=False)


async def _run_host(pool: Boxes, box: Box, call: CaseCall, *, supervised: bool) -> SideOutcome:
    """The case on a box seen from the host (or, without a view, by the engine's
    `/changes`), run by the box's supervisor when it has one and `supervised`."""
    workdir = call.workdir
    c, view = box.container, box.view
    supervisor = box.supervisor if supervised else None
    state: BoxState = "fallback" if view is None else ("reused" if box.cases_served else "fresh")
    res: ExecResult | None = None
    seen = _Aftermath()
    try:
        # Every host-side walk and hash runs in a thread: never on the event loop.
        if call.files and view is not None:
            await asyncio.to_thread(write_fixtures, box, call.files)
        elif call.files:
            await c.put_files({f"{workdir}/{p}": t.encode() for p, t in call.files.items()})
        prep = ""
        if call.prep:
            prep = prep_failure(await c.exec(call.prep_argv or [], workdir=workdir, timeout_s=30))
        touched = bool(call.files or call.prep)
        before_work: dict[str, Entry] = {}
        before_states = box.base_states
        if view is not None and touched:
            before_work = await asyncio.to_thread(walk_work, box, workdir)
        if view is not None:
            before = box.pristine
            if call.prep:
                before, before_states = await asyncio.to_thread(host_snapshot, box)
        elif not touched and box.baseline is not None:
            before = box.baseline
        else:
            before = await fallback_snapshot(pool.docker, c)
        keep = box.base_procs or {box.init_pid}
        stop = (lambda: kill_extras(view, keep)) if view is not None else (lambda: False)
        async with LayerWatch(view.upper if view else None, c.disk, stop) as watch:
            if supervisor is not None:
                try:
                    res = await supervisor.run(
                        case_argv(call.argv, call.timeout_s), stdin=call.stdin,
                        workdir=workdir, timeout_s=call.timeout_s, cap_bytes=call.compare_cap,
                        kill_after_bytes=call.output_limit,
                    )  # fmt: skip
                except SupervisorLost:
                    if await c.running() is None:  # the box itself is gone: engine trouble
                        raise BoxError(f"No such container: {c.id} (gone mid-case)") from None
                    raise
                pool.stats.supervised += 1
            else:
                res = await c.exec(
                    call.argv, stdin=call.stdin, workdir=workdir, timeout_s=call.timeout_s,
                    cap_bytes=call.compare_cap, kill_after_bytes=call.output_limit,
                )  # fmt: skip
        try:
            if await _box_died(box, res):
                seen = await _died(box)
            elif view is not None:
                seen = await _observe(call, box, view, before, before_states, before_work)
            else:
                oom = res.exit_code == 137 and not res.timed_out and await _oom_killed(c)
                diff = fallback_diff(before, await fallback_snapshot(pool.docker, c))
                seen = _Aftermath(oom=oom, changes=_changes(call, diff))
        except ENGINE_TROUBLE:
            if not await c.died():
                raise
            seen = await _died(box)  # it died while we looked (a delayed `kill -9 -1`)
        if watch.tripped:  # the host stopped the box at its limit: the full disk is the
            # verdict; what still runs is what that stop killed and had not yet ended
            seen.disk_full, seen.left = True, 0
    finally:
        await pool.release(
            box, after=seen.after, result=res if res is not None else ExecResult(None, b"", b"")
        )
    return _outcome(res, seen, state, prep)


async def _run_inside(pool: Boxes, box: Box, inside: Inside, call: CaseCall) -> SideOutcome:
    """The case on a box our walker sees from inside: fixtures unpacked and the baseline
    walk taken in one exec, the case, then one look that stops what it left, walks, and
    empties the work directory (the box is reused if that look proves it untouched)."""
    c, workdir = box.container, call.workdir
    state: BoxState = "reused" if box.cases_served else "fresh"
    res: ExecResult | None = None
    seen = _Aftermath()
    after: Look | None = None
    try:
        before, prefix, prep = inside.base, None, ""
        if call.prep:
            if call.files:
                await unpack(c, call.files, workdir)
            prep = prep_failure(await c.exec(call.prep_argv or [], workdir=workdir, timeout_s=30))
            before = await inside.again(c)
        elif call.files:
            prefix = fixtures_prefix(call.files, workdir)  # unpacked in the case's own exec
            if prefix is None:
                await unpack(c, call.files, workdir)
            before = inside.predict(call.files, workdir)
        res = await c.exec(
            call.argv, stdin=call.stdin, workdir=workdir, timeout_s=call.timeout_s,
            cap_bytes=call.compare_cap, kill_after_bytes=call.output_limit, prefix=prefix,
        )  # fmt: skip
        if prefix is not None and fixtures_failed(res):
            box.lingering = True  # never reused
            raise BoxError(f"the fixtures could not be unpacked in {c.id[:12]}")
        try:
            if await _box_died(box, res):
                seen = await _died(box)
            else:
                after = await inside.again(c, kill=True, reset=workdir)
                seen = _seen_inside(call, box, inside.base, before, after)
        except ENGINE_TROUBLE:
            if not await c.died():
                raise
            after, seen = None, await _died(box)  # it died while we looked
    finally:
        await pool.release(
            box, after=None, result=res if res is not None else ExecResult(None, b"", b""),
            look=after,
        )  # fmt: skip
    return _outcome(res, seen, state, prep)


def _seen_inside(call: CaseCall, box: Box, base: Look, before: Look, after: Look) -> _Aftermath:
    if after.alive:
        box.lingering = True  # never reused
    touched = before.touched | after.touched  # every other path is as in the baseline
    diff = fold_deletions(fallback_diff(before.entries(touched), after.entries(touched)))
    return _Aftermath(
        oom=after.oom > base.oom >= 0,
        pids_capped=after.pids_max > base.pids_max >= 0,
        left=after.alive,
        changes=_changes(call, diff),
    )


def _outcome(res: ExecResult, seen: _Aftermath, state: BoxState, prep: str = "") -> SideOutcome:
    truncated_out = res.stdout_bytes > len(res.stdout)
    truncated_err = res.stderr_bytes > len(res.stderr)
    side = SideRun(
        exit_code=res.exit_code,
        stdout=_text(res.stdout),
        stderr=_text(res.stderr),
        stdout_bytes=res.stdout_bytes,
        stderr_bytes=res.stderr_bytes,
        stdout_sha256=res.stdout_sha256,
        stderr_sha256=res.stderr_sha256,
        stdout_tail=_text(res.stdout_tail) if truncated_out else "",
        stderr_tail=_text(res.stderr_tail) if truncated_err else "",
        timed_out=res.timed_out,
        oom_killed=seen.oom,
        pids_capped=seen.pids_capped,
        overflowed=res.overflowed,
        duration_s=round(res.duration_s, 4),
        left_running=seen.left,
        box_died=seen.box_died,
        disk_full=seen.disk_full,
        changes=seen.changes,
        changes_total=seen.changes.total,
        changes_sha256=seen.changes.sha256,
        state=state,
        prep_failed=prep,
    )
    return SideOutcome(side, res.stdout)


async def _observe(
    call: CaseCall,
    box: Box,
    view: HostView,
    before: dict[str, Entry],
    before_states: dict[str, State],
    before_work: dict[str, Entry],
) -> _Aftermath:
    """After the case, with a host view: what still runs (counted, then held still so
    nothing changes what we walk; such a box is discarded), the limits it hit, whether its
    disk is full, and its side effects."""
    seen = _Aftermath()
    settled, alive = (False, 0)
    if box.base_procs:
        await let_dying_end(view, box.base_procs)  # killed is not left running (issue 39)
        settled, alive = await settle(view, box.base_procs)
    if not settled:
        box.lingering = True
        seen.left = max(alive, left_running(view, box.base_procs or {box.init_pid}))
        await hold_still(box)
    seen.oom = view.oom_kills() > box.base_oom
    seen.pids_capped = view.pids_limit_hits() > box.base_pid_hits
    if box.container.disk is not None:
        used = await asyncio.to_thread(full_bytes, view.upper, box.container.disk)
        seen.disk_full = used is not None
    seen.after, diff = await asyncio.to_thread(
        host_effects, box, call.workdir, before, before_states, before_work
    )
    seen.changes = _changes(call, diff)
    return seen


def _changes(call: CaseCall, diff: dict[str, Change]) -> FileChanges:
    return to_file_changes(diff, workdir=call.workdir, ignore=call.ignore, noise=ENGINE_NOISE)


async def _box_died(box: Box, res: ExecResult) -> bool:
    """Whether the case ended every process of its box, its init's keepalive with them (the
    box stops). Seen from the host at once when it can; else the engine is asked after an
    exit code that says so (a signal's, or none)."""
    return await box.container.died(hint=res.exit_code is None or res.exit_code >= 126)


async def _died(box: Box) -> _Aftermath:
    """A box the case killed: out of memory (the engine says, once it has seen the box
    stop) or by its own hand. Its side effects are not walked (its tmpfs work directory
    went with it); its layer stays on the host until it is removed, so a full disk is
    still seen."""
    box.lingering = True  # never reused
    await box.container.wait_stopped()
    seen = _Aftermath(box_died=True, oom=await _oom_killed(box.container))
    if box.view is not None and box.container.disk is not None:
        used = await asyncio.to_thread(full_bytes, box.view.upper, box.container.disk)
        seen.disk_full = used is not None
    return seen


async def _oom_killed(c: Container) -> bool:
    info = await c.raw.show()
    return bool(info.get("State", {}).get("OOMKilled"))
