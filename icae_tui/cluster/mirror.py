"""A run on a cluster node, seen from the head: `NodeRun` looks like a live `Run` to the batch
and the console (subscribe, answer, responder, pause, cancel, execute), while the work
happens in the node's actor (cluster/node.py).

Its events come back as the node stores them (a long poll) and go into the head's store
before any display sees them, exactly as the node numbered them — the head's store holds
every event of every run, the console shows remote runs live, and the operator's answers go
back to the node. When the run ends, its artifacts come back and the head writes the report
from what it stored. A node lost mid-run (its actor gone) ends the run on the head as failed
for infrastructure, after the events that had arrived: the batch retries it elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icae_tui.cluster.shipping import ShippingError, unpack
from icae_tui.display.feed import Deliver
from icae_tui.domain.events import (
    Event,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
    RunFinished,
    RunStarted,
    parse_event,
)
from icae_tui.domain.states import FailureKind, ResponderMode, RunStatus
from icae_tui.runs.config import RunConfig
from icae_tui.runs.log import RunLog
from icae_tui.runs.run import RunOutcome, new_run_id
from icae_tui.store.database import RunStore

log = logging.getLogger(__name__)

CANCEL_PATIENCE_S = 120.0  # for a cancelled run to say it ended (and remove its boxes)


class NodeLost(Exception):
    """The node's actor is gone (the node died, or its process)."""


@dataclass(frozen=True)
class NodeHandle:
    """One node's actor, and how its calls fail: `call` awaits a remote call, turning the
    loss of the node into NodeLost (cluster/ray_pool.py)."""

    name: str
    actor: Any  # a Ray actor handle
    call: Callable[[Any], Awaitable[Any]]


class NodeRun:
    def __init__(
        self, config: RunConfig, store: RunStore, node: NodeHandle, *,
        cases_at_once: int | None = None,
    ) -> None:  # fmt: skip
        """`cases_at_once`: the spec's, when it set one (else the node sizes it to its cores)."""
        self.config = config
        self.store = store
        self.node = node
        self.cases_at_once = cases_at_once
        self.run_id = new_run_id()
        self.log = RunLog(self.run_id, store)
        self.leftovers_removed: list[str] = []
        self._mode = ResponderMode(config.responder)
        self._running = False
        self._waiting: set[int] = set()  # questions asked, not yet answered
        self._sent: set[asyncio.Task[Any]] = set()

    # --- what displays see and do -------------------------------------------------------

    def subscribe(self, display: Deliver) -> None:
        self.log.subscribe(display)

    def answer(self, question_id: int, text: str) -> bool:
        """Sent to the node; True when the question waits (its answer comes back as an
        event, like any answer)."""
        if not self._running or question_id not in self._waiting:
            return False
        self._send(self.node.actor.answer.remote(self.run_id, question_id, text))
        return True

    def set_responder(self, mode: str) -> bool:
        new = ResponderMode(mode)
        if not self._running or new == self._mode:
            return False
        self._mode = new
        self._send(self.node.actor.set_responder.remote(self.run_id, str(new)))
        return True

    async def pause(self) -> bool:
        return await self._ask(self.node.actor.pause.remote(self.run_id))

    async def resume(self) -> bool:
        return await self._ask(self.node.actor.resume.remote(self.run_id))

    async def _ask(self, ref: Any) -> bool:
        try:
            return bool(await self.node.call(ref))
        except NodeLost:
            return False

    def _send(self, ref: Any) -> None:
        async def sent() -> None:
            with contextlib.suppress(NodeLost):
                await self.node.call(ref)

        job = asyncio.get_running_loop().create_task(sent())
        self._sent.add(job)
        job.add_done_callback(self._sent.discard)

    # --- the run ------------------------------------------------------------------------

    def _options(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "task_id": cfg.task.id, "agent": cfg.agent, "level": cfg.level.value,
            "responder": str(cfg.responder), "budget": cfg.budget,
            "cases_at_once": self.cases_at_once,
        }  # fmt: skip

    async def execute(self) -> RunOutcome:
        cfg = self.config
        self.store.create_run(self.run_id, cfg.task.id, cfg.agent, cfg.level.value,
                              cfg.responder, time.time())  # fmt: skip
        self._running = True
        try:
            await self.node.call(self.node.actor.start.remote(self.run_id, self._options()))
            finished = await self._follow()
        except asyncio.CancelledError:
            await asyncio.shield(self._cancelled())
            raise
        except NodeLost as err:
            finished = self._lost(str(err))
        finally:
            self._running = False
        return self._outcome(finished)

    async def _follow(self) -> RunFinished:
        """Every event of the run into the head's store, in order, until its RunFinished —
        stored once its artifacts are here, pointing at the head's report."""
        while True:
            ref = self.node.actor.events.remote(self.run_id, self.log.last_seq)
            for payload in await self.node.call(ref):
                event = parse_event(payload)
                if event.seq <= self.log.last_seq:
                    continue  # already here (a poll answered twice)
                if isinstance(event, RunFinished):
                    await self._artifacts()
                    event.report_path = str(self.log.report_path)
                    self._keep(event, event.model_dump_json())
                    return event
                self._keep(event, payload)

    def _keep(self, event: Event, payload: str) -> None:
        self._note(event)
        self.log.mirror(event, payload)
        if isinstance(event, RunFinished):
            self._end(event)

    def _note(self, event: Event) -> None:
        """What commands need to know: the questions waiting, who answers."""
        if isinstance(event, QuestionAsked):
            self._waiting.add(event.question_id)
        elif isinstance(event, QuestionAnswered):
            self._waiting.discard(event.question_id)
        elif isinstance(event, RunStarted):
            self._mode = ResponderMode(event.responder)
        elif isinstance(event, ResponderChanged):
            self._mode = ResponderMode(event.mode)

    async def _artifacts(self) -> None:
        answer = await self.node.call(self.node.actor.finish.remote(self.run_id))
        self.leftovers_removed = list(answer.get("leftovers", []))
        data = answer.get("artifacts", b"")
        if not data:
            return
        folder = self.store.artifacts_dir / self.run_id
        try:
            skipped = unpack(data, folder)
        except ShippingError as err:
            log.warning("run %s: artifacts from %s not kept: %s", self.run_id, self.node.name, err)
            return
        if skipped:
            log.warning("run %s: left out of its artifacts: %s", self.run_id, ", ".join(skipped))

    def _end(self, finished: RunFinished) -> None:
        """The head's report and row, from what it stored."""
        self.log.write_report()
        score = finished.score
        overall = score.overall if score is not None and score.measured else None
        self.store.finish_run(self.run_id, finished.status, time.time(), overall,
                              finished.error, finished.failure)  # fmt: skip

    def _lost(self, why: str) -> RunFinished:
        """The node is gone: the run ends here, failed for infrastructure."""
        return self._end_here(RunStatus.FAILED, f"node {self.node.name} lost mid-run: {why}",
                              FailureKind.INFRASTRUCTURE)  # fmt: skip

    def _end_here(
        self, status: RunStatus, error: str, failure: FailureKind | None = None
    ) -> RunFinished:
        """A RunFinished the node could not send, numbered after what arrived."""
        finished = RunFinished(status=status, error=error, failure=failure,
                               report_path=str(self.log.report_path))  # fmt: skip
        finished.run_id, finished.seq, finished.ts = self.run_id, self.log.last_seq + 1, time.time()
        self._keep(finished, finished.model_dump_json())
        return finished

    async def _cancelled(self) -> None:
        """Cancelled here: cancelled there, then followed to its end (it removes its boxes);
        a node that does not say so in time, or is gone, ends it here."""
        try:
            await self.node.call(self.node.actor.cancel.remote(self.run_id))
            await asyncio.wait_for(self._follow(), CANCEL_PATIENCE_S)
        except (NodeLost, TimeoutError) as err:
            if not any(isinstance(ev, RunFinished) for ev in self.log.events):
                self._end_here(RunStatus.CANCELLED,
                               f"cancelled by the operator ({err or 'no answer from the node'})")  # fmt: skip

    def _outcome(self, finished: RunFinished) -> RunOutcome:
        return RunOutcome(self.run_id, finished.status, finished.score, finished.error,
                          report_path=Path(finished.report_path), failure=finished.failure)  # fmt: skip
