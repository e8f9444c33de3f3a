"""A command's output as every backend keeps it: both streams apart, byte-exact up to a cap,
counted and hashed whole, with a tail window; and the environment every command starts
with."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from icae_tui.sandbox.base import ExecResult

DEFAULT_ENV = {
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class Digest(Protocol):
    """What we use of a hashlib object (its class is private to hashlib)."""

    def update(self, data: bytes, /) -> None: ...
    def hexdigest(self) -> str: ...


@dataclass
class Capture:
    """Hashes and counts the whole stream; keeps the first `cap` bytes and a tail window."""

    cap: int
    tail_cap: int = 8192
    data: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0
    digest: Digest = field(default_factory=hashlib.sha256)

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.digest.update(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.tail += chunk[-self.tail_cap :]
        del self.tail[: max(0, len(self.tail) - self.tail_cap)]


def feed_until(out: Capture, err: Capture, stream: int, chunk: bytes, limit: int | None) -> bool:
    """`chunk` of `stream` (1 stdout, else stderr) fed, cut where both streams together pass
    `limit` by one byte; whether they have. Cut there, what is kept of an overflowing case
    does not depend on how its output was chunked on the way."""
    if limit is not None:
        chunk = chunk[: max(0, limit + 1 - out.total - err.total)]
    (out if stream == 1 else err).feed(chunk)
    return limit is not None and out.total + err.total > limit


def exec_result(
    out: Capture,
    err: Capture,
    exit_code: int | None,
    duration: float,
    *,
    timeout_s: float,
    watchdog_fired: bool,
    overflowed: bool,
) -> ExecResult:
    """The result of a command run under coreutils `timeout`. Timed out is told by the
    host's clock (`duration`, started before the command was), never by an exit code: a
    program may exit 124 at once, and one that escaped `timeout`'s group can hold the
    command's end past the limit while `timeout` itself exits 0. A `timeout` that fired
    always ends past the limit on this clock."""
    timed_out = watchdog_fired or duration >= timeout_s
    return ExecResult(
        exit_code=exit_code,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        stdout_sha256=out.digest.hexdigest(),
        stderr_sha256=err.digest.hexdigest(),
        stdout_tail=bytes(out.tail),
        stderr_tail=bytes(err.tail),
        timed_out=timed_out and not overflowed,
        truncated=out.total > out.cap or err.total > err.cap,
        overflowed=overflowed,
        duration_s=duration,
    )
