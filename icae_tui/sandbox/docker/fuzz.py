"""Third-party Python run once in a throwaway box, for an importer: e.g. a CLI-Tool-Bench
fuzzer that generates a task's cases (importers/cli_tool_bench.py). Never on the host.

The box is hardened like every case box (no capabilities, no network, bounded memory, pids
and time) and made from the base image (Debian with python3); the files are copied in, one
command runs, its stdout comes back bounded (past the bound the process is killed and the
result says `overflowed`). What the code printed is the caller's to validate.
"""

from __future__ import annotations

from icae_tui.sandbox.base import ExecResult, Limits
from icae_tui.sandbox.docker.containers import create_container
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import BASE_IMAGE, ensure_base_image

FUZZ_LIMITS = Limits(ttl_s=900)


async def run_once(
    files: dict[str, bytes], argv: list[str], *, workdir: str, env: dict[str, str],
    timeout_s: float, cap_bytes: int, image: str = BASE_IMAGE,
) -> ExecResult:  # fmt: skip
    """Copy `files` (absolute paths) into a fresh box of `image`, run `argv` there, remove it."""
    docker = await connect()
    try:
        await ensure_base_image(docker, name=image)
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
