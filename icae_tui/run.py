"""The orchestrator: one run's phases, published as typed events.

prepare (images) → generate (agent in its container, clarifications) → freeze (commit the
agent container as the delivery image) → build (gate) → evaluate (differential cases) →
score. Every event is stored before displays see it; it knows nothing of Textual.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiodocker

from icae_tui.agents.base import AgentError
from icae_tui.agents.registry import make_agent
from icae_tui.bounds import RunBound
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentSubmitted,
    AgentWrote,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    Event,
    PhaseChanged,
    Progress,
    ResponderChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score
from icae_tui.domain.task import Level, Split, Task
from icae_tui.evaluation.differential import (
    ENGINE_TROUBLE,
    EngineLost,
    Evaluator,
    Sides,
    build_error_result,
    raise_if_engine_lost,
)
from icae_tui.evaluation.scoring import score
from icae_tui.evaluation.sides import kill_extras
from icae_tui.report import write_report
from icae_tui.sandbox.containers import (
    Container,
    ExecResult,
    complete_despite_cancel,
    create_container,
    labels_for,
)
from icae_tui.sandbox.engine import EngineUnavailable, connect, is_engine_error
from icae_tui.sandbox.hostview import HostView, process_state
from icae_tui.sandbox.images import ImageBuildError, ensure_task_images, wrapper_script
from icae_tui.sandbox.reaper import reap, reap_ask_folders, remove_run_containers
from icae_tui.store import RunStore
from icae_tui.users.ask_server import icae_ask_script, serving
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.model_user import ModelConfig, ModelUser
from icae_tui.users.responders import Desk, Responder, SimulatedUser

log = logging.getLogger(__name__)

SUBMISSION_CHARS = 64 * 1024  # of the agent's final message: always stored, so bounded
TRACE_CAP_PER_COMMAND = 256 * 1024  # bytes of one command's output shown in the trace
# What an agent command leaves running counts as settled once unchanged this long (a server
# started on purpose); a detached fork bomb changes until it hits the pids limit.
LEFTOVER_SETTLE_S = 0.25
LEFTOVER_PATIENCE_S = 5.0

Subscriber = Callable[[Event], None]


@dataclass
class RunConfig:
    task: Task
    agent: str = "scripted:good"
    level: Level = Level.L1
    responder: str = "simulated"  # the desk's first mode: simulated, human or assisted
    user_model: ModelConfig | None = None  # the automatic user: a model instead of matching
    # Host environment variables an agent's commands may see (e.g. its model key): passed
    # per exec, never set on the container, so `docker inspect` and the delivery don't hold them.
    secret_env: tuple[str, ...] = ()
    budget: int | None = None  # questions for this run; None: the task's for the level
    pace_s: float | None = None
    concurrency: int | None = None  # None: sized to the machine
    splits: tuple[Split, ...] = (Split.PUBLIC, Split.HIDDEN, Split.ENHANCED)

    def __post_init__(self) -> None:
        """Options from any display are checked here, once, with the option's name."""
        if self.budget is not None and self.budget < 0:
            raise ValueError(f"budget must be 0 or more, not {self.budget}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.pace_s is not None and self.pace_s < 0:
            raise ValueError(f"pace must be 0 s or more, not {self.pace_s}")
        if self.responder not in ("simulated", "human", "assisted"):
            raise ValueError(f"responder must be simulated, human or assisted: {self.responder!r}")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass
class RunOutcome:
    run_id: str
    status: str
    score: Score | None
    error: str = ""
    report_path: Path | None = None
    results: list[CaseResult] = field(default_factory=list)


class Run:
    def __init__(self, config: RunConfig, store: RunStore) -> None:
        self.config = config
        self.store = store
        self.run_id = new_run_id()
        self.desk = Desk(self._auto_responder(), config.responder)
        self._running = False  # between RunStarted and RunFinished: switches are recorded
        self._phase = "start"
        self._background: set[asyncio.Task[None]] = set()
        self._subscribers: list[Subscriber] = []
        self._seq = 0
        self._events: list[Event] = []
        self._bound = RunBound()  # what this run may store (icae_tui.bounds)
        self.leftovers_removed: list[str] = []  # found by the final sweep: a cleanup bug if any

    # --- events -----------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.append(callback)

    async def emit(self, event: Event) -> None:
        """Store the event, then show it. Past the run's bound (icae_tui.bounds) low-value
        events are only counted: one EventsDropped says so at the first, one more gives the
        totals just before RunFinished. Displays see exactly what is stored."""
        if isinstance(event, PhaseChanged):
            self._phase = event.phase
        if isinstance(event, RunFinished) and self._bound.dropped:
            self._publish(self._bound.summary(final=True))
        if not self._publish(event) and self._bound.dropped == 1:
            self._publish(self._bound.summary())

    def _publish(self, event: Event) -> bool:
        """False when the bound drops the event (it then takes no sequence number)."""
        event.run_id, event.seq, event.ts = self.run_id, self._seq + 1, time.time()
        payload = event.model_dump_json()
        if not self._bound.admit(event, len(payload.encode())):
            return False
        self._seq += 1
        self.store.append(event, payload)  # stored before anyone sees it: nothing is lost
        self._events.append(event)
        for callback in self._subscribers:
            try:
                callback(event)
            except Exception:  # a broken display must not break the run, nor scribble on it
                log.exception("event subscriber %r failed on %s", callback, type(event).__name__)
        return True

    # --- commands from displays ---------------------------------------------------------

    def answer(self, question_id: int, text: str) -> bool:
        """The operator's answer to a waiting question (human and assisted modes)."""
        return self.desk.answer(question_id, text)

    def set_responder(self, mode: str) -> bool:
        """Switch who answers, at any moment of the run; a waiting question follows the new
        mode. False (and nothing recorded) before the run started or after it finished."""
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
        data = cfg.task.user_agent[cfg.level].oracle_data
        if cfg.user_model is not None:
            return ModelUser(data, cfg.user_model)
        return SimulatedUser(data)

    def _record_ids(self) -> tuple[list[str], list[str]]:
        data = self.config.task.user_agent[self.config.level].oracle_data
        task_records = [r.constraint_id for r in data.hidden_constraints if not r.generic]
        generic = [r.constraint_id for r in data.hidden_constraints if r.generic]
        return task_records, generic

    async def execute(self) -> RunOutcome:
        cfg, task = self.config, self.config.task
        self._close_dead_runs()
        self.store.create_run(
            self.run_id, task.id, cfg.agent, cfg.level.value, cfg.responder, time.time()
        )
        await self.emit(
            RunStarted(
                task_id=task.id,
                task_title=task.spec.title,
                agent=cfg.agent,
                level=cfg.level.value,
                responder=cfg.responder,
                budget=self.budget,
                prd=task.prd[cfg.level],
                task_records=self._record_ids()[0],
                generic_records=self._record_ids()[1],
            )
        )
        self._running = True
        outcome = RunOutcome(self.run_id, "failed", None)
        docker: aiodocker.Docker | None = None
        try:
            agent = make_agent(cfg.agent, task, pace_s=cfg.pace_s)
            docker = await connect()
            await self._sweep(docker)
            outcome = await self._phases(docker, agent)
        except asyncio.CancelledError:
            outcome = RunOutcome(self.run_id, "cancelled", None, "cancelled by the operator")
            await asyncio.shield(self._finish(outcome))
            raise
        except (AgentError, EngineUnavailable, ImageBuildError) as err:
            outcome = RunOutcome(self.run_id, "failed", None, str(err))
        except Exception as err:
            message = await _explain_failure(err, self._phase)
            outcome = RunOutcome(self.run_id, "failed", None, message)
        finally:
            if docker is not None:
                await self._remove_leftovers(docker)
                with contextlib.suppress(Exception):
                    await asyncio.shield(docker.close())
        await self._finish(outcome)
        return outcome

    def _close_dead_runs(self) -> None:
        """What dead runs left outside the engine: `running` rows and socket folders."""
        for run_id in self.store.mark_interrupted():
            log.info("run %s: owner gone, marked interrupted", run_id)
        for folder in reap_ask_folders():
            log.info("removed orphaned clarification folder %s", folder)

    async def _remove_leftovers(self, docker: aiodocker.Docker) -> None:
        """Whatever still carries this run's label goes, even on cancel or a failed phase."""
        try:
            removed = await complete_despite_cancel(remove_run_containers(docker, self.run_id))
            self.leftovers_removed = removed
        except Exception as err:  # the engine may be gone: the reaper will get them later
            log.warning("run %s: could not check for leftover containers: %s", self.run_id, err)
            return
        if removed:
            log.warning("run %s: removed %d leftover container(s)", self.run_id, len(removed))

    async def _sweep(self, docker: aiodocker.Docker) -> None:
        """Start-up sweep: what crashed runs left behind (ours, dead or expired) goes."""
        swept = await reap(docker)
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
        report_path = self.store.artifacts_dir / self.run_id / "report.json"
        outcome.report_path = report_path
        await self.emit(
            RunFinished(
                status=outcome.status,  # type: ignore[arg-type]
                score=outcome.score,
                error=outcome.error,
                report_path=str(report_path),
            )
        )
        write_report(self._events, report_path)
        overall = outcome.score.overall if outcome.score else None
        self.store.finish_run(self.run_id, outcome.status, time.time(), overall, outcome.error)

    async def _phases(self, docker: aiodocker.Docker, agent) -> RunOutcome:  # noqa: ANN001
        cfg, task = self.config, self.config.task

        await self.emit(PhaseChanged(phase="prepare", detail="images"))
        loop = asyncio.get_running_loop()

        def progress(message: str) -> None:
            loop.create_task(self.emit(Progress(message=message)))

        images = await ensure_task_images(docker, task, progress)
        await asyncio.sleep(0)  # let queued progress events land in order

        await self.emit(PhaseChanged(phase="generate", detail=agent.name))
        delivery_image = f"icae-delivery-{task.id}:{self.run_id}"
        async with (
            ClarificationChannel(self.desk, self.budget, self.emit) as channel,
            serving(channel, task.id) as ask_server,  # closed first: then the final count
        ):
            agent_box = await create_container(
                docker, images.agent, run_id=self.run_id, role="agent",
                workdir=task.spec.delivery.workspace, binds=[ask_server.bind],
            )  # fmt: skip
            try:
                await agent_box.put_files(
                    {"/usr/local/bin/icae-ask": icae_ask_script()}, mode=0o755
                )
                session = _AgentSession(self, agent_box, task.spec.delivery.workspace, channel)
                final = await agent.build(task.prd[cfg.level], session)
                await self.emit(AgentSubmitted(message=final[:SUBMISSION_CHARS]))

                await self.emit(PhaseChanged(phase="freeze", detail=delivery_image))
                await agent_box.exec(["rm", "-f", "/usr/local/bin/icae-ask"])
                wrapper = wrapper_script(task.spec.delivery.entry)
                await agent_box.put_files(
                    {f"/usr/local/bin/{task.spec.interface.tool}": wrapper}, mode=0o755
                )
                repo, tag = delivery_image.split(":", 1)
                labels = labels_for(self.run_id, "delivery", ttl_s=24 * 3600)
                committing = agent_box.commit(repo, tag, labels)
                try:  # the engine finishes a commit it started: so does the cleanup
                    await complete_despite_cancel(committing)
                except BaseException:
                    await self._remove_image(docker, delivery_image)
                    raise
            finally:
                await agent_box.remove()

        try:
            return await self._judge(docker, images.oracle, delivery_image)
        finally:
            await self._remove_image(docker, delivery_image)

    @staticmethod
    async def _remove_image(docker: aiodocker.Docker, image: str) -> None:
        async def delete() -> None:
            with contextlib.suppress(aiodocker.DockerError):
                await docker.images.delete(image, force=True)

        await complete_despite_cancel(delete())

    async def _judge(
        self, docker: aiodocker.Docker, oracle_image: str, delivery_image: str
    ) -> RunOutcome:
        cfg, task = self.config, self.config.task
        refs = task.cases_in(*cfg.splits)
        await self.emit(PhaseChanged(phase="build", detail=task.spec.delivery.build))
        build = await self._build_gate(docker, delivery_image)
        await self.emit(
            CasesPlanned(
                case_ids=[r.id for r in refs],
                patterns=[r.pattern for r in refs],
                splits=[r.split.value for r in refs],
            )
        )
        results: list[CaseResult] = []
        if not build.ok:
            for ref in refs:
                result = build_error_result(task, ref, build.reason)
                results.append(result)
                await self.emit(CaseFinished(result=result))
            final = score(results, planned=len(refs), build_ok=False)
            final.overall = final.macro = 0.0
            await self.emit(ScoreUpdated(score=final))
            return RunOutcome(self.run_id, "completed", final, results=results)

        await self.emit(PhaseChanged(phase="evaluate", detail=f"{len(refs)} cases"))
        sides = Sides(oracle_image=oracle_image, delivery_image=delivery_image)
        async with (
            Evaluator(docker, task, sides, run_id=self.run_id, concurrency=cfg.concurrency) as ev,
            # closed here, not whenever it is collected: on any error (EngineLost, a failed
            # emit) its pending cases are cancelled and awaited before the pools close
            contextlib.aclosing(ev.run_cases(refs)) as cases,
        ):
            async for result in cases:
                results.append(result)
                await self.emit(CaseFinished(result=result))
                await self.emit(ScoreUpdated(score=score(results, planned=len(refs))))
        await self.emit(PhaseChanged(phase="score"))
        final = score(results, planned=len(refs))
        return RunOutcome(self.run_id, "completed", final, results=results)

    async def _build_gate(self, docker: aiodocker.Docker, image: str) -> BuildChecked:
        spec = self.config.task.spec.delivery
        res: ExecResult | None = None
        refused = ""
        for _ in range(2):  # a gate the engine refused is tried once more, in a new container
            try:
                box = await create_container(docker, image, run_id=self.run_id, role="build")
                try:
                    res = await box.exec(spec.build, workdir=spec.workspace, timeout_s=300)
                finally:
                    await asyncio.shield(box.remove())
                break
            except ENGINE_TROUBLE as err:  # a bug of ours is no refusal: it fails the run
                await raise_if_engine_lost(err)
                refused = f"{type(err).__name__}: {err}"[:300]
        if res is None:  # refused twice: the delivery (its image, its build) failed the gate
            reason = f"the engine could not run the build gate: {refused}"
            event = BuildChecked(ok=False, exit_code=None, reason=reason)
            await self.emit(event)
            return event
        out = res.stdout.decode(errors="replace")[-4000:]
        err = res.stderr.decode(errors="replace")[-4000:]
        ok = res.exit_code == 0 and not res.timed_out
        if ok:
            reason = "build passed"
        elif res.timed_out:
            reason = "build gate timed out"
        else:
            last = (err.strip() or out.strip() or "no output").splitlines()[-1][:200]
            reason = f"build failed (exit {res.exit_code}): {last}"
        event = BuildChecked(ok=ok, exit_code=res.exit_code, reason=reason, stdout=out, stderr=err)
        await self.emit(event)
        return event


async def _explain_failure(err: Exception, phase: str) -> str:
    """One line a person can act on: was it the engine, a container, or our own bug?"""
    detail = f"{type(err).__name__}: {err}"
    if isinstance(err, EngineLost):  # the evaluator already probed: no second guess
        return f"Docker engine lost during {phase}; start it again and re-run ({err})"
    if is_engine_error(err) or isinstance(err, aiodocker.DockerError):
        try:
            probe = await connect(timeout_s=3)
            await probe.close()
        except EngineUnavailable:
            return f"Docker engine lost during {phase}; start it again and re-run ({detail})"
        if isinstance(err, aiodocker.DockerError):
            return f"Docker refused an operation during {phase} ({detail})"
    return f"run failed during {phase}: {detail}"


class _AgentSession:
    """AgentContext for agents driven from the host: every action becomes an event."""

    def __init__(self, run: Run, box: Container, workspace: str, channel: ClarificationChannel):
        self._run = run
        self.box = box
        self.workspace = workspace
        self.channel = channel
        self._view: HostView | None = None
        self._probed = False

    async def _host_view(self) -> HostView | None:
        """The agent container's cgroups, seen from the host (None with a remote engine)."""
        if not self._probed:
            self._probed = True
            with contextlib.suppress(aiodocker.DockerError):
                self._view = HostView.probe(await self.box.raw.show())
        return self._view

    async def _aftermath(
        self, view: HostView, before: set[int], hits: int
    ) -> tuple[bool, int, bool]:
        """Whether a command hit the pids limit, how many processes it left running, and
        whether those were killed.

        A detached fork bomb reaches the limit only after its command returned, so what it
        left is watched until it hits the limit, ends, or stays unchanged for a moment.
        At the limit no further step could start (the engine's exec fails with 125), so what
        the command left is killed from the host; processes of earlier steps are kept.
        Below the limit nothing is killed: an agent may start a server on purpose."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEFTOVER_PATIENCE_S
        alive, since = _alive(view, before), loop.time()
        while alive and view.pids_limit_hits() == hits:
            if loop.time() - since >= LEFTOVER_SETTLE_S or loop.time() > deadline:
                break
            await asyncio.sleep(0.02)  # the watch's poll interval
            now = _alive(view, before)
            if now != alive:
                alive, since = now, loop.time()
        capped = view.pids_limit_hits() > hits
        left = len(_alive(view, before)) if capped else len(alive)
        killed = False
        if capped and left:
            killed = await asyncio.to_thread(kill_extras, view, before)
        return capped, left, killed

    async def say(self, text: str) -> None:
        await self._run.emit(AgentSaid(text=text))

    async def ask(self, question: str) -> str:
        answer = await self.channel.ask(question)
        return f"{answer.text}\n[{answer.remaining} question(s) left]"

    async def write(self, path: str, content: str, mode: int = 0o644) -> None:
        data = content.encode()
        await self.box.put_files({path: data}, mode=mode)
        await self._run.emit(AgentWrote(path=path, size=len(data)))

    async def run(self, command: str, timeout_s: float = 60.0) -> ExecResult:
        await self._run.emit(AgentCommand(command=command))
        decoders = {
            s: codecs.getincrementaldecoder("utf-8")("replace") for s in ("stdout", "stderr")
        }
        shown = 0

        async def on_output(stream: str, chunk: bytes) -> None:
            nonlocal shown
            if shown >= TRACE_CAP_PER_COMMAND:
                return
            chunk = chunk[: TRACE_CAP_PER_COMMAND - shown]
            shown += len(chunk)
            text = decoders[stream].decode(chunk)
            if shown >= TRACE_CAP_PER_COMMAND:
                text += "\n[… output truncated in the trace …]\n"
            if text:
                await self._run.emit(AgentOutput(stream=stream, text=text))  # type: ignore[arg-type]

        secrets = {k: os.environ[k] for k in self._run.config.secret_env if k in os.environ}
        view = await self._host_view()
        before = (view.procs() or set()) if view else set()
        hits = view.pids_limit_hits() if view else 0
        res = await self.box.exec(
            command, timeout_s=timeout_s, workdir=self.workspace, on_output=on_output, env=secrets
        )
        capped, left, killed = (
            await self._aftermath(view, before, hits) if view else (False, 0, False)
        )
        await self._run.emit(
            AgentCommandDone(
                command=command,
                exit_code=res.exit_code,
                duration_s=round(res.duration_s, 3),
                timed_out=res.timed_out,
                pids_capped=capped,
                left_running=left,
                killed_left=killed,
            )
        )
        return res


def _alive(view: HostView, keep: set[int]) -> frozenset[int]:
    """Processes in the container's cgroup, other than `keep`, that are not exiting."""
    procs = (view.procs() or set()) - keep
    return frozenset(p for p in procs if process_state(p) not in ("Z", "X", ""))
