"""The run's channels into a box on a remote engine, over the engine's own connection.

On a local engine a run's channels (the clarification socket, the model gateway's) are host
folders bind-mounted into the agent's box. A remote engine cannot mount this host's folders,
so nothing is mounted: the box gets the relay (`sandbox/assets/icae-relay`, python3 stdlib,
like the box's other helpers), exec'd with stdin and stdout attached. It listens on the
sockets' paths inside the box and sends each connection made there over the exec stream;
here, each is connected to the socket in the channel's host folder, and bytes are copied
both ways. The box's network stays `none` — the exec stream is the engine API's.

The frames are the relay's (its docstring): a 9-byte header (connection id, kind, length)
then the payload. The relay runs as root in the box, so the agent's user cannot replace it;
an agent that is root in its box and kills it loses its own channels, as it would by
killing anything else of its box.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from pathlib import Path

import aiodocker.stream

from icae_tui.errors import BoxError
from icae_tui.sandbox.base import Channel
from icae_tui.sandbox.docker.containers import Container

log = logging.getLogger(__name__)

ASSET = Path(__file__).resolve().parent.parent / "assets" / "icae-relay"
BOX_PATH = "/usr/local/libexec/icae-relay"  # where the box gets it (root's, mode 0755)
HEADER = struct.Struct(">IBI")
READY, OPEN, DATA, CLOSE = 0, 1, 2, 3
CHUNK = 64 * 1024
READY_S = 20.0  # for python3 to start in a loaded box


def relayed_sockets(channels: tuple[Channel, ...]) -> list[tuple[Path, str]]:
    """Each channel's socket: (its host path, its path in the box). A channel's folder holds
    its one socket (the servers make it so, for the reaper's sake)."""
    out = []
    for channel in channels:
        for entry in sorted(channel.host_path.iterdir()):
            if entry.is_socket():
                out.append((entry, f"{channel.box_path.rstrip('/')}/{entry.name}"))
    return out


class FrameReader:
    """Frames out of the exec's stdout, whatever its chunks."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        self._buf += data
        frames = []
        while len(self._buf) >= HEADER.size:
            conn_id, kind, length = HEADER.unpack_from(self._buf)
            if len(self._buf) < HEADER.size + length:
                break
            payload = bytes(self._buf[HEADER.size : HEADER.size + length])
            del self._buf[: HEADER.size + length]
            frames.append((conn_id, kind, payload))
        return frames


async def _deliver(inbox: asyncio.Queue[bytes | None], writer: asyncio.StreamWriter) -> None:
    """The box's bytes to the server here, in order; None: the box closed its side."""
    with contextlib.suppress(ConnectionError, OSError):
        while (data := await inbox.get()) is not None:
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


class ChannelRelay:
    def __init__(self, container: Container, channels: tuple[Channel, ...]) -> None:
        self.container = container
        self.sockets = relayed_sockets(channels)
        self._stream: aiodocker.stream.Stream | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pumps: dict[int, asyncio.Task[None]] = {}
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._inboxes: dict[int, asyncio.Queue[bytes | None]] = {}
        self._ready = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._stderr = bytearray()

    async def start(self) -> None:
        """The relay in the box, its sockets listening; BoxError when it does not start."""
        if not self.sockets:
            return
        await self.container.put_files({BOX_PATH: ASSET.read_bytes()}, mode=0o755)
        ex = await self.container.raw.exec(
            ["python3", BOX_PATH, *(box for _, box in self.sockets)], stdin=True, user="0"
        )
        self._stream = ex.start(detach=False)
        await self._stream.__aenter__()
        self._reader = asyncio.create_task(self._read(), name="icae-relay reader")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait([self._reader, ready], timeout=READY_S,
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        ready.cancel()
        if not self._ready.is_set():
            said = self._stderr.decode("utf-8", "replace").strip()[-500:]
            await self.close()
            raise BoxError(f"the channel relay did not start in the box: {said or 'no answer'}")

    async def _read(self) -> None:
        assert self._stream is not None
        frames = FrameReader()
        while (msg := await self._stream.read_out()) is not None:
            if msg.stream != 1:
                self._stderr += msg.data[-4096:]
                del self._stderr[:-4096]
                continue
            for conn_id, kind, payload in frames.feed(msg.data):
                await self._frame(conn_id, kind, payload)
        log.info("icae-relay ended: %s", self._stderr.decode("utf-8", "replace")[-300:])

    async def _frame(self, conn_id: int, kind: int, payload: bytes) -> None:
        if kind == READY:
            self._ready.set()
        elif kind == OPEN:
            (index,) = struct.unpack(">H", payload)
            # what the box sends is queued until the connection here is made
            queued: asyncio.Queue[bytes | None] = asyncio.Queue()
            self._inboxes[conn_id] = queued
            self._pumps[conn_id] = asyncio.create_task(self._open(conn_id, index, queued))
        elif kind in (DATA, CLOSE) and (inbox := self._inboxes.get(conn_id)) is not None:
            inbox.put_nowait(payload if kind == DATA else None)

    async def _open(self, conn_id: int, index: int, inbox: asyncio.Queue[bytes | None]) -> None:
        """A connection made in the box: connected here to the channel's own socket; the
        box's bytes delivered to it, the server's sent back, until both sides closed."""
        host_socket = self.sockets[index][0] if index < len(self.sockets) else None
        try:
            if host_socket is None:
                raise OSError(f"no socket {index}")
            reader, writer = await asyncio.open_unix_connection(str(host_socket))
        except OSError as err:
            log.warning("icae-relay: %s unreachable: %s", host_socket, err)
            self._inboxes.pop(conn_id, None)
            await self._send(conn_id, CLOSE)
            return
        self._writers[conn_id] = writer
        deliver = asyncio.create_task(_deliver(inbox, writer))
        try:
            while data := await reader.read(CHUNK):
                await self._send(conn_id, DATA, data)
        except (ConnectionError, OSError):
            pass
        finally:
            await self._send(conn_id, CLOSE)
            deliver.cancel()
            await asyncio.gather(deliver, return_exceptions=True)
            self._inboxes.pop(conn_id, None)
            self._writers.pop(conn_id, None)
            writer.close()

    async def _send(self, conn_id: int, kind: int, payload: bytes = b"") -> None:
        if self._stream is None:
            return
        async with self._send_lock:  # a frame is written whole, never interleaved
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._stream.write_in(HEADER.pack(conn_id, kind, len(payload)) + payload)

    async def close(self) -> None:
        tasks = [t for t in (self._reader, *self._pumps.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for writer in self._writers.values():
            writer.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._stream is not None:
            with contextlib.suppress(Exception):
                await self._stream.close()
            self._stream = None
