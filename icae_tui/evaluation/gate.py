"""Between the agent and the cases: freeze the delivery, then the build gate.

Freeze: the agent's container, with the clarification tool taken out and the task's tool
wrapper put in, is committed as the delivery image — what the cases will run, and all of it.
Build gate: the task's build command in a fresh delivery container must exit 0, else every
case is a `build_error`. A gate the engine refused is tried once more in a new container;
refused twice, the delivery failed the gate (an agent must not dodge its cases that way).
"""

from __future__ import annotations

import asyncio
import re

from icae_tui.domain.events import BuildChecked
from icae_tui.domain.task import Task
from icae_tui.errors import BoxError, IcaeError, InfraError
from icae_tui.evaluation.differential import case_limits, raise_if_engine_lost
from icae_tui.gateway import ModelGateway, model_proxy_script
from icae_tui.packages import BOX_PORT, PackageGateway, box_env
from icae_tui.sandbox.base import Box, BoxSpec, ExecResult, Role, Sandbox, wrapper_script

ASK_TOOL = "/usr/local/bin/icae-ask"
MODEL_PROXY = "/usr/local/bin/icae-model-proxy"
MODEL_PROXY_PORT = 8787
MODEL_PROXY_LOG = "/dev/shm/icae-model-proxy.log"  # a tmpfs: never part of the delivery
PACKAGE_PROXY_LOG = "/dev/shm/icae-package-proxy.log"
DELIVERY_TTL_S = 24 * 3600  # a delivery image outlives its run only if the run crashed
BUILD_TIMEOUT_S = 300
BUILD_LOG_CHARS = 4000  # of each stream, kept on the BuildChecked event
FREEZE_ROOM = 16 * 1024**2  # past the agent's disk limit, for the files freeze puts in


def delivery_image_name(task: Task, run_id: str) -> str:
    return f"icae-delivery-{task.id}:{run_id}"


class DeliveryMissing(IcaeError):  # handled by the run: never leaves it
    """What the agent built cannot be frozen (its box died and will not start again): the
    delivery is judged missing — every case a build error — and the run goes on."""


async def freeze(agent_box: Box, task: Task, image: str, *, run_id: str) -> None:
    """Commit the agent's box as `image` (the backend removes a half-made image again).

    A box the agent killed (`kill -9 -1` ends its init) is started again first: its
    writable layer is as the agent left it, only its processes are new."""
    if await agent_box.died():
        try:
            await agent_box.revive()
        except BoxError as err:
            raise DeliveryMissing(
                f"the agent's box died and could not be started again to freeze it ({err})"
            ) from None
    await agent_box.make_room(FREEZE_ROOM)  # a box the agent filled still takes the wrapper
    await agent_box.exec(["rm", "-f", ASK_TOOL, MODEL_PROXY, MODEL_PROXY_LOG, PACKAGE_PROXY_LOG])
    wrapper = wrapper_script(task.spec.delivery.entry)
    await agent_box.put_files({f"/usr/local/bin/{task.spec.interface.tool}": wrapper}, mode=0o755)
    await agent_box.freeze(image, run_id=run_id, ttl_s=DELIVERY_TTL_S)


async def _start_forwarder(box: Box, port: int, socket: str | None, log: str) -> str:
    """Start the loopback forwarder (127.0.0.1:port → a socket mounted in the box, which
    keeps network `none`); "" once it listens, else what it said."""
    await box.put_files({MODEL_PROXY: model_proxy_script()}, mode=0o755)
    target = f" --socket {socket}" if socket else ""
    started = await box.exec(
        f"setsid nohup {MODEL_PROXY} --port {port}{target} > {log} 2>&1 & pid=$!; "
        f"for _ in $(seq 100); do grep -q listening {log} && exit 0; "
        f"kill -0 $pid 2>/dev/null || break; sleep 0.05; done; cat {log} >&2; exit 1",
        timeout_s=30,
    )
    if started.exit_code == 0:
        return ""
    return started.stderr.decode(errors="replace").strip()[-300:] or "no output"


async def start_model_proxy(agent_box: Box, gateway: ModelGateway) -> dict[str, str]:
    """Start the loopback forwarder to the run's gateway and return what an ordinary OpenAI
    client there needs: OPENAI_BASE_URL on 127.0.0.1 and the run's token — never the real
    key."""
    if why := await _start_forwarder(agent_box, MODEL_PROXY_PORT, None, MODEL_PROXY_LOG):
        raise InfraError(f"the model proxy did not start in the agent's box: {why}")
    return gateway.agent_env(MODEL_PROXY_PORT)


async def start_package_proxy(box: Box, packages: PackageGateway) -> tuple[dict[str, str], str]:
    """The forwarder to the run's package gateway: what pip and npm there need to use it, or
    ({}, why) when it cannot run there (a box with no python3, a backend that mounts no
    channel): the run goes on, with nothing to install from, as it says."""
    if why := await _start_forwarder(box, BOX_PORT, packages.box_socket, PACKAGE_PROXY_LOG):
        return {}, (
            f"packages: the gateway's forwarder did not start in the box ({why}): "
            "nothing can be installed in this run"
        )
    return box_env(BOX_PORT), ""


async def start_icae_wire_forwarders(agent_box: Box, routes: dict[int, str]) -> None:
    """Agents written for ICAE-EVAL POST to 127.0.0.1:50002 (init 50001, stats 50003): the
    model proxy's byte forwarder, one per port, onto the ask socket mounted in the container
    (which keeps network `none`). Its logs are on a tmpfs, its script removed by `freeze`:
    neither is part of the delivery."""
    await agent_box.put_files({MODEL_PROXY: model_proxy_script()}, mode=0o755)
    logs = {port: f"/dev/shm/icae-wire-{port}.log" for port in routes}
    launch = " ".join(
        f"setsid nohup {MODEL_PROXY} --port {port} --socket {path} > {logs[port]} 2>&1 & "
        for port, path in routes.items()
    )
    waits = " ".join(f"grep -q listening {log} &&" for log in logs.values())
    started = await agent_box.exec(
        f"{launch} for _ in $(seq 100); do {waits} exit 0; sleep 0.05; done; "
        f"cat {' '.join(logs.values())} >&2; exit 1",
        timeout_s=30,
    )
    if started.exit_code != 0:
        why = started.stderr.decode(errors="replace").strip()[-300:] or "no output"
        raise InfraError(f"the ICAE wire forwarders did not start in the agent's box: {why}")


async def build_gate(
    sandbox: Sandbox, task: Task, image: str, *, run_id: str,
    packages: PackageGateway | None = None,
) -> BuildChecked:  # fmt: skip
    """`packages`: the run's package gateway in cache mode, reached from the build's box as
    from the agent's (a lockfile install gets what the agent was served, offline)."""
    spec = task.spec.delivery
    res: ExecResult | None = None
    refused = ""
    channels = (packages.box_channel,) if packages is not None else ()
    box_spec = BoxSpec(image=image, run_id=run_id, role=Role.BUILD, limits=case_limits(task),
                       channels=channels)  # fmt: skip
    for _ in range(2):
        try:
            box = await sandbox.create_box(box_spec)
            try:
                env: dict[str, str] = {}
                # a delivery with no python3 left cannot run the forwarder: it builds
                # without packages, as it would have before
                if packages is not None and not await _start_forwarder(
                    box, BOX_PORT, packages.box_socket, PACKAGE_PROXY_LOG
                ):
                    env = box_env(BOX_PORT)
                res = await box.exec(spec.build, workdir=spec.workspace,
                                     timeout_s=BUILD_TIMEOUT_S, env=env)  # fmt: skip
            finally:
                await asyncio.shield(box.remove())
            break
        except BoxError as err:  # a bug of ours is no refusal: it fails the run
            await raise_if_engine_lost(sandbox, err)
            refused = f"{type(err).__name__}: {err}"[:300]
    if res is None:
        reason = f"the engine could not run the build gate: {refused}"
        return BuildChecked(ok=False, exit_code=None, reason=reason)
    out = res.stdout.decode(errors="replace")[-BUILD_LOG_CHARS:]
    errs = res.stderr.decode(errors="replace")[-BUILD_LOG_CHARS:]
    ok = res.exit_code == 0 and not res.timed_out
    if ok:
        reason = "build passed"
    elif res.timed_out:
        reason = "build gate timed out"
    else:
        reason = failed_build_reason(res.exit_code, out, errs)
    return BuildChecked(ok=ok, exit_code=res.exit_code, reason=reason, stdout=out, stderr=errs)


# The line that names a build's error, tried in this order on the stream's lines:
# an exception line (`SyntaxError: …` from Node or Python, `Error [ERR_X]: …`, Ruby's), a compiler's
# `error:` / `error[E0425]:`, then any line with the word "error" (`error TS2304`, `Error 1`).
_EXCEPTION = re.compile(
    r"^(?:Uncaught\s+)?(?:[A-Za-z_][\w.]*)?(?:Error|Exception)(?:\s+\[[\w-]+\])?:\s"
    r"|\((?:\w+::)*\w*(?:Error|Exception)\)$"  # Ruby's `file.rb:3:in 'f': … (NameError)`
)
_COMPILER_ERROR = re.compile(r"(?i)\berror(?:\[\w+\])?:")
_ANY_ERROR = re.compile(r"(?i)\berror\b")
_TRACEBACK = "Traceback (most recent call last):"


def _error_line(text: str) -> str:
    """The line of a build's output that says what failed: for a Python traceback, its
    exception line (the last traceback's first unindented line: chained ones come before,
    notes after); else the first error-shaped line (not the last: a Node crash ends with its
    version banner, a make with its `Error 1`); else the last non-empty line. Lines split at "\\n" only: splitlines() would let a U+2028 hide the start of one."""
    lines = [line.rstrip() for line in text.split("\n")]
    if _TRACEBACK in lines:
        after = lines[len(lines) - lines[::-1].index(_TRACEBACK) :]
        if found := next((x for x in after if x.strip() and not x[0].isspace()), ""):
            return found
    stripped = [x.strip() for x in lines if x.strip()]
    for shape in (_EXCEPTION, _COMPILER_ERROR, _ANY_ERROR):
        if found := next((x for x in stripped if shape.search(x)), ""):
            return found
    return stripped[-1] if stripped else ""


def failed_build_reason(exit_code: int | None, out: str, err: str) -> str:
    """The exit code and the line of stderr that names the error (`_error_line`); when
    stderr is empty, that of stdout, saying stderr was empty. The whole of both streams is
    on the BuildChecked event (its tails), for displays to show under this line."""
    if line := _error_line(err):
        return f"build failed (exit {exit_code}): {line[:200]}"
    if line := _error_line(out):
        return f"build failed (exit {exit_code}), no output on stderr: {line[:200]}"
    return f"build failed (exit {exit_code}): no output"
