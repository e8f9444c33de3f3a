"""A second Docker engine on this machine, as a remote one: its own `dockerd` with its own data
root, exec root and Unix socket, answering on a loopback TCP port (`tcp://` is not a local
socket to the docker backend, so it mounts nothing of this host and relays the channels),
with a bridge of its own (never `--bridge none`: a dockerd started so deletes `docker0`,
the first engine's bridge, on its way up) and no iptables of its own. The base images, and the
python recipe's runtime image when the first engine has it, are copied into it from the first
engine (`docker save | docker load`): with no iptables its build containers cannot reach the
Debian mirror, so a runtime it had to build would wait on apt for ever."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from icae_tui.domain.runtimes import Release, recipe_for
from icae_tui.sandbox.docker.images import runtime_image_name

START_S = 60.0


@dataclass(frozen=True)
class SecondEngine:
    url: str  # tcp://127.0.0.1:PORT
    socket: Path  # its Unix socket (for the docker CLI, say)
    folder: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """The engine goes away (SIGTERM: it stops its containers and exits), as an engine
        lost mid-batch does; returns at once."""
        self.process.terminate()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["docker", "-H", f"unix://{self.socket}", *args],
                              capture_output=True, text=True, check=False)  # fmt: skip


def _images_to_copy() -> list[str]:
    """The Debian bases and the python runtime on its release's: those the first engine has."""
    names = [Release.BOOKWORM.base, Release.TRIXIE.base]
    python = recipe_for("python")
    base = python.release.base if python is not None else Release.BOOKWORM.base
    found = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", base],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if python is not None and found.returncode == 0:
        names.append(runtime_image_name(found.stdout.strip(), python))
    have = [n for n in names if subprocess.run(["docker", "image", "inspect", n],
                                               capture_output=True, check=False).returncode == 0]
    if Release.BOOKWORM.base not in have:
        raise RuntimeError(f"the first engine has no {Release.BOOKWORM.base} to copy")
    return have


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_subnet(port: int) -> int:
    """The third number of a 10.213.N.0/24 no interface has yet: second engines of other test
    workers may be up beside this one."""
    shown = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True,
                           check=False).stdout  # fmt: skip
    taken = {int(n) for n in re.findall(r"inet 10\.213\.(\d+)\.", shown)}
    return next(n for n in (*range(port % 250, 250), *range(port % 250)) if n not in taken)


def _has_link(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def _answers(sock: Path) -> bool:
    done = subprocess.run(["docker", "-H", f"unix://{sock}", "version", "--format",
                           "{{.Server.Version}}"], capture_output=True, check=False)  # fmt: skip
    return done.returncode == 0


@contextlib.contextmanager
def second_engine() -> Iterator[SecondEngine]:
    had_docker0 = _has_link("docker0")
    # the pid in its name: tests/isolation.py finds it if it is left behind
    folder = Path(tempfile.mkdtemp(prefix=f"icae-engine2-{os.getpid()}-"))
    sock, port = folder / "docker.sock", _free_port()
    bridge = f"icaebr{port}"  # at most 15 characters, as interface names are
    for step in (["link", "add", bridge, "type", "bridge"],
                 ["addr", "add", f"10.213.{_free_subnet(port)}.1/24", "dev", bridge],
                 ["link", "set", bridge, "up"]):  # fmt: skip
        subprocess.run(["ip", *step], check=True, capture_output=True)
    log = (folder / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        ["dockerd", "--data-root", str(folder / "data"), "--exec-root", str(folder / "exec"),
         "--pidfile", str(folder / "docker.pid"), "-H", f"unix://{sock}",
         "-H", f"tcp://127.0.0.1:{port}", "--tls=false", "--bridge", bridge,
         "--iptables=false", "--ip6tables=false", "--storage-driver", "overlay2"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + START_S
        while not _answers(sock):  # the engine's own readiness: its API answers
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the second dockerd did not start:\n"
                                   + (folder / "dockerd.log").read_text()[-2000:])  # fmt: skip
            time.sleep(0.1)
        save = subprocess.Popen(["docker", "save", *_images_to_copy()], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", f"unix://{sock}", "load"], stdin=save.stdout,
                              capture_output=True, check=False)  # fmt: skip
        save.wait()
        if load.returncode != 0 or save.returncode != 0:
            raise RuntimeError(f"the base image did not reach the second engine: {load.stderr!r}")
        yield SecondEngine(f"tcp://127.0.0.1:{port}", sock, folder, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        subprocess.run(["umount", "-R", str(folder / "data")], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)
        if had_docker0 and not _has_link("docker0"):  # the first engine's bridge must survive
            raise RuntimeError("the second engine removed docker0, the first engine's bridge")
