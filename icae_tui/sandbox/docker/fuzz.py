"""Third-party Python run once in a throwaway box, for an importer: e.g. a CLI-Tool-Bench
fuzzer that generates a task's cases (importers/cli_tool_bench.py). Never on the host.

The box is hardened like every case box (no capabilities, no network, bounded memory, pids
and time) and made from the trixie base image (Debian with python3 3.13); the files are copied in, one
command runs, its stdout comes back bounded (past the bound the process is killed and the
result says `overflowed`). What the code printed is the caller's to validate.

A fuzzer that imports third-party modules (`[fuzz] requires`, e.g. `pip:PyYAML`) runs in a
fuzz image instead: the base with the clients (pip, npm) from Debian and the requirements
installed, built once per (base, requirements) in a build container that reaches the
registries (that build only) and tagged `icae-fuzz:<hash>`. The fuzzer's own box still has
no network.
"""

from __future__ import annotations

import hashlib

import aiodocker

from icae_tui.domain.runtimes import Release, Runtime
from icae_tui.sandbox.base import ExecResult, Limits, ProgressFn
from icae_tui.sandbox.docker.containers import create_container
from icae_tui.sandbox.docker.engine import LABEL_TOOL, TOOL_NAME, connect
from icae_tui.sandbox.docker.images import (
    IMAGE_BUILD,
    ensure_base_image,
    ensure_runtime_image,
    image_exists,
)
from icae_tui.sandbox.docker.requires import (
    clients_probe,
    debian_clients,
    install_requires,
)

FUZZ_LIMITS = Limits(ttl_s=900)
# CLI-Tool-Bench runs its fuzzers on python:latest: trixie's 3.13, not bookworm's 3.11
FUZZ_BASE = Release.TRIXIE.base
FUZZ_REPO = "icae-fuzz"


def fuzz_image_name(base_id: str, requires: list[str]) -> str:
    """Named by what is in it: the image it is made from and the requirements (any order)."""
    h = hashlib.sha256("\0".join([base_id, *sorted(set(requires))]).encode()).hexdigest()[:16]
    return f"{FUZZ_REPO}:{h}"


async def ensure_fuzz_image(
    docker: aiodocker.Docker, base: str, requires: list[str],
    progress: ProgressFn = lambda _m: None,
) -> str:  # fmt: skip
    """`base` with the clients and `requires` installed; built only when missing."""
    clients = Runtime("fuzz-clients", tuple(debian_clients(requires)), clients_probe(requires))
    with_clients = await ensure_runtime_image(docker, base, clients, progress)
    name = fuzz_image_name((await docker.images.inspect(with_clients))["Id"], requires)
    if await image_exists(docker, name):
        return name
    progress(f"installing the fuzzer's requirements into {name}; this happens once")
    c = await create_container(
        docker, with_clients, run_id="import", role="build", hardened=False,
        limits=IMAGE_BUILD, network="bridge",
    )  # fmt: skip
    try:
        await install_requires(c, requires, progress, name, field="[fuzz] requires")
        repo, tag = name.split(":", 1)
        await c.commit(repo, tag, {LABEL_TOOL: TOOL_NAME, "icae.role": "fuzz",
                                   "icae.fuzz.requires": " ".join(sorted(set(requires)))})  # fmt: skip
    finally:
        await c.remove()
    return name


async def ensure_task_code_image(
    docker: aiodocker.Docker, requires: list[str], progress: ProgressFn = lambda _m: None
) -> str:
    """The image a task's own Python (a fuzzer, a sanitizer) runs in: the fuzz base, with
    `requires` when it has any."""
    await ensure_base_image(docker, progress, name=FUZZ_BASE)
    return await ensure_fuzz_image(docker, FUZZ_BASE, requires, progress) if requires else FUZZ_BASE


async def run_once(
    files: dict[str, bytes], argv: list[str], *, workdir: str, env: dict[str, str],
    timeout_s: float, cap_bytes: int, image: str = FUZZ_BASE, requires: list[str] | None = None,
    progress: ProgressFn = lambda _m: None,
) -> ExecResult:  # fmt: skip
    """Copy `files` (absolute paths) into a fresh box of `image` (with `requires` installed),
    run `argv` there, remove it. ImageBuildError when the requirements do not install."""
    docker = await connect()
    try:
        await ensure_base_image(docker, name=image)
        if requires:
            image = await ensure_fuzz_image(docker, image, requires, progress)
        box = await create_container(
            docker, image, run_id="import", role="fuzz", limits=FUZZ_LIMITS, network="none"
        )
        try:
            await box.put_files(files)
            return await box.exec(
                argv, workdir=workdir, env=env, timeout_s=timeout_s, cap_bytes=cap_bytes,
                kill_after_bytes=cap_bytes,
            )  # fmt: skip
        finally:
            await box.remove()
    finally:
        await docker.close()
