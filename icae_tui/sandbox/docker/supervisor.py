"""A pooled box's cases without an engine round trip each: our supervisor in the box.

`docker exec` costs about three engine calls per case and side (create, start, inspect),
and the engine and its runtime spend more CPU on them than a small case spends running. So
on a local engine each pooled box gets our static supervisor (`assets/icae-super.c`), started
once by one attached exec; each case is then one request on that exec's stream and its
output and exit status come back on it (the frames are described in the C source).

What the supervisor reports is only output and an exit status, as `docker exec` would; every
proof about the box (the writable layer, processes, `/dev`, IPC, the work folder) is still
taken from the host by `cases.py`. The supervisor is checked from the host like the init
and keepalive: its pid, start time and binary (by device and inode) are part of the box's
identity after every case, and it must be asleep, waiting for the next request. A case runs
as root like the supervisor (a box has no other user that could run it), so a case can
signal it; it cannot ptrace it, read or write its memory or reach its channel (non-dumpable,
no capabilities, close-on-exec). A supervisor that is gone, stopped, changed, silent past the
case's timeout or that could not start the case raises `SupervisorLost`: the box is
discarded and the case runs again on the engine's exec (`cases.py`).

A case can stop its supervisor (SIGSTOP: it cannot be caught), and a stopped supervisor
sees nothing: the case may then "end" in its report whenever something of it sends SIGCONT.
So its state is watched from the host while a case runs, and it reports every SIGCONT it
got (a 'C' frame: a stop too short to be seen); either way the case is judged by exec, as
if the supervisor had never been there, and at once, not when the watchdog fires. The
case's clock is the host's in any case: from the request sent to the exit frame read
(`capture.exec_result`).

The channel is the exec's hijacked HTTP connection on the engine's Unix socket, opened here
rather than through aiodocker: each box holds one for its whole life, and aiodocker's pool
of connections (100) would be exhausted by a few hundred boxes at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import struct
import time
from pathlib import Path

import aiohttp

from icae_tui.sandbox.base import ExecResult
from icae_tui.sandbox.capture import DEFAULT_ENV, Capture, exec_result, feed_until
from icae_tui.sandbox.docker.containers import Container
from icae_tui.sandbox.docker.hostview import HostView, exe_identity, process_state
from icae_tui.sandbox.docker.keepalive import SUPERVISOR

log = logging.getLogger(__name__)

HELLO_WAIT_S = 5.0
WATCHDOG_S = 8.0  # past the case's own timeout: the in-box `timeout` has had every chance
STOP_POLL_S = 0.05  # the longest between two looks at the supervisor's state during a case
_HEAD = struct.Struct("<cI")  # our frames: type, length
_MUX = struct.Struct(">BxxxL")  # the engine's: stream, length


class SupervisorLost(Exception):
    """The supervisor could not run the case, or is not to be trusted with another."""


def binary_identity(folder: Path) -> tuple[int, int] | None:
    """Device and inode of the supervisor in the keepalive folder; None when it holds none."""
    try:
        st = os.stat(folder / "super")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _box_pid(pid: int) -> int | None:
    """The pid a host process has in its own (innermost) namespace."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


class Channel:
    """An exec's attached streams over the engine's Unix socket: what we write is its
    stdin, its stdout comes back demultiplexed (stderr is kept for diagnostics only)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._out = bytearray()
        self.stderr = bytearray()

    @classmethod
    async def open(cls, socket_path: str, api_version: str, exec_id: str) -> Channel:
        reader, writer = await asyncio.open_unix_connection(socket_path)
        try:
            body = json.dumps({"Detach": False, "Tty": False}).encode()
            writer.write(
                f"POST /{api_version}/exec/{exec_id}/start HTTP/1.1\r\nHost: docker\r\n"
                f"Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b" ", 2)[1] if head.startswith(b"HTTP/") else b""
            if status not in (b"101", b"200"):
                raise SupervisorLost(f"the engine refused to attach: {head[:200]!r}")
        except BaseException:
            writer.close()
            raise
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def frame(self) -> tuple[bytes, bytes]:
        """The supervisor's next frame (type, payload)."""
        while True:
            if len(self._out) >= _HEAD.size:
                kind, size = _HEAD.unpack_from(self._out)
                if len(self._out) >= _HEAD.size + size:
                    data = bytes(self._out[_HEAD.size : _HEAD.size + size])
                    del self._out[: _HEAD.size + size]
                    return kind, data
            stream, size = _MUX.unpack(await self._reader.readexactly(_MUX.size))
            chunk = await self._reader.readexactly(size)
            if stream == 1:
                self._out += chunk
            else:
                self.stderr = (self.stderr + chunk)[-4096:]

    def close(self) -> None:
        self._writer.close()


class Supervisor:
    """Our supervisor in one box, as the host knows it."""

    def __init__(self, channel: Channel, host_pid: int) -> None:
        self.channel = channel
        self.host_pid = host_pid
        self.broken = False  # its channel is in no known state: the box must go

    @classmethod
    async def start(
        cls, c: Container, view: HostView, identity: tuple[int, int], known: set[int]
    ) -> Supervisor:
        """Started in `c`, and found from the host: the one process of the box besides
        `known`, running our binary, whose pid in the box is the one it says it has."""
        connector = c.docker.connector
        if not isinstance(connector, aiohttp.UnixConnector):
            raise SupervisorLost("the engine is not on a Unix socket")
        socket_path = connector.path
        ex = await c.raw.exec([SUPERVISOR], stdin=True, environment=dict(DEFAULT_ENV), workdir="/")
        channel = await Channel.open(socket_path, c.docker.api_version, ex.id)
        try:
            async with asyncio.timeout(HELLO_WAIT_S):
                kind, data = await channel.frame()
            if kind != b"H" or len(data) != 4:
                raise SupervisorLost(f"no hello from the supervisor: {kind!r}")
            (box_pid,) = struct.unpack("<I", data)
            mine = [
                p
                for p in (view.procs() or set()) - known
                if exe_identity(p) == identity and _box_pid(p) == box_pid
            ]
            if len(mine) != 1:
                raise SupervisorLost("the supervisor is not the box's one new process")
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as err:
            channel.close()
            raise SupervisorLost(f"the supervisor did not start: {err!r}") from err
        except BaseException:
            channel.close()
            raise
        return cls(channel, mine[0])

    def stopped(self) -> bool:
        """Stopped (by a case's signal), dying or gone."""
        return process_state(self.host_pid) in ("T", "t", "Z", "X", "")

    async def run(
        self,
        argv: list[str],
        *,
        stdin: bytes | None,
        workdir: str,
        timeout_s: float,
        cap_bytes: int,
        kill_after_bytes: int | None,
    ) -> ExecResult:
        """One case, as `Container.exec` runs it (the same argv, already wrapped in its
        in-box `timeout`); SupervisorLost when the supervisor failed it, or was stopped."""
        if self.broken:
            raise SupervisorLost("its channel was left mid-case")
        self.broken = True  # until the case's exit status is read
        parts = [workdir.encode(), *(a.encode() for a in argv)]
        body = struct.pack("<II", len(argv), stdin is not None) + b"".join(p + b"\0" for p in parts)
        body += stdin or b""
        out, err = Capture(cap_bytes), Capture(cap_bytes)
        started = time.monotonic()  # before the request: the in-box `timeout` starts after
        reading = asyncio.ensure_future(self._exchange(body, out, err, kill_after_bytes))
        watching = asyncio.ensure_future(self._until_stopped())
        try:
            done, _ = await asyncio.wait(
                (reading, watching), timeout=timeout_s + WATCHDOG_S,
                return_when=asyncio.FIRST_COMPLETED,
            )  # fmt: skip
        finally:
            for task in (reading, watching):
                task.cancel()
            await asyncio.gather(reading, watching, return_exceptions=True)
        if reading not in done:
            raise SupervisorLost(
                "stopped by its case" if watching in done else "silent past the case's timeout"
            )
        try:
            exit_code, overflowed, ended = reading.result()
        except (OSError, asyncio.IncompleteReadError) as err_:
            raise SupervisorLost(f"its channel ended: {err_!r}") from err_
        return exec_result(
            out, err, exit_code, ended - started, timeout_s=timeout_s,
            watchdog_fired=False, overflowed=overflowed,
        )  # fmt: skip

    async def _exchange(
        self, body: bytes, out: Capture, err: Capture, kill_after_bytes: int | None
    ) -> tuple[int | None, bool, float]:
        """The request sent and its frames read: the exit status (None when the output
        overflowed first), whether it did, and when the exchange ended (host clock)."""
        await self.channel.send(_HEAD.pack(b"R", len(body)) + body)
        while True:
            kind, data = await self.channel.frame()
            if kind in (b"O", b"E"):
                stream = 1 if kind == b"O" else 2
                if feed_until(out, err, stream, data, kill_after_bytes):
                    return None, True, time.monotonic()  # the box is discarded, the case too
            elif kind == b"X" and len(data) == 4:
                (exit_code,) = struct.unpack("<I", data)
                self.broken = False
                return exit_code, False, time.monotonic()
            elif kind == b"C":
                raise SupervisorLost("stopped by its case (and continued)")
            elif kind == b"F":
                raise SupervisorLost(f"could not start the case: {data.decode(errors='replace')}")
            else:
                raise SupervisorLost(f"an unknown frame {kind!r}")

    async def _until_stopped(self) -> None:
        """Returns once the supervisor is seen stopped (it can no longer tell the case's end);
        looked at often at first, when most cases end, then every STOP_POLL_S."""
        delay = 0.001
        while process_state(self.host_pid) not in ("T", "t"):
            await asyncio.sleep(delay)
            delay = min(delay * 2, STOP_POLL_S)

    def close(self) -> None:
        self.broken = True
        with contextlib.suppress(Exception):
            self.channel.close()
