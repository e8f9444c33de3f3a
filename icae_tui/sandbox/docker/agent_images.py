"""Images with a CLI agent installed: the task's agent image + the agent's install lines.

Install lines run once, in a build container that — unlike every other container here —
reaches the package registries (the engine's default bridge network), with the host's CA
bundle so a TLS-inspecting egress proxy is trusted. The result is committed as
`icae-agentx:<hash of base image, version and lines>` and reused by every later run;
the agent itself then runs in a container with network `none` and downloads nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import aiodocker

from icae_tui.errors import ImageBuildError
from icae_tui.sandbox.base import Limits, ProgressFn
from icae_tui.sandbox.docker.containers import Container, create_container
from icae_tui.sandbox.docker.engine import LABEL_TOOL, TOOL_NAME
from icae_tui.sandbox.docker.images import image_exists

AGENT_REPO = "icae-agentx"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# At the root, not in /tmp: a tar entry for /tmp would reset its mode to 0755, and apt on
# trixie (its signature check runs as _apt) then cannot write there. Removed before the commit.
BUILD_CA = "/icae-build-ca.crt"
INSTALL_STEP_TIMEOUT_S = 1800.0
# Installing a CLI agent (npm with a 400 MB native binary, a Python venv with litellm) needs
# more room than a sandboxed agent gets.
BUILD_LIMITS = Limits(
    memory_bytes=4 * 1024**3, pids=4096, nano_cpus=2_000_000_000, ttl_s=7200,
    file_bytes=2 * 1024**3, disk_bytes=None,
)  # fmt: skip


def _build_env(with_ca: bool) -> dict[str, str]:
    """The install's environment: every client's own variable for the host's CA bundle."""
    env = {"DEBIAN_FRONTEND": "noninteractive", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if with_ca:
        for var in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                    "npm_config_cafile", "CURL_CA_BUNDLE"):  # fmt: skip
            env[var] = BUILD_CA
    return env


def agent_image_name(base_id: str, version: str, lines: list[str]) -> str:
    """Named by what is in it (base image, version, install lines), not by the entry's name:
    entries that extend one another with the same recipe share the image."""
    h = hashlib.sha256("\0".join([base_id, version, *lines]).encode()).hexdigest()[:16]
    return f"{AGENT_REPO}:{h}"


def install_lines(lines: list[str], version: str) -> list[str]:
    return [line.replace("{version}", version) for line in lines]


async def ensure_agent_image(
    docker: aiodocker.Docker,
    base: str,
    agent: str,
    version: str,
    lines: list[str],
    progress: ProgressFn = lambda _m: None,
    *,
    run_id: str = "image-build",
) -> str:
    """The image of `base` with `agent` installed; built only when missing. An install step
    that fails raises ImageBuildError naming the agent, the step and its output's end. The
    build container carries `run_id`'s label, so a cancelled run's sweep removes it too."""
    lines = install_lines(lines, version)
    if not lines:
        return base
    base_id = (await docker.images.inspect(base))["Id"]
    name = agent_image_name(base_id, version, lines)
    if await image_exists(docker, name):
        return name
    progress(f"installing agent {agent} ({version}) into {name}; this happens once")
    box = await create_container(
        docker, base, run_id=run_id, role="agent-install", hardened=False,
        limits=BUILD_LIMITS, network="bridge",
    )  # fmt: skip
    try:
        with_ca = HOST_CA_BUNDLE.is_file()
        if with_ca:
            await box.put_files({BUILD_CA: HOST_CA_BUNDLE.read_bytes()})
        env = _build_env(with_ca)
        for i, line in enumerate(lines, 1):
            await _install_step(box, agent, (i, len(lines)), line, env, progress)
        await box.exec(["rm", "-f", BUILD_CA])
        repo, tag = name.split(":", 1)
        labels = {LABEL_TOOL: TOOL_NAME, "icae.role": "agent-install", "icae.agent": agent,
                  "icae.agent.version": version}  # fmt: skip
        await box.commit(repo, tag, labels)
    finally:
        await box.remove()
    progress(f"agent {agent} installed: {name}")
    return name


async def _install_step(
    box: Container,
    agent: str,
    step: tuple[int, int],
    line: str,
    env: dict[str, str],
    progress: ProgressFn,
) -> None:
    i, n = step
    progress(f"{agent} install {i}/{n}: $ {line}")
    res = await box.exec(line, timeout_s=INSTALL_STEP_TIMEOUT_S, env=env)
    if res.exit_code == 0:
        return
    tail = (res.stderr_tail or res.stderr or res.stdout_tail or res.stdout)[-1500:]
    why = "timed out" if res.timed_out else f"exited {res.exit_code}"
    raise ImageBuildError(
        f"agent {agent}: install step {i}/{n} `{line[:200]}` {why}:\n"
        + tail.decode("utf-8", errors="replace").strip()
    )
