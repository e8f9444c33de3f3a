"""Starting, finding and stopping a local model's llama.cpp server.

A server listens on 127.0.0.1 only, on a free port, and asks a random API key (kept in its
state file, mode 0600) so that other users of the machine cannot use it; its state file
says where it is. `icae models start` leaves it running for later runs; a run (or the
console) that finds none starts one and stops it when it ends (the console: when it
quits), never one it did not start."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from icae_tui.errors import ConfigError
from icae_tui.local_models.binary import find_server
from icae_tui.local_models.catalog import MODELS, LocalModel, known
from icae_tui.local_models.install import is_installed
from icae_tui.local_models.paths import log_file, model_file, running_file

READY_TIMEOUT_S = 180.0  # loading 1 GB from a cold disk on a busy machine
STOP_TIMEOUT_S = 10.0
LOG_TAIL = 6
KEY_ENV_PREFIX = "ICAE_LOCAL_MODEL_KEY_"  # the variable the run's gateway reads the key from


class LocalModelError(ConfigError):
    """A local model cannot be served; the message says what to do."""


@dataclass(frozen=True)
class Running:
    """A serving local model, as its state file records it."""

    model: str
    pid: int
    base_url: str  # OpenAI-compatible, ends in /v1
    api_key: str
    binary: str
    started_at: float
    owner: str  # who started it: `icae models start`, a run, the console

    @property
    def key_env(self) -> str:
        """The environment variable a gateway in this process reads the key from."""
        return KEY_ENV_PREFIX + "".join(c if c.isalnum() else "_" for c in self.model).upper()

    def export_key(self) -> str:
        os.environ[self.key_env] = self.api_key
        return self.key_env


def resolve(name: str) -> LocalModel:
    model = MODELS.get(name)
    if model is None:
        raise LocalModelError(f"no local model {name!r} (known: {known()})")
    return model


def not_ready(model: LocalModel, environ: Mapping[str, str] | None = None) -> str:
    """What is missing before `model` can be served ('' when nothing): the command to run."""
    missing = []
    if not is_installed(model, environ):
        missing.append("the model")
    if find_server(environ) is None:
        missing.append("the llama.cpp server")
    if not missing:
        return ""
    return f"{' and '.join(missing)} not installed: run `icae models install {model.name}`"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        pass
    return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def running(model: LocalModel, environ: Mapping[str, str] | None = None) -> Running | None:
    """The model's server if its state file names a live process serving that model (a
    stale file, of a process gone or a pid reused, is removed)."""
    path = running_file(model, environ)
    try:
        state = Running(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):
        path.unlink(missing_ok=True)
        return None
    if _alive(state.pid) and str(model_file(model, environ)) in _cmdline(state.pid):
        return state
    path.unlink(missing_ok=True)
    return None


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(base: str) -> int | None:
    """The HTTP status of GET /health (503 while loading), None when nothing answers."""
    try:
        with urllib.request.urlopen(base + "/health", timeout=2) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, ValueError):
        return None


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL:])


async def start(
    model: LocalModel,
    *,
    owner: str,
    detached: bool = False,
    threads: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Running:
    """Start the model's server (or return the one already serving it) and wait until it
    answers /health; a server that exits or never gets ready is reported with its log's
    last lines. Unless `detached` (`icae models start`), the server dies with this process,
    so a crashed run or console leaves none behind."""
    if (already := running(model, environ)) is not None:
        return already
    if why := not_ready(model, environ):
        raise LocalModelError(f"local model {model.name}: {why}")
    binary = find_server(environ)
    assert binary is not None  # not_ready checked it
    port, key = _free_port(), secrets.token_hex(24)  # hex: never a leading "-" (a flag)
    log = log_file(model, environ)
    log.parent.mkdir(parents=True, exist_ok=True)
    state_path = running_file(model, environ)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        str(binary.path), "-m", str(model_file(model, environ)), "--host", "127.0.0.1",
        "--port", str(port), "--api-key", key, "--alias", model.name,
        "-c", str(model.ctx_size), "-np", str(model.slots), "-kvu",
        "-t", str(threads or os.cpu_count() or 1), "--no-webui",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True,  # its own group: stopped as one, not by our ctrl+c
            preexec_fn=None if detached else _die_with_parent,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    state = Running(model.name, proc.pid, base + "/v1", key, str(binary.path), time.time(), owner)
    fd = os.open(state_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(state), f)
    try:
        return await _ready(model, proc, base, state, log)
    except BaseException:  # cancelled or failed while loading: nothing left behind
        await stop_process(proc.pid)
        state_path.unlink(missing_ok=True)
        raise


async def _ready(
    model: LocalModel, proc: asyncio.subprocess.Process, base: str, state: Running, log: Path
) -> Running:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if proc.returncode is not None or not _alive(proc.pid):
            await proc.wait()
            raise LocalModelError(
                f"local model {model.name}: the server ({state.binary}) exited with "
                f"{proc.returncode} before it was ready; its log ({log}) ends:\n{_tail(log)}"
            )
        if await asyncio.to_thread(_health, base) == 200:
            return state
        if time.monotonic() > deadline:
            raise LocalModelError(
                f"local model {model.name}: not ready after {READY_TIMEOUT_S:.0f} s; its log "
                f"({log}) ends:\n{_tail(log)}"
            )
        # the process ending wakes us at once; else look again shortly
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout=0.25)


async def stop_process(pid: int) -> None:
    """SIGTERM to its process group, then SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                break
        await asyncio.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


async def stop(model: LocalModel, environ: Mapping[str, str] | None = None) -> Running | None:
    """Stop the model's server, whoever started it; what was stopped (None: none ran)."""
    state = running(model, environ)
    if state is None:
        return None
    await stop_process(state.pid)
    running_file(model, environ).unlink(missing_ok=True)
    return state


class LocalServers:
    """This process's leases on local servers: the first lease of a model finds its server
    or starts one; a server this process started stops when its last lease ends — unless
    `linger` (the console: kept for its next run, stopped by `close` when it quits)."""

    def __init__(self) -> None:
        self.linger = False
        self._leases: dict[str, int] = {}
        self._started: dict[str, Running] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def lease(self, name: str, *, owner: str) -> AsyncIterator[Running]:
        model = resolve(name)
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            found = running(model)
            if found is None:
                found = await start(model, owner=owner)
                self._started[name] = found
            self._leases[name] = self._leases.get(name, 0) + 1
        try:
            yield found
        finally:
            async with lock:
                self._leases[name] -= 1
                if not self._leases[name] and not self.linger and name in self._started:
                    await self._stop_started(name)

    async def _stop_started(self, name: str) -> None:
        mine = self._started.pop(name)
        state = running(resolve(name))
        if state is not None and state.pid == mine.pid:  # never one someone else started
            await stop(resolve(name))

    async def close(self) -> None:
        """Stop every server this process started (the console quitting)."""
        for name in list(self._started):
            await self._stop_started(name)
        self._locks.clear()  # asyncio locks belong to one event loop; the next may differ


SERVERS = LocalServers()  # this process's
