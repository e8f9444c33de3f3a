"""The orchestrator: one run's phases, published as typed events.

prepare (images) → generate (agent in its container, clarifications) → freeze (commit the
agent container as the delivery image) → build (gate) → evaluate (differential cases) →
score. Events go through the run's log (`icae_tui.runs.log`): stored before any display sees
them. The agent's session is in `agents/session.py`, freeze and the build gate in
`evaluation/gate.py`, the cases in `evaluation/differential.py`. No Textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from icae_tui.agents.base import Agent, AgentError, AgentStop, Limits
from icae_tui.agents.endpoint import GatewayEndpoint
from icae_tui.agents.pause import PauseGate
from icae_tui.agents.registry import make_agent
from icae_tui.agents.session import AgentSession
from icae_tui.domain.agent import PauseMethod
from icae_tui.domain.diagnostics import Diagnostics
from icae_tui.domain.events import (
    AgentPaused,
    AgentResumed,
    AgentStopped,
    AgentSubmitted,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    DiagnosticsMade,
    Event,
    ModelCallMade,
    PhaseChanged,
    Progress,
    ResponderChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score
from icae_tui.domain.states import (
    FailureKind,
    ModelRole,
    Phase,
    ResponderMode,
    RunStatus,
    StopReason,
)
from icae_tui.domain.task import Reference, Task
from icae_tui.errors import ConfigError, EngineLost, EngineUnavailable, InfraError, SandboxError
from icae_tui.evaluation.critic import PROMPT_VERSION as CRITIC_PROMPT
from icae_tui.evaluation.diagnostics import diagnose
from icae_tui.evaluation.differential import Evaluator, Sides, build_error_result
from icae_tui.evaluation.gate import (
    ASK_TOOL,
    DeliveryMissing,
    build_gate,
    delivery_image_name,
    freeze,
    start_icae_wire_forwarders,
    start_model_proxy,
    start_package_proxy,
)
from icae_tui.evaluation.review import with_review
from icae_tui.evaluation.scorers import RunContext
from icae_tui.evaluation.scoring import Scoring
from icae_tui.gateway import (
    GatewayConfig,
    ModelCall,
    ModelGateway,
    ReplayUpstream,
    dump_call,
    load_calls,
)
from icae_tui.gateway import serving as gateway_serving
from icae_tui.packages import MANIFEST_FILE, PackageGateway, PackageMode, Policy, load_manifest
from icae_tui.packages import serving as packages_serving
from icae_tui.runs.config import RunConfig
from icae_tui.runs.log import Display, RunLog
from icae_tui.runs.socket_folders import reap_ask_folders
from icae_tui.sandbox.base import Box, BoxSpec, DiskGuard, Role, Sandbox, TaskImages
from icae_tui.sandbox.base import Limits as BoxLimits
from icae_tui.sandbox.registry import open_sandbox
from icae_tui.store.database import MODEL_CALLS_FILE, RunStore
from icae_tui.users.ask_server import icae_ask_script, icae_wire_routes, serving
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.icae_wire import with_clarification
from icae_tui.users.model_user import ModelConfig, ModelUser
from icae_tui.users.public_cases import public_case_files, with_public_cases
from icae_tui.users.responders import Desk, Responder, SimulatedUser
from icae_tui.users.teaching import in_use_note, load_taught
from icae_tui.users.teachings import Teaching, TeachingsError
from icae_tui.util.aio import complete_despite_cancel

log = logging.getLogger(__name__)

SUBMISSION_CHARS = 64 * 1024  # of the agent's final message: always stored, so bounded
# Said at the start of a run whose engine cannot hold boxes to their disk by a quota.
DISK_NOTES = {
    DiskGuard.WATCH: "disk limits are watched from the host (the engine's file system takes "
    "no quota): a box writing faster than the watch can overshoot its limit a little",
    DiskGuard.NONE: "disk limits cannot be kept: the engine is not on this host, so nothing "
    "here bounds what a box writes",
}


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass
class RunOutcome:
    run_id: str
    status: RunStatus
    score: Score | None
    error: str = ""
    report_path: Path | None = None
    results: list[CaseResult] = field(default_factory=list)
    sides: Sides | None = None  # the images judged, when kept (RunConfig.keep_delivery)
    failure: FailureKind | None = None  # a failed run's kind of failure (a batch retries
    # infrastructure only)


class Run:
    def __init__(self, config: RunConfig, store: RunStore, *, run_id: str | None = None) -> None:
        """`run_id`: given when the run is another's (a cluster node runs the head's run)."""
        self.config = config
        self.store = store
        self.run_id = run_id or new_run_id()
        self.log = RunLog(self.run_id, store)
        self._model_user: ModelUser | None = None  # the automatic user, when it is a model
        self._teachings_error: TeachingsError | None = None
        self._teachings_used: list[Teaching] = []  # accepted, answered with (in the trace)
        self.desk = Desk(self._auto_responder(), config.responder)
        self._running = False  # between RunStarted and RunFinished: switches are recorded
        self._background: set[asyncio.Task[None]] = set()
        self.leftovers_removed: list[str] = []  # found by the final sweep: a cleanup bug if any
        self.gate = PauseGate()  # the operator's pause of the agent
        self._building: tuple[Agent, Box] | None = None  # while the agent builds
        self._clock: asyncio.Timeout | None = None  # the agent's wall clock, while it builds

    # --- events (the log does the work) ---------------------------------------------------

    def subscribe(self, display: Display) -> None:
        self.log.subscribe(display)

    async def emit(self, event: Event) -> None:
        await self.log.emit(event)

    # --- commands from displays ---------------------------------------------------------

    def answer(self, question_id: int, text: str) -> bool:
        """The operator's answer to a waiting question (human and assisted modes)."""
        return self.desk.answer(question_id, text)

    async def pause(self, by: str = "operator") -> bool:
        """Pause the agent while it builds: a CLI agent's container is frozen, a host-driven
        agent stops before its next step. False when it is not building or already paused."""
        if self._building is None or not self.gate.close():
            return False
        agent, box = self._building
        if agent.needs.pause is PauseMethod.FREEZE_BOX:
            try:
                await box.pause()
            except SandboxError:  # its box died meanwhile: nothing left to pause
                self.gate.open()
                return False
        await self.emit(AgentPaused(by=by))
        return True

    async def resume(self) -> bool:
        """Let a paused agent go on; the time it was paused is not counted against it."""
        if self._building is None or not self.gate.paused:
            return False
        agent, box = self._building
        if agent.needs.pause is PauseMethod.FREEZE_BOX:
            with contextlib.suppress(SandboxError):  # a box that died stays so
                await box.resume()
        paused_for = self.gate.open() or 0.0
        clock = self._clock
        deadline = clock.when() if clock is not None else None
        if clock is not None and deadline is not None:
            clock.reschedule(deadline + paused_for)
        await self.emit(AgentResumed(paused_s=round(paused_for, 3)))
        return True

    def set_responder(self, mode: ResponderMode | str) -> bool:
        """Switch who answers, at any moment of the run; a waiting question follows the new
        mode. False (and nothing recorded) before the run started or after it finished."""
        mode = ResponderMode(mode)
        if not self._running or mode == self.desk.mode:
            return False
        self.desk.set_mode(mode)
        task = asyncio.get_running_loop().create_task(self.emit(ResponderChanged(mode=mode)))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return True

    @property
    def budget(self) -> int:
        cfg = self.config
        return cfg.budget if cfg.budget is not None else cfg.task.budget_for(cfg.level)

    def _auto_responder(self) -> Responder:
        cfg = self.config
        # the level's records, and a TC_<stem> record for each public case file: an agent
        # that asks for a feature's public test cases gets them (never hidden ones)
        data = with_public_cases(
            cfg.task.user_agent[cfg.level].oracle_data, public_case_files(Path(cfg.task.root))
        )
        taught = data
        try:  # the operator's accepted teachings: more trigger phrases (users/teaching.py)
            taught, self._teachings_used = load_taught(data, Path(cfg.task.root), cfg.level)
        except TeachingsError as err:
            self._teachings_error = err  # the run fails at its start, naming file and line
        if cfg.user_model is not None:
            self._model_user = ModelUser(taught, cfg.user_model)
            return self._model_user
        return SimulatedUser(data, taught=taught)

    def _started(self, limits: Limits) -> RunStarted:
        cfg, task = self.config, self.config.task
        records = task.user_agent[cfg.level].oracle_data.hidden_constraints
        return RunStarted(
            task_id=task.id,
            task_title=task.spec.title,
            agent=cfg.agent,
            level=cfg.level.value,
            responder=cfg.responder,
            budget=self.budget,
            prd=task.prd[cfg.level],
            task_records=[r.constraint_id for r in records if not r.generic],
            generic_records=[r.constraint_id for r in records if r.generic],
            limits=limits,
        )

    # --- the run ------------------------------------------------------------------------

    async def execute(self) -> RunOutcome:
        cfg, task = self.config, self.config.task
        self._close_dead_runs()
        self.store.create_run(
            self.run_id, task.id, cfg.agent, cfg.level.value, cfg.responder, time.time()
        )
        agent: Agent | None = None
        broken: AgentError | None = None
        try:
            agent = make_agent(cfg.agent, task, pace_s=cfg.pace_s, agent_files=cfg.agent_files)
        except AgentError as err:
            broken = err  # a failed run like any other: started, then failed with the reason
        await self.emit(self._started(agent.limits if agent is not None else Limits()))
        if self._teachings_used:
            await self.emit(Progress(message=in_use_note(self._teachings_used)))
        self._running = True
        outcome = RunOutcome(self.run_id, RunStatus.FAILED, None)
        sandbox: Sandbox | None = None
        try:
            if agent is None:
                raise broken or AgentError(f"agent {cfg.agent!r}: not made")
            if self._teachings_error is not None:
                raise self._teachings_error
            sandbox = await open_sandbox(cfg.engine)
            if cfg.sweep:
                await self._sweep(sandbox)
            outcome = await self._phases(sandbox, agent)
        except asyncio.CancelledError:
            outcome = RunOutcome(
                self.run_id, RunStatus.CANCELLED, None, "cancelled by the operator"
            )
            await asyncio.shield(self._finish(outcome))
            raise
        except (ConfigError, EngineUnavailable) as err:
            outcome = RunOutcome(self.run_id, RunStatus.FAILED, None, str(err),
                                 failure=failure_kind(err))  # fmt: skip
        except Exception as err:
            message = await _explain_failure(err, self.log.phase, sandbox)
            outcome = RunOutcome(self.run_id, RunStatus.FAILED, None, message,
                                 failure=failure_kind(err))  # fmt: skip
        finally:
            if sandbox is not None:
                await self._remove_leftovers(sandbox)
                await asyncio.shield(sandbox.close())
        await self._finish(outcome)
        return outcome

    def _close_dead_runs(self) -> None:
        """What dead runs left outside the engine: `running` rows and socket folders."""
        for run_id in self.store.mark_interrupted():
            log.info("run %s: owner gone, marked interrupted", run_id)
        for folder in reap_ask_folders():
            log.info("removed orphaned clarification folder %s", folder)

    async def _remove_leftovers(self, sandbox: Sandbox) -> None:
        """Whatever still carries this run's label goes, even on cancel or a failed phase."""
        try:
            removed = await complete_despite_cancel(sandbox.remove_run_boxes(self.run_id))
            self.leftovers_removed = removed
        except Exception as err:  # the engine may be gone: the reaper will get them later
            log.warning("run %s: could not check for leftover boxes: %s", self.run_id, err)
            return
        if removed:
            log.warning("run %s: removed %d leftover box(es)", self.run_id, len(removed))

    async def _sweep(self, sandbox: Sandbox) -> None:
        """Start-up sweep: what crashed runs left behind (ours, dead or expired) goes."""
        swept = await sandbox.sweep()
        if swept.containers or swept.images:
            await self.emit(
                Progress(
                    message=f"removed {len(swept.containers)} container(s) and "
                    f"{len(swept.images)} image(s) left by earlier runs"
                )
            )

    async def _finish(self, outcome: RunOutcome) -> None:
        self._running = False
        if self._background:  # a switch recorded just before the end lands before it
            await asyncio.gather(*self._background, return_exceptions=True)
        outcome.report_path = self.log.report_path
        await self.emit(
            RunFinished(
                status=outcome.status,
                score=outcome.score,
                error=outcome.error,
                failure=outcome.failure,
                report_path=str(outcome.report_path),
            )
        )
        self.log.write_report()
        # no hidden or enhanced case counted: unknown, stored as such (history shows "—")
        overall = outcome.score.overall if outcome.score and outcome.score.measured else None
        self.store.finish_run(self.run_id, outcome.status, time.time(), overall, outcome.error,
                              outcome.failure)  # fmt: skip

    async def _phases(self, sandbox: Sandbox, agent: Agent) -> RunOutcome:
        task = self.config.task
        await self.emit(PhaseChanged(phase=Phase.PREPARE, detail="images"))
        images = await self._prepare(sandbox)
        await self.emit(PhaseChanged(phase=Phase.GENERATE, detail=agent.name))
        delivery_image = delivery_image_name(task, self.run_id)
        missing = ""
        try:
            await self._generate_and_freeze(sandbox, agent, images, delivery_image)
        except DeliveryMissing as err:  # judged missing: a score, not a failed run
            missing = str(err)
        kept = False
        try:
            sides = Sides(oracle_image=images.oracle, delivery_image=delivery_image,
                          sanitizer_image=images.sanitizer)  # fmt: skip
            outcome = await self._judge(sandbox, sides, missing=missing)
            if self.config.keep_delivery and outcome.status is RunStatus.COMPLETED:
                outcome.sides = sides
                kept = True
            return outcome
        finally:
            if not kept:
                await sandbox.remove_image(delivery_image)

    def _progress(self) -> Callable[[str], None]:
        """A progress callback for sync code: each message an event, in order."""
        loop = asyncio.get_running_loop()

        def progress(message: str) -> None:
            loop.create_task(self.emit(Progress(message=message)))

        return progress

    async def _prepare(self, sandbox: Sandbox) -> TaskImages:
        images = await sandbox.task_images(self.config.task, self._progress())
        await asyncio.sleep(0)  # let queued progress events land in order
        if note := DISK_NOTES.get(sandbox.disk_guard):
            await self.emit(Progress(message=note))
        return images

    async def _generate_and_freeze(
        self, sandbox: Sandbox, agent: Agent, images: TaskImages, delivery_image: str
    ) -> None:
        cfg, task = self.config, self.config.task
        workspace = task.spec.delivery.workspace
        image = await self._agent_image(sandbox, agent, images.agent)
        async with (
            contextlib.AsyncExitStack() as stack,
            ClarificationChannel(self.desk, self.budget, self.emit) as channel,
            # closed first: then the final count
            serving(channel, task_id=task.id, icae_port=cfg.icae_wire_port) as ask_server,
            self._model_gateway(agent) as gateway,
            self._user_gateway() as user_gateway,
            self._package_gateway(self.config.packages) as packages,
        ):
            if user_gateway is not None and self._model_user is not None:
                user_endpoint = GatewayEndpoint(user_gateway.socket_path, user_gateway.token)
                self._model_user.endpoint = user_endpoint
                stack.push_async_callback(user_endpoint.close)
            channels = [ask_server.box_channel] + ([gateway.box_channel] if gateway else [])
            channels += [packages.box_channel] if packages else []
            agent_box = await sandbox.create_box(BoxSpec(
                image=image, run_id=self.run_id, role=Role.AGENT, workdir=workspace,
                channels=tuple(channels), limits=_box_limits(agent, task),
            ))  # fmt: skip
            try:
                await agent_box.put_files({ASK_TOOL: icae_ask_script()}, mode=0o755)
                env: dict[str, str] = {}
                if gateway is not None:
                    env = await start_model_proxy(agent_box, gateway)
                if packages is not None:
                    package_env, why = await start_package_proxy(agent_box, packages)
                    env |= package_env
                    if why:
                        await self.emit(Progress(message=why))
                # after the forwarders: the agent's clock starts with its session
                session = AgentSession(
                    self.emit, agent_box, workspace, channel,
                    secret_env=cfg.secret_env, limits=agent.limits,
                    records_dir=self.log.report_path.parent, gate=self.gate,
                )  # fmt: skip
                session.env = env
                prd = task.prd[cfg.level]
                if cfg.icae_wire:
                    await start_icae_wire_forwarders(
                        agent_box, icae_wire_routes(cfg.icae_wire_port)
                    )
                    prd = with_clarification(prd, ask_server.wire, cfg.icae_wire_port)
                self._building = (agent, agent_box)
                try:
                    await self._build(agent, session, gateway, prd)
                finally:
                    self._building = None
                    if self.gate.paused:  # paused when it ended (a limit, an error): go on
                        self.gate.open()
                        if agent.needs.pause is PauseMethod.FREEZE_BOX:
                            with contextlib.suppress(SandboxError):
                                await agent_box.resume()
                await self.emit(PhaseChanged(phase=Phase.FREEZE, detail=delivery_image))
                await freeze(agent_box, task, delivery_image, run_id=self.run_id)
            finally:
                await agent_box.remove()

    async def _build(
        self, agent: Agent, session: AgentSession, gateway: ModelGateway | None, prd: str
    ) -> None:
        """The agent builds; it ends by submitting, or a limit or an error stops it. Either
        way the run goes on: what is in the container is frozen and judged."""
        endpoint = None
        if gateway is not None:
            endpoint = session.model = GatewayEndpoint(gateway.socket_path, gateway.token)
        seconds = agent.limits.max_seconds
        try:
            # the wall clock is the run's to enforce: an agent stuck in one long command or
            # one slow model call is stopped all the same
            async with asyncio.timeout(seconds) as self._clock:
                final = await agent.build(prd, session)
        except TimeoutError as err:
            if self._clock is not None and self._clock.expired():
                stop = AgentStop(StopReason.TIME_LIMIT, f"time limit of {seconds:g} s")
            else:  # the agent's own timeout (with no time limit set, the only kind there is)
                stop = AgentStop(StopReason.INFRA_ERROR, f"timed out inside the agent: {err!r}")
            await self.emit(
                AgentStopped(reason=stop.reason, detail=stop.detail, steps=session.steps)
            )
            return
        except AgentStop as stop:
            await self.emit(
                AgentStopped(reason=stop.reason, detail=stop.detail, steps=session.steps)
            )
            return
        finally:
            if endpoint is not None:
                await endpoint.close()
        await self.emit(AgentSubmitted(message=final[:SUBMISSION_CHARS]))
        await self.emit(AgentStopped(reason=StopReason.SUBMITTED, steps=session.steps))

    async def _agent_image(self, sandbox: Sandbox, agent: Agent, base: str) -> str:
        """The task's agent image, with the agent installed into it if it needs (built once)."""
        need = agent.needs.image
        if need is None:
            return base
        image = await sandbox.agent_image(
            base, agent.name, need.version, list(need.install), self._progress(),
            run_id=self.run_id,
        )  # fmt: skip
        await asyncio.sleep(0)  # let queued progress events land in order
        return image

    def _package_gateway(
        self, mode: PackageMode
    ) -> contextlib.AbstractAsyncContextManager[PackageGateway | None]:
        """The run's package gateway (none in mode off). Its events are the run's; what it
        serves is listed in the run's packages.jsonl. In cache mode a model replay gets what
        the replayed run was served, and the build gate what this run was."""
        if mode is PackageMode.OFF:
            return contextlib.nullcontext(None)
        task = self.config.task
        budget = self.config.packages_budget_mb
        policy = Policy.of(task.spec.packages, task.id,
                           None if budget is None else budget * 1024 * 1024)  # fmt: skip
        pinned: dict[str, str] = {}
        if self.config.model_replay:
            pinned = load_manifest(self.store.artifacts_dir / self.config.model_replay
                                   / MANIFEST_FILE)  # fmt: skip
        manifest = self.log.report_path.parent / MANIFEST_FILE
        if mode is PackageMode.CACHE and manifest.is_file():  # the build gate: ours first
            pinned |= load_manifest(manifest)
        manifest.parent.mkdir(parents=True, exist_ok=True)
        return packages_serving(mode, policy, record=self.emit, manifest=manifest, pinned=pinned)

    def _model_gateway(
        self, agent: Agent
    ) -> contextlib.AbstractAsyncContextManager[ModelGateway | None]:
        """The run's model gateway for an agent that needs a model (none for the others):
        the configured endpoint, or the recorded calls of `model_replay`; its calls are
        events, and each is appended to the run's model_calls.jsonl as it ends."""
        need, limits = agent.needs.model, agent.limits
        if need is None:
            return contextlib.nullcontext(None)
        config = GatewayConfig(
            base_url=need.base_url or "", model=need.model, api_key_env=need.api_key_env or "",
            wire_api=need.wire_api, price_in_per_mtok=need.price_in_per_mtok,
            price_out_per_mtok=need.price_out_per_mtok, max_calls=limits.max_model_calls,
            max_tokens=limits.max_tokens, max_cost=limits.max_cost_usd,
        )  # fmt: skip
        upstream = None
        if self.config.model_replay:
            upstream = ReplayUpstream(
                self._recorded_calls(self.config.model_replay, ModelRole.AGENT)
            )
        elif not need.base_url and not need.local_model:
            raise AgentError(f"agent {agent.name}: needs an endpoint (base_url in agents.toml)")
        return self._serving(config, upstream, ModelRole.AGENT, need.local_model)

    @contextlib.asynccontextmanager
    async def _serving(
        self,
        config: GatewayConfig,
        upstream: ReplayUpstream | None,
        role: ModelRole,
        local_model: str | None,
    ) -> AsyncIterator[ModelGateway]:
        """A gateway to `config`'s upstream; with `local_model` (and no replay), to that
        model's server on loopback: found running, or started for the run and stopped when
        it ends (the console keeps it for its next run)."""
        record = self._recorder(role)
        if local_model is None or upstream is not None:
            async with gateway_serving(config, upstream=upstream, record=record) as gateway:
                yield gateway
            return
        from icae_tui.local_models.server import SERVERS

        await self.emit(Progress(message=f"{role}: local model {local_model}: starting or "
                                 "finding its server"))  # fmt: skip
        async with SERVERS.lease(local_model, owner=f"run {self.run_id}") as served:
            await self.emit(Progress(message=f"{role}: local model {local_model} serving at "
                                     f"{served.base_url} (pid {served.pid})"))  # fmt: skip
            config = config.model_copy(
                update={"base_url": served.base_url, "api_key_env": served.export_key()}
            )
            async with gateway_serving(config, upstream=None, record=record) as gateway:
                yield gateway

    def _recorded_calls(self, run_id: str, role: ModelRole) -> list[ModelCall]:
        """The calls `role` made in run `run_id` (each role has its own gateway)."""
        path = self.store.artifacts_dir / run_id / MODEL_CALLS_FILE
        try:
            calls = load_calls(path.read_text(encoding="utf-8"))
        except OSError:
            raise AgentError(f"--model-replay {run_id}: no recorded model calls ({path})") from None
        except ValueError as err:
            raise AgentError(f"--model-replay {run_id}: {path}: {err}") from None
        return [c for c in calls if c.role is role]

    def _user_gateway(self) -> contextlib.AbstractAsyncContextManager[ModelGateway | None]:
        """The model-mode user's gateway (role `user`); none when the user is not a model."""
        return self._role_gateway(self.config.user_model, ModelRole.USER)

    def _judge_gateway(self) -> contextlib.AbstractAsyncContextManager[ModelGateway | None]:
        """The scorers' judge's gateway (role `judge`, e.g. SM's); none when no judge is
        configured."""
        return self._role_gateway(self.config.judge_model, ModelRole.JUDGE,
                                  replayed=lambda c: not _is_critic(c))  # fmt: skip

    def _critic_gateway(self) -> contextlib.AbstractAsyncContextManager[ModelGateway | None]:
        """The model critic's gateway (role `judge` too; a replay gives it the recorded
        critic calls only, told apart by their prompt's version); none without a critic."""
        return self._role_gateway(self.config.critic_model, ModelRole.JUDGE, replayed=_is_critic)

    def _role_gateway(
        self,
        model: ModelConfig | None,
        role: ModelRole,
        replayed: Callable[[ModelCall], bool] = lambda _c: True,
    ) -> contextlib.AbstractAsyncContextManager[ModelGateway | None]:
        """A gateway for one of the run's own model roles, its calls recorded like the
        agent's; with `model_replay`, answered from that run's recorded calls of the role
        (those `replayed` keeps); none when the role has no model."""
        if model is None:
            return contextlib.nullcontext(None)
        config = GatewayConfig(base_url=model.base_url, model=model.model,
                               api_key_env=model.api_key_env or "", timeout_s=model.timeout_s)  # fmt: skip
        upstream = None
        if self.config.model_replay:
            calls = self._recorded_calls(self.config.model_replay, role)
            upstream = ReplayUpstream([c for c in calls if replayed(c)])
        return self._serving(config, upstream, role, model.local_model)

    async def _diagnose(
        self, sandbox: Sandbox, delivery_image: str, final: Score, *, missing: str
    ) -> Score:
        """Diagnostics beyond tests, stored as an event; `final` with its review score."""
        cfg, task = self.config, self.config.task
        if not cfg.diagnostics:
            return final
        if missing:
            made = Diagnostics(error=f"no delivery: {missing}")
        else:
            async with contextlib.AsyncExitStack() as stack:
                gateway = await stack.enter_async_context(self._critic_gateway())
                chat = None
                if gateway is not None and cfg.critic_model is not None:
                    chat = GatewayEndpoint(gateway.socket_path, gateway.token)
                    stack.push_async_callback(chat.close)
                made = await diagnose(
                    sandbox, task, cfg.level, delivery_image, final, run_id=self.run_id,
                    critic=chat, critic_model=cfg.critic_model.model if cfg.critic_model else "",
                    weights=cfg.review_weights,
                )  # fmt: skip
            if made.critic is not None and made.critic.error:
                await self.emit(Progress(message=f"critic: not measured ({made.critic.error})"))
        await self.emit(DiagnosticsMade(diagnostics=made))
        if made.review is None:
            return final
        final = with_review(final, made.review)
        await self.emit(ScoreUpdated(score=final))
        return final

    def _scoring(self) -> Scoring:
        """The run's scorers: the registered ones whose needs the run meets (a scorer that
        needs a judge model, with `judge_model`), what the run gives them."""
        cfg = self.config

        async def say(message: str) -> None:
            await self.emit(Progress(message=message))

        judge = cfg.judge_model.model if cfg.judge_model is not None else None
        return Scoring(RunContext(cfg.task, self.run_id, judge_model=judge,
                                  cache_dir=self.store.path.parent, say=say))  # fmt: skip

    def _recorder(self, role: ModelRole) -> Callable[[ModelCall], Awaitable[None]]:
        async def record(call: ModelCall) -> None:
            await self._call(call.model_copy(update={"role": role}))

        return record

    async def _call(self, call: ModelCall) -> None:
        path = self.log.report_path.with_name(MODEL_CALLS_FILE)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:  # kept as it happens, like the events
            out.write(dump_call(call))
        await self.emit(
            ModelCallMade(
                role=call.role, index=call.index, call_kind=call.kind, model=call.upstream_model or call.model,
                status=call.status, attempts=call.attempts,
                infra_failures=len(call.infra_failures), tokens_in=call.tokens_in,
                tokens_out=call.tokens_out, cost=call.cost, latency_s=round(call.latency_s, 3),
                finish_reason=call.finish_reason, tool_calls=call.tool_calls, error=call.error,
                stop_reason=call.stop_reason,
            )
        )  # fmt: skip

    async def _judge(self, sandbox: Sandbox, sides: Sides, *, missing: str) -> RunOutcome:
        """`missing`: why there is no delivery to judge (then every case is a build error)."""
        cfg, task = self.config, self.config.task
        delivery_image = sides.delivery_image
        refs = task.cases_in(*cfg.splits)
        await self.emit(PhaseChanged(phase=Phase.BUILD, detail=task.spec.delivery.build))
        if missing:
            build = BuildChecked(ok=False, exit_code=None, reason=f"no delivery: {missing}")
        else:
            # offline, from what the run was served: a lockfile install gets the same bytes
            mode = PackageMode.OFF if cfg.packages is PackageMode.OFF else PackageMode.CACHE
            async with self._package_gateway(mode) as packages:
                build = await build_gate(sandbox, task, delivery_image, run_id=self.run_id,
                                         packages=packages)  # fmt: skip
        await self.emit(build)
        scoring = self._scoring()
        await self.emit(
            CasesPlanned(
                case_ids=[r.id for r in refs],
                patterns=[r.pattern for r in refs],
                splits=[r.split.value for r in refs],
                metrics=list(scoring.metrics),
                reference=task.spec.cases.reference,
            )
        )
        results: list[CaseResult] = []
        if not build.ok:
            for ref in refs:
                result = build_error_result(task, ref, build.reason)
                results.append(result)
                await self.emit(CaseFinished(result=result))
            final = scoring.score(results, planned=len(refs), build_ok=False)
            final.overall = final.macro = 0.0
            await self.emit(ScoreUpdated(score=final))
            final = await self._diagnose(sandbox, delivery_image, final, missing=missing)
            return RunOutcome(self.run_id, RunStatus.COMPLETED, final, results=results)

        detail = f"{len(refs)} cases"
        if task.spec.cases.reference is Reference.EXPECTED:  # said wherever the phase shows
            detail += " against their stored expected outputs (no oracle)"
        await self.emit(PhaseChanged(phase=Phase.EVALUATE, detail=detail))
        async with (
            contextlib.AsyncExitStack() as stack,
            self._judge_gateway() as judge_gateway,
        ):
            run = scoring.run
            if judge_gateway is not None and run is not None:
                endpoint = GatewayEndpoint(judge_gateway.socket_path, judge_gateway.token)
                stack.push_async_callback(endpoint.close)
                run = dataclasses.replace(run, judge=endpoint)
            async with (
                scoring.opened(run) as judge,
                Evaluator(sandbox, task, sides, run_id=self.run_id, concurrency=cfg.concurrency,
                          judge=judge) as ev,
                # closed here, not whenever it is collected: on any error (EngineLost, a
                # failed emit) its pending cases are cancelled and awaited before the pools
                # close
                contextlib.aclosing(ev.run_cases(refs)) as cases,
            ):  # fmt: skip
                async for result in cases:
                    results.append(result)
                    await self.emit(CaseFinished(result=result))
                    await self.emit(ScoreUpdated(score=scoring.score(results, planned=len(refs))))
        await self.emit(PhaseChanged(phase=Phase.SCORE))
        final = scoring.score(results, planned=len(refs))
        final = await self._diagnose(sandbox, delivery_image, final, missing="")
        return RunOutcome(self.run_id, RunStatus.COMPLETED, final, results=results)


def _is_critic(call: ModelCall) -> bool:
    """A recorded judge call the critic made (its system prompt names the critic's version)."""
    return f"[{CRITIC_PROMPT}]" in (call.request_body or "")


def _box_limits(agent: Agent, task: Task) -> BoxLimits:
    """The agent's box: its disk is the task's; an agent may need more memory or pids."""
    default = BoxLimits(disk_bytes=task.spec.delivery.disk_mb * 2**20)
    needs = agent.needs
    return dataclasses.replace(
        default,
        memory_bytes=needs.memory_mb * 2**20 if needs.memory_mb else default.memory_bytes,
        pids=needs.pids or default.pids,
    )


def failure_kind(err: BaseException) -> FailureKind:
    """What kind of failure `err` is (errors.py's hierarchy): the agent's own entry, the
    operator's input, the infrastructure, or else a bug of ours."""
    if isinstance(err, AgentError):
        return FailureKind.AGENT
    if isinstance(err, ConfigError):
        return FailureKind.CONFIG
    if isinstance(err, InfraError):
        return FailureKind.INFRASTRUCTURE
    return FailureKind.INTERNAL


async def _explain_failure(err: Exception, phase: str, sandbox: Sandbox | None) -> str:
    """One line a person can act on: was it the engine, a box, or our own bug?"""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, EngineLost):  # the evaluator already probed: no second guess
        return f"Docker engine lost during {phase}; start it again and re-run ({err})"
    if isinstance(err, InfraError):
        if sandbox is not None:
            try:
                await sandbox.ping()
            except EngineUnavailable:
                return f"Docker engine lost during {phase}; start it again and re-run ({detail})"
        return f"the engine failed during {phase} ({detail})"
    return f"run failed during {phase}: internal error: {detail}"
