"""The head's side of a cluster run, against a node played in this process (an object with
the actor's methods; `call` awaits them): events stored as the node numbered them, once each;
answers only for questions that wait; a node lost mid-run ends the run here, failed for
infrastructure, after what had arrived. And the folders that travel: only directories and
regular files, nothing unpacked outside its folder."""

from __future__ import annotations

import asyncio
import io
import tarfile
from typing import Any

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.cluster.mirror import NodeHandle, NodeLost, NodeRun
from icae_tui.cluster.shipping import ShippingError, pack, unpack
from icae_tui.domain.events import (
    Event,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    RunFinished,
    RunStarted,
)
from icae_tui.domain.states import FailureKind, Phase, ResponderMode, RunStatus
from icae_tui.runs.config import RunConfig
from icae_tui.store.database import RunStore
from tests.conftest import FIXTURE_TASKS


class _Method:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        return self.fn(*args)  # a coroutine: what `call` awaits


class PlayedNode:
    """The node's actor, played: `script` is what each poll answers (event lists), then
    `lost` (NodeLost) or the end."""

    def __init__(self, run_id_box: list[str], script: list[list[Event]], *, lost: bool = False):
        self.run_id_box, self.script, self.lost = run_id_box, script, lost
        self.answers: list[tuple[int, str]] = []
        self.polls = 0
        self.more = asyncio.Event()
        self.seen: list[Event] = []
        for name in ("start", "events", "finish", "answer", "set_responder", "pause",
                     "resume", "cancel"):  # fmt: skip
            setattr(self, name, _Method(getattr(self, "_" + name)))

    async def _start(self, run_id: str, options: dict[str, Any]) -> None:
        self.run_id_box.append(run_id)

    async def _events(self, run_id: str, after: int) -> list[str]:
        self.polls += 1
        if not self.script:
            if self.lost:
                raise NodeLost("the actor died unexpectedly")
            await self.more.wait()  # nothing until cancelled
        batch = self.script.pop(0)
        self.seen += batch
        out = []
        for ev in batch:
            ev.run_id = run_id
            out.append(ev.model_dump_json())
        return out

    async def _finish(self, run_id: str) -> dict[str, Any]:
        return {"artifacts": pack_of({"agent.log": b"built\n"}), "leftovers": []}

    async def _answer(self, run_id: str, question_id: int, text: str) -> bool:
        self.answers.append((question_id, text))
        return True

    async def _set_responder(self, run_id: str, mode: str) -> bool:
        return True

    async def _pause(self, run_id: str) -> bool:
        return True

    _resume = _pause

    async def _cancel(self, run_id: str) -> bool:
        """As a node's run does: it says it ended, cancelled."""
        seq = len(self.seen) + 1
        self.script.append(_numbered(RunFinished(status=RunStatus.CANCELLED), start=seq))
        self.more.set()
        return True


def pack_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def _call(awaitable: Any) -> Any:
    return await awaitable


def _numbered(*events: Event, start: int = 1) -> list[Event]:
    for i, ev in enumerate(events, start):
        ev.seq, ev.ts = i, 1000.0 + i
    return list(events)


def _started() -> RunStarted:
    return RunStarted(task_id="mini", task_title="t", agent="scripted:good", level="L1",
                      responder=ResponderMode.HUMAN, budget=3, prd="p")  # fmt: skip


@pytest.fixture
def config() -> RunConfig:
    task = load_catalog(FIXTURE_TASKS).tasks["mini"]
    return RunConfig(task=task, responder=ResponderMode.HUMAN)


async def test_events_are_stored_as_numbered_once_each_and_the_report_is_made_here(
    config, tmp_path
):
    store = RunStore(tmp_path / "runs.db")
    first = _numbered(_started(), PhaseChanged(phase=Phase.GENERATE),
                      QuestionAsked(question_id=1, text="which?", remaining_before=3))  # fmt: skip
    again = first[1:]  # a poll answered twice: nothing twice
    rest = _numbered(QuestionAnswered(question_id=1, text="this"),
                     RunFinished(status=RunStatus.COMPLETED, report_path="/node/report.json"),
                     start=4)  # fmt: skip
    node = PlayedNode([], [first, again, rest])
    run = NodeRun(config, store, NodeHandle("ray:n1", node, _call))
    seen: list[Event] = []
    run.subscribe(seen.append)
    outcome = await run.execute()
    stored = store.events(run.run_id)
    assert [ev.seq for ev in stored] == [1, 2, 3, 4, 5] == [ev.seq for ev in seen]
    assert [ev.ts for ev in stored] == [1001.0, 1002.0, 1003.0, 1004.0, 1005.0]
    assert outcome.status is RunStatus.COMPLETED
    report = store.artifacts_dir / run.run_id / "report.json"
    assert stored[-1].report_path == str(report) and report.is_file()  # type: ignore[attr-defined]
    assert (store.artifacts_dir / run.run_id / "agent.log").read_bytes() == b"built\n"
    row = store.run(run.run_id)
    assert row is not None and row.status == RunStatus.COMPLETED
    store.close()


async def test_a_lost_node_ends_the_run_here_failed_for_infrastructure(config, tmp_path):
    store = RunStore(tmp_path / "runs.db")
    asked = _numbered(_started(), QuestionAsked(question_id=1, text="?", remaining_before=3))
    node = PlayedNode([], [asked], lost=True)
    run = NodeRun(config, store, NodeHandle("ray:n2", node, _call))
    outcome = await run.execute()
    stored = store.events(run.run_id)
    assert [ev.seq for ev in stored] == [1, 2, 3]
    last = stored[-1]
    assert isinstance(last, RunFinished) and last.status is RunStatus.FAILED
    assert last.failure is FailureKind.INFRASTRUCTURE and "ray:n2 lost" in last.error
    assert outcome.failure is FailureKind.INFRASTRUCTURE
    row = store.run(run.run_id)
    assert row is not None and row.failure == FailureKind.INFRASTRUCTURE
    assert not run.answer(1, "too late")  # the run is over
    store.close()


async def test_answers_go_to_the_node_only_for_a_waiting_question(config, tmp_path):
    store = RunStore(tmp_path / "runs.db")
    asked = _numbered(_started(), QuestionAsked(question_id=7, text="?", remaining_before=3))
    node = PlayedNode([], [asked])  # then the node waits: the run is live
    run = NodeRun(config, store, NodeHandle("ray:n1", node, _call))
    waiting = asyncio.Event()
    run.subscribe(lambda ev: waiting.set() if isinstance(ev, QuestionAsked) else None)
    job = asyncio.ensure_future(run.execute())
    await waiting.wait()
    assert not run.answer(8, "no such question")
    assert run.answer(7, "yes")
    assert not run.set_responder("human")  # already
    assert run.set_responder("simulated")
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert node.answers == [(7, "yes")]
    last = store.events(run.run_id)[-1]  # cancelled there, followed to its end here
    assert isinstance(last, RunFinished) and last.status is RunStatus.CANCELLED and last.seq == 3
    store.close()


def test_only_directories_and_regular_files_travel(tmp_path):
    folder = tmp_path / "task"
    (folder / "cases").mkdir(parents=True)
    (folder / "cases" / "a.json").write_text("{}")
    (folder / "link").symlink_to("/etc/passwd")
    (folder / "report.json").write_text("{}")
    data = pack(folder, skip=frozenset({"report.json"}))
    out = tmp_path / "out"
    assert unpack(data, out) == []
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["cases", "cases/a.json"]


def test_an_archive_cannot_write_outside_its_folder_nor_make_links(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in ("../escape", "/abs", "ok.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
        link = tarfile.TarInfo("evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc"
        tar.addfile(link)
    out = tmp_path / "out"
    assert sorted(unpack(buffer.getvalue(), out)) == ["../escape", "/abs", "evil"]
    assert [p.name for p in out.iterdir()] == ["ok.txt"]
    assert not (tmp_path / "escape").exists()


def test_a_folder_over_the_limit_is_refused(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 100)
    with pytest.raises(ShippingError):
        pack(tmp_path, limit=50)
    with pytest.raises(ShippingError):
        unpack(pack_of({"a": b"x" * 100}), tmp_path / "out", limit=50)

