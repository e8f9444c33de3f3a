"""A keepalive that the image under test cannot replace.

A case box must outlive its cases, so something runs in it between them: an init and a
`sleep`. Both must be ours. The delivery image is a commit of the agent's container, so
every path in it (`sleep`, the dynamic loader, `/etc/ld.so.preload`) is the agent's: a
`sleep` taken from the image is a resident server that sees every case.

So the init and the keepalive are static binaries from the host (Debian's `tini-static`,
which the engine itself uses as docker-init, and `busybox-static`), copied once into a
directory named by their digest and bind-mounted read-only at `/dev/.icae`: `/dev` is the
runtime's tmpfs, never a path from the image. The copies are mode 0111: a process can run
them but not read them, which makes the kernel mark it non-dumpable, so a case (root, but
with no capabilities) can neither ptrace them nor write their memory through /proc.

Where this host can build static C, the folder also holds our case supervisor
(`assets/icae-super.c`, `supervisor.py`), which then runs a pooled box's cases.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import stat
import struct
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

KEEPALIVE_DIR = "/dev/.icae"  # where the container sees the host directory
INIT = f"{KEEPALIVE_DIR}/init"
BUSYBOX = f"{KEEPALIVE_DIR}/busybox"  # busybox picks its applet from argv[1] only under this name
SUPERVISOR = f"{KEEPALIVE_DIR}/super"
ASSETS = Path(__file__).resolve().parent.parent / "assets"

_SOURCES: dict[str, tuple[str, ...]] = {
    "init": ("/usr/bin/tini-static", "/usr/bin/docker-init", "/usr/libexec/docker/docker-init"),
    "busybox": ("/bin/busybox", "/usr/bin/busybox"),
}
PT_INTERP = 3


def is_static_elf(path: str) -> bool:
    """A 64-bit little-endian ELF executable without a program interpreter (no loader)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return False
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    if len(table) < phentsize * phnum:
        return False
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != PT_INTERP for i in range(phnum))


def _find(name: str) -> str | None:
    for candidate in _SOURCES[name]:
        real = os.path.realpath(candidate)
        if is_static_elf(real):
            return real
    return None


def _home() -> Path:
    env = os.environ.get("ICAE_KEEPALIVE_HOME")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/icae-tui/keepalive")
    data = os.environ.get("XDG_DATA_HOME", str(Path.home() / ".local" / "share"))
    return Path(data) / "icae-tui" / "keepalive"


def _valid(folder: Path, digests: dict[str, str]) -> bool:
    """The folder is ours, unwritable, and holds exactly the copies we made."""
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            return False
        if stat.S_IMODE(st.st_mode) != 0o555 or sorted(os.listdir(folder)) != sorted(digests):
            return False
        for name, digest in digests.items():
            fst = os.lstat(folder / name)
            if not stat.S_ISREG(fst.st_mode) or stat.S_IMODE(fst.st_mode) != 0o111:
                return False
            if fst.st_uid != os.geteuid():
                return False
            if hashlib.sha256((folder / name).read_bytes()).hexdigest() != digest:
                return False
    except OSError:
        return False
    return True


def static_binaries() -> dict[str, bytes] | None:
    """The host's static init and busybox, or None when one is missing."""
    sources = {name: _find(name) for name in _SOURCES}
    if None in sources.values():
        return None
    return {name: Path(src).read_bytes() for name, src in sources.items() if src}


@functools.cache
def compile_static(source: Path) -> bytes | None:
    """`source` (one C file of ours) built static here, or None without gcc and a static
    libc: the caller then goes without that tool."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        log.info("no C compiler: %s is not built", source.name)
        return None
    # built once per source and compiler, kept in our home (a build takes a few tenths of
    # a second, paid by the first box of every process otherwise)
    real, text = os.path.realpath(cc), source.read_bytes()
    cc_stat = os.stat(real)
    key = hashlib.sha256(text + f"{real}:{cc_stat.st_size}:{cc_stat.st_mtime_ns}".encode())
    cached = _home() / "built" / f"{source.stem}-{key.hexdigest()[:24]}"
    if is_static_elf(str(cached)):
        return cached.read_bytes()
    with tempfile.TemporaryDirectory(prefix="icae-cc-") as tmp:
        binary = Path(tmp) / source.stem
        try:
            subprocess.run(
                [cc, "-static", "-O2", "-o", str(binary), str(source)],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as err:
            detail = getattr(err, "stderr", b"") or b""
            log.info("cannot build %s: %s %s", source.name, err, detail.decode()[-300:])
            return None
        built = binary.read_bytes()
    with contextlib.suppress(OSError):  # no cache: built again next time
        cached.parent.mkdir(parents=True, exist_ok=True)
        part = cached.with_name(f".{cached.name}.{os.getpid()}")
        part.write_bytes(built)
        os.replace(part, cached)  # atomic: a console racing us built the same bytes
    return built


@functools.cache
def host_keepalive() -> Path | None:
    """The host directory to bind at KEEPALIVE_DIR, or None when the static binaries are
    missing (`scripts/engine.sh` installs them): then no case box is ever reused. The case
    supervisor joins them when it builds here (`ICAE_NO_SUPERVISOR=1`: never)."""
    blobs = static_binaries()
    if blobs is None:
        log.warning("no static tini/busybox on this host: case containers are never reused")
        return None
    if not os.environ.get("ICAE_NO_SUPERVISOR"):
        supervisor = compile_static(ASSETS / "icae-super.c")
        if supervisor is not None:
            blobs["super"] = supervisor
    return install_folder(blobs)


def install_folder(blobs: dict[str, bytes]) -> Path | None:
    """A folder of our home holding exactly `blobs`, each mode 0111, named by their digests
    (made once, atomically; checked every time it is handed out)."""
    digests = {name: hashlib.sha256(b).hexdigest() for name, b in blobs.items()}
    tag = hashlib.sha256("".join(sorted(digests.values())).encode()).hexdigest()[:16]
    home = _home()
    final = home / tag
    if _valid(final, digests):
        return final
    try:
        home.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=home))
        for name, blob in blobs.items():
            (tmp / name).write_bytes(blob)
            os.chmod(tmp / name, 0o111)
        os.chmod(tmp, 0o555)
        try:
            os.rename(tmp, final)  # atomic: a console racing us made the same bytes
        except OSError:
            os.chmod(tmp, 0o755)
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as err:
        log.warning("cannot prepare %s in %s: %s", sorted(blobs), home, err)
        return None
    return final if _valid(final, digests) else None
